//! `kiln conformance`: the ONNX backend node tests through the whole pipeline, and the hidden
//! `kiln conformance-case DIR` that runs one case for it in a child process.

use crate::conformance::children::{self, Children};
use crate::conformance::{self, case, report, CaseResult, Outcome, Suite};
use anyhow::{bail, Context, Result};
use kiln_runners::{Runner, RunnerOptions};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct Args {
    /// The suite: the ONNX backend node tests, or the TFLite suite of `tests/tflite-suite`.
    #[arg(long, value_enum, default_value = "onnx")]
    suite: Suite,
    /// Where to run: `host` (the system C compiler), a board with a batch binary (emulated:
    /// `qemu-an386`; real, through its debug probe: `nrf52840-dk`, `stm32f411-nucleo`,
    /// `rp2040-pico`), or an edge-GPU interface on this machine's device (`opencl`, `vulkan`):
    /// the cases that pass on the host run there again (on a board many to an image, on a GPU
    /// each in its own process) and count as it gives them.
    #[arg(long, default_value = "host")]
    board: String,
    /// How an emulated board's batches travel: `files` (semihosting files, the default) or
    /// `rtt` (one test-vector session per case over RTT, through QEMU's gdbstub: the path of a
    /// real board).
    #[arg(long)]
    io: Option<String>,
    /// A real board: the serial number of its debug probe. Given several times, one board per
    /// probe, the cases shared between them; without it, the only probe attached.
    #[arg(long, value_name = "SERIAL")]
    probe: Vec<String>,
    /// Runs only the cases whose name matches this regular expression.
    #[arg(long)]
    filter: Option<String>,
    /// Cases run at once (default: the number of CPUs).
    #[arg(long)]
    jobs: Option<usize>,
    /// Seconds one case may take before it counts as a hang.
    #[arg(long, default_value_t = 60)]
    timeout: u64,
    /// The folder of cases (default for ONNX: `$KILN_ONNX_NODE_TESTS`, else the `onnx`
    /// package's in `.venv`; for TFLite: `tests/tflite-suite`).
    #[arg(long)]
    cases: Option<PathBuf>,
    /// The expected-pass list (default: `tests/conformance/<board>.pass`, for the TFLite suite
    /// `tests/conformance/tflite-<board>.pass`).
    #[arg(long)]
    pass_list: Option<PathBuf>,
    /// Runs only the cases on the expected-pass list.
    #[arg(long)]
    listed: bool,
    /// Adds the cases that pass now to the expected-pass list.
    #[arg(long)]
    update: bool,
    /// Prints the per-op table as Markdown.
    #[arg(long)]
    markdown: bool,
    /// Rewrites the section of `docs/conformance.md` between the conformance markers with the table.
    #[arg(long)]
    docs: bool,
    /// Lists every failing case with its detail.
    #[arg(short, long)]
    verbose: bool,
}

#[derive(clap::Args)]
pub struct CaseArgs {
    /// The case folder (with `model.onnx` and `test_data_set_0`).
    dir: PathBuf,
    /// Where it runs: `host`, or an edge-GPU interface on this machine's device (`opencl`,
    /// `vulkan`).
    #[arg(long, default_value = "host")]
    board: String,
}

/// Runs one case and prints its outcome line; exit code 0 whatever the outcome.
pub fn run_case(a: CaseArgs) -> Result<ExitCode> {
    let outcome = case::run_case(&a.dir, &a.board);
    if let Outcome::Fail { detail, .. } = &outcome {
        eprintln!("{detail}");
    }
    println!("{}", children::encode(&outcome));
    Ok(ExitCode::SUCCESS)
}

/// Runs the cases that passed on the host again on `place`, all in this process (a board
/// links many into one image), and replaces their outcomes with the place's.
fn run_batched(
    place: &mut dyn Runner,
    cases: &Path,
    results: &mut [CaseResult],
    jobs: usize,
) -> Result<()> {
    // The cases passed on the host, so they compile here too: in this process, `jobs` at once.
    let passed: Vec<usize> = (0..results.len())
        .filter(|&i| results[i].outcome == Outcome::Pass)
        .collect();
    let target = place.target();
    let compiled = children::parallel_map(&passed, jobs, |&index| {
        case::prepare(&cases.join(&results[index].name), &target)
    });
    let mut prepared = Vec::with_capacity(compiled.len());
    for (&index, p) in passed.iter().zip(compiled) {
        match p {
            Ok(p) => prepared.push((index, p)),
            Err(outcome) => bail!(
                "{} passed on the host but now gives {outcome:?}",
                results[index].name
            ),
        }
    }
    let batch: Vec<kiln_runners::Case> = prepared.iter().map(|(_, p)| p.as_case()).collect();
    let bar = indicatif::ProgressBar::new(batch.len() as u64);
    let started = Instant::now();
    let outcomes = place.run_cases(&batch, &mut |done, _| bar.set_position(done as u64))?;
    bar.finish_and_clear();
    eprintln!(
        "{} cases on {} in {:.1} s",
        batch.len(),
        place.name(),
        started.elapsed().as_secs_f64()
    );
    for ((index, p), got) in prepared.iter().zip(outcomes) {
        results[*index].outcome = there(place.name(), case::outcome_of(p, got));
    }
    Ok(())
}

