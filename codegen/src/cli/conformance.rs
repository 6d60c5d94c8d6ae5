//! `kiln conformance`: the ONNX backend node tests through the whole pipeline, and the hidden
//! `kiln conformance-case DIR` that runs one case for it in a child process.

use crate::conformance::{self, case, report, runner, CaseResult, Outcome};
use anyhow::{bail, Context, Result};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct Args {
    /// Where to run: only `host` (the system C compiler) for now.
    #[arg(long, default_value = "host")]
    board: String,
    /// Runs only the cases whose name matches this regular expression.
    #[arg(long)]
    filter: Option<String>,
    /// Cases run at once (default: the number of CPUs).
    #[arg(long)]
    jobs: Option<usize>,
    /// Seconds one case may take before it counts as a hang.
    #[arg(long, default_value_t = 60)]
    timeout: u64,
    /// The folder of cases (default: `$KILN_ONNX_NODE_TESTS`, else the `onnx` package's in `.venv`).
    #[arg(long)]
    cases: Option<PathBuf>,
    /// The expected-pass list (default: `tests/conformance/<board>.pass`).
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
    /// Rewrites the section of `README.md` between the conformance markers with the table.
    #[arg(long)]
    readme: bool,
    /// Lists every failing case with its detail.
    #[arg(short, long)]
    verbose: bool,
}

#[derive(clap::Args)]
pub struct CaseArgs {
    /// The case folder (with `model.onnx` and `test_data_set_0`).
    dir: PathBuf,
}

/// Runs one case and prints its outcome line; exit code 0 whatever the outcome.
pub fn run_case(a: CaseArgs) -> Result<ExitCode> {
    let outcome = case::run_case(&a.dir);
    if let Outcome::Fail { detail, .. } = &outcome {
        eprintln!("{detail}");
    }
    println!("{}", runner::encode(&outcome));
    Ok(ExitCode::SUCCESS)
}

pub fn run(a: Args) -> Result<ExitCode> {
    if a.board != "host" {
        bail!("unknown board `{}` for conformance (known: host)", a.board);
    }
    let root = conformance::repo_root();
    let cases = match &a.cases {
        Some(c) => c.clone(),
        None => conformance::find_cases_dir(&root).map_err(anyhow::Error::msg)?,
    };
    let pass_path = a
        .pass_list
        .clone()
        .unwrap_or_else(|| root.join(format!("tests/conformance/{}.pass", a.board)));
    let listed: BTreeSet<String> = match std::fs::read_to_string(&pass_path) {
        Ok(text) => report::parse_pass_list(&text).into_iter().collect(),
        Err(_) if !a.listed => BTreeSet::new(),
        Err(e) => bail!("reading {}: {e}", pass_path.display()),
    };
    let mut names = conformance::list_cases(&cases)
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
    let jobs = a.jobs.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    let runner = runner::Runner {
        exe: std::env::current_exe().context("finding the kiln executable")?,
        jobs,
        timeout: Duration::from_secs(a.timeout),
    };
    let started = Instant::now();
    let bar = indicatif::ProgressBar::new(names.len() as u64);
    let results = runner.run_all(&cases, &names, &|_r: &CaseResult| bar.inc(1));
    bar.finish_and_clear();
    let elapsed = started.elapsed();

    if a.markdown {
        print!("{}", report::markdown(&results));
    } else {
        print!("{}", report::table(&results));
    }
    for (title, skips) in [("skip reasons", true), ("failure reasons", false)] {
        let rs = report::reasons(&results, skips);
        if !rs.is_empty() {
            println!("\n{title}:");
            for (reason, n) in rs {
                println!("{n:>6}  {reason}");
            }
        }
    }
    if a.verbose {
        println!("\nfailing cases:");
        for r in &results {
            if let Outcome::Fail { reason, detail } = &r.outcome {
                println!("  {} ({}): {reason}: {detail}", r.name, r.op);
            }
        }
    }
    let regressions: Vec<&CaseResult> = results
        .iter()
        .filter(|r| listed.contains(&r.name) && r.outcome != Outcome::Pass)
        .collect();
    if !regressions.is_empty() {
        println!("\ncases on {} that no longer pass:", pass_path.display());
        for r in &regressions {
            match &r.outcome {
                Outcome::Fail { reason, detail } => println!("  {}: {reason}: {detail}", r.name),
                Outcome::Skip { reason } => println!("  {}: skipped: {reason}", r.name),
                Outcome::Pass => {}
            }
        }
    }
    let passing = report::passing(&results);
    let new = passing.iter().filter(|n| !listed.contains(*n)).count();
    if a.update {
        let mut all = listed.clone();
        all.extend(passing.iter().cloned());
        let text: String = all.iter().map(|n| format!("{n}\n")).collect();
        if let Some(dir) = pass_path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(&pass_path, text)
            .with_context(|| format!("writing {}", pass_path.display()))?;
        println!(
            "\n{}: {new} cases added, {} in all",
            pass_path.display(),
            all.len()
        );
    } else if new > 0 {
        println!("\n{new} passing cases are not on the pass list (--update adds them)");
    }
    if a.readme {
        let path = root.join("README.md");
        let text = std::fs::read_to_string(&path)?;
        let body = format!(
            "{}\n{}\n",
            report::markdown(&results),
            report::totals(&results).line()
        );
        let Some(new_text) = report::replace_section(&text, &body) else {
            bail!(
                "{} has no `{}` … `{}` section",
                path.display(),
                report::START,
                report::END
            );
        };
        std::fs::write(&path, new_text)?;
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