/// An outcome on another place than the host, its reasons named after the place.
fn there(place: &str, outcome: Outcome) -> Outcome {
    match outcome {
        Outcome::Pass => Outcome::Pass,
        Outcome::Skip { reason } => Outcome::Skip {
            reason: format!("{place}: {reason}"),
        },
        Outcome::Fail { reason, detail } => Outcome::Fail {
            reason: format!("{place}: {reason}"),
            detail,
        },
    }
}

/// The runner `--board` names, with `--io` and `--probe`, checked before any case runs (a
/// board's probes attached, a GPU interface's device present).
fn place_of(a: &Args) -> Result<Box<dyn Runner>> {
    let options = RunnerOptions::for_place(&a.board, a.io.as_deref(), &a.probe)?;
    let place = kiln_runners::by_name(&a.board, &options)?;
    place.ready()?;
    Ok(place)
}

pub fn run(a: Args) -> Result<ExitCode> {
    let mut place = place_of(&a)?;
    let root = conformance::repo_root();
    let cases = match &a.cases {
        Some(c) => c.clone(),
        None => a.suite.cases_dir(&root).map_err(anyhow::Error::msg)?,
    };
    let pass_path = a
        .pass_list
        .clone()
        .unwrap_or_else(|| a.suite.pass_list(&root, &a.board));
    let listed: BTreeSet<String> = match std::fs::read_to_string(&pass_path) {
        Ok(text) => report::parse_pass_list(&text).into_iter().collect(),
        Err(_) if !a.listed => BTreeSet::new(),
        Err(e) => bail!("reading {}: {e}", pass_path.display()),
    };
    let names = select_cases(&a, &cases, &listed)?;
    let jobs = a.jobs.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    let started = Instant::now();
    let results = run_cases(&a, place.as_mut(), &cases, &names, jobs)?;
    let elapsed = started.elapsed();
    print_results(&results, a.markdown, a.verbose);
    let regressions = regressions(&results, &listed);
    print_regressions(&regressions, &pass_path);
    update_pass_list(&results, &listed, &pass_path, a.update)?;
    if a.docs {
        update_docs(&root, a.suite, &a.board, (&cases, &results))?;
    }
    eprintln!(
        "{} cases in {:.1} s with {jobs} jobs",
        results.len(),
        elapsed.as_secs_f64()
    );
    println!("{}", report::totals(&results).line());
    Ok(if regressions.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The names of the cases in `cases` that `--filter` (and with `--listed`, the pass list)
/// selects.
fn select_cases(a: &Args, cases: &Path, listed: &BTreeSet<String>) -> Result<Vec<String>> {
    let mut names = conformance::list_cases(cases)
        .with_context(|| format!("listing cases in {}", cases.display()))?;
    if let Some(f) = &a.filter {
        let re = regex::Regex::new(f).with_context(|| format!("--filter {f:?}"))?;
        names.retain(|n| re.is_match(n));
    }
    if a.listed {
        let missing: Vec<&String> = listed.iter().filter(|n| !names.contains(n)).collect();
        if a.filter.is_none() && !missing.is_empty() {
            bail!("listed cases missing from {}: {missing:?}", cases.display());
        }
        names.retain(|n| listed.contains(n));
    }
    Ok(names)
}

/// Runs the cases on the host, a child process each, `jobs` at once; on another place, those
/// that pass there (all of them, for listed cases) then run there: all at once where it
/// batches them, else again a child process each.
fn run_cases(
    a: &Args,
    place: &mut dyn Runner,
    cases: &Path,
    names: &[String],
    jobs: usize,
) -> Result<Vec<CaseResult>> {
    let host = place.name() == "host";
    let children = Children {
        exe: std::env::current_exe().context("finding the kiln executable")?,
        jobs,
        timeout: Duration::from_secs(a.timeout),
        place: "host".into(),
    };
    let bar = indicatif::ProgressBar::new(names.len() as u64);
    let mut results = match a.listed && !host {
        // The listed cases of another place passed on the host: they go there directly.
        true => names
            .iter()
            .map(|n| CaseResult {
                name: n.clone(),
                op: conformance::case_op(cases, n),
                outcome: Outcome::Pass,
            })
            .collect(),
        false => children.run_all(cases, names, &|_r: &CaseResult| bar.inc(1)),
    };
    bar.finish_and_clear();
    if host {
        return Ok(results);
    }
    if place.batches() {
        run_batched(place, cases, &mut results, jobs)?;
    } else {
        let children = Children {
            place: place.name().to_string(),
            ..children
        };
        run_in_children(&children, cases, &mut results);
    }
    Ok(results)
}

/// Runs the cases that passed on the host again on the children's place, each in a child
/// process, and replaces their outcomes with the place's.
fn run_in_children(children: &Children, cases: &Path, results: &mut [CaseResult]) {
    let passed: Vec<String> = results
        .iter()
        .filter(|r| r.outcome == Outcome::Pass)
        .map(|r| r.name.clone())
        .collect();
    let bar = indicatif::ProgressBar::new(passed.len() as u64);
    let started = Instant::now();
    let ran = children.run_all(cases, &passed, &|_r: &CaseResult| bar.inc(1));
    bar.finish_and_clear();
    eprintln!(
        "{} cases on {} in {:.1} s",
        passed.len(),
        children.place,
        started.elapsed().as_secs_f64()
    );
    for r in ran {
        if let Some(slot) = results.iter_mut().find(|s| s.name == r.name) {
            slot.outcome = there(&children.place, r.outcome);
        }
    }
}

/// The per-op table (as Markdown with `markdown`), the skip and failure reasons, and with
/// `verbose` every failing case.
fn print_results(results: &[CaseResult], markdown: bool, verbose: bool) {
    if markdown {
        print!("{}", report::markdown(results));
    } else {
        print!("{}", report::table(results));
    }
    for (title, skips) in [("skip reasons", true), ("failure reasons", false)] {
        let rs = report::reasons(results, skips);
        if !rs.is_empty() {
            println!("\n{title}:");
            for (reason, n) in rs {
                println!("{n:>6}  {reason}");
            }
        }
    }
    if verbose {
        println!("\nfailing cases:");
        for r in results {
            if let Outcome::Fail { reason, detail } = &r.outcome {
                println!("  {} ({}): {reason}: {detail}", r.name, r.op);
            }
        }
    }
}

/// The listed cases that no longer pass.
fn regressions<'r>(results: &'r [CaseResult], listed: &BTreeSet<String>) -> Vec<&'r CaseResult> {
    results
        .iter()
        .filter(|r| listed.contains(&r.name) && r.outcome != Outcome::Pass)
        .collect()
}

fn print_regressions(regressions: &[&CaseResult], pass_path: &Path) {
    if regressions.is_empty() {
        return;
    }
    println!("\ncases on {} that no longer pass:", pass_path.display());
    for r in regressions {
        match &r.outcome {
            Outcome::Fail { reason, detail } => println!("  {}: {reason}: {detail}", r.name),
            Outcome::Skip { reason } => println!("  {}: skipped: {reason}", r.name),
            Outcome::Pass => {}
        }
    }
}

/// With `update`, adds the passing cases to the pass list; else says how many are not on it.
fn update_pass_list(
    results: &[CaseResult],
    listed: &BTreeSet<String>,
    pass_path: &Path,
    update: bool,
) -> Result<()> {
    let passing = report::passing(results);
    let new = passing.iter().filter(|n| !listed.contains(*n)).count();
    if update {
        let mut all = listed.clone();
        all.extend(passing.iter().cloned());
        let text: String = all.iter().map(|n| format!("{n}\n")).collect();
        if let Some(dir) = pass_path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(pass_path, text)
            .with_context(|| format!("writing {}", pass_path.display()))?;
        println!(
            "\n{}: {new} cases added, {} in all",
            pass_path.display(),
            all.len()
        );
    } else if new > 0 {
        println!("\n{new} passing cases are not on the pass list (--update adds them)");
    }
    Ok(())
}

/// Rewrites the conformance section of `docs/conformance.md`: the host's table, or a board's line.
fn update_docs(
    root: &Path,
    suite: Suite,
    name: &str,
    (cases, results): (&Path, &[CaseResult]),
) -> Result<()> {
    let path = root.join("docs").join("conformance.md");
    let text = std::fs::read_to_string(&path)?;
    let totals = report::totals(results).line();
    let section = format!("{}{name}", suite.prefix());
    let new_text = match name {
        "host" => {
            let table = match suite {
                Suite::Onnx => report::markdown(results),
                Suite::Tflite => report::markdown_with(
                    results,
                    &conformance::tflite::PARITY_HEADERS,
                    &conformance::tflite::parity(cases, results),
                ),
            };
            let body = format!("{table}\n{totals}\n");
            report::replace_section(&text, suite.prefix(), &body)
        }
        _ => report::replace_board_section(
            &text,
            &section,
            &format!("{}\n", board_summary(results, name, &totals)),
        ),
    };
    let Some(new_text) = new_text else {
        bail!(
            "{} has no conformance section for {section}",
            path.display()
        );
    };
    std::fs::write(&path, new_text)?;
    Ok(())
}

/// A board's line of `docs/conformance.md`: its totals, and the reasons of its own skips and failures.
fn board_summary(results: &[CaseResult], board: &str, totals: &str) -> String {
    let mut body = format!(
        "On {board}: `{totals}` (the cases that pass on the host run there again; the \
         others keep their host outcome)."
    );
    let own = format!("{board}: ");
    for (title, skips) in [("Skipped there", true), ("Failed there", false)] {
        let mut reasons = report::reasons(results, skips);
        reasons.retain(|(r, _)| r.starts_with(&own));
        if !reasons.is_empty() {
            let list: Vec<String> = reasons.iter().map(|(r, n)| format!("{r} ({n})")).collect();
            body += &format!(" {title}: {}.", list.join("; "));
        }
    }
    body
}
