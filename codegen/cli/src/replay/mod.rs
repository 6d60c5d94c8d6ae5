//! `kiln replay record DIR` and `kiln replay diff DIR`: process replay. Every kernel Kiln
//! generates for a corpus of models (the test models, the MLPerf Tiny models, the op models and
//! the ONNX conformance cases), for every target, is written as a record (AST, target, opts,
//! name, source); a later build compares its kernels with those and lists each one that
//! changed. A change to the generator that should change no kernel is proved so.

mod corpus;
mod records;

use anyhow::{bail, Context, Result};
use records::{diff_sets, RecordSet};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand)]
enum Command {
    /// Compiles the corpus for every target and writes each model's kernels into DIR.
    Record(RecordArgs),
    /// Compiles the corpus again and lists every kernel that differs from the record in DIR.
    Diff(DiffArgs),
}

#[derive(clap::Args)]
struct CorpusArgs {
    /// Targets to compile for, comma-separated (`c`, `c-dsp`, `c-dsp-wide`, `c-dsp-i16`,
    /// `c-dsp-wide-i16`, `c-mve`, `host`, `opencl`, `vulkan`).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "c,c-dsp,c-dsp-wide,c-dsp-i16,c-dsp-wide-i16,c-mve,host,neon,opencl,vulkan"
    )]
    targets: Vec<String>,
    /// The ONNX node test cases (default: `$KILN_ONNX_NODE_TESTS`, else the `onnx` package's in
    /// `.venv`); `--no-conformance` leaves them out.
    #[arg(long)]
    cases: Option<PathBuf>,
    #[arg(long)]
    no_conformance: bool,
    /// Only the models whose corpus path (`mlperf/kws_float`, `conformance/test_abs`, …)
    /// contains this text.
    #[arg(long)]
    only: Option<String>,
    /// Models compiled at once (default: the number of CPUs).
    #[arg(long)]
    jobs: Option<usize>,
}

#[derive(clap::Args)]
struct RecordArgs {
    /// The folder the records are written into (replaced whole).
    dir: PathBuf,
    #[command(flatten)]
    corpus: CorpusArgs,
}

#[derive(clap::Args)]
struct DiffArgs {
    /// The folder of an earlier `kiln replay record`.
    dir: PathBuf,
    /// Lines of each changed kernel's source diff to print (0: names only).
    #[arg(long, default_value_t = 12)]
    lines: usize,
    #[command(flatten)]
    corpus: CorpusArgs,
}

pub fn run(a: Args) -> Result<ExitCode> {
    match a.command {
        Command::Record(r) => record(r),
        Command::Diff(d) => diff(d),
    }
}

fn build(c: &CorpusArgs) -> Result<RecordSet> {
    let targets = corpus::targets(&c.targets)?;
    let root = crate::conformance::repo_root();
    let cases = if c.no_conformance {
        None
    } else {
        Some(match &c.cases {
            Some(d) => d.clone(),
            None => crate::conformance::find_cases_dir(&root).map_err(anyhow::Error::msg)?,
        })
    };
    let mut models = corpus::collect(&root, cases.as_deref())?;
    if let Some(only) = &c.only {
        models.retain(|m| m.key.contains(only.as_str()));
    }
    if models.is_empty() {
        bail!("no model in the corpus matches");
    }
    let jobs = c
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    Ok(corpus::compile_all(&models, &targets, jobs))
}

fn record(a: RecordArgs) -> Result<ExitCode> {
    let set = build(&a.corpus)?;
    set.write(&a.dir)
        .with_context(|| format!("writing records into {}", a.dir.display()))?;
    println!(
        "recorded {} kernels of {} models ({} of them not compiled) into {}",
        set.kernel_count(),
        set.models.len(),
        set.error_count(),
        a.dir.display()
    );
    Ok(ExitCode::SUCCESS)
}

fn diff(a: DiffArgs) -> Result<ExitCode> {
    let before = RecordSet::read(&a.dir)
        .with_context(|| format!("reading the records in {}", a.dir.display()))?;
    let now = build(&a.corpus)?;
    let c = &a.corpus;
    let covered = |key: &str| {
        c.only.as_deref().is_none_or(|o| key.contains(o))
            && !(c.no_conformance && key.starts_with("conformance/"))
    };
    let report = diff_sets(&before, &now, &covered);
    print!("{}", report.render(a.lines));
    Ok(if report.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The record folder's name for a corpus key (`mlperf/kws_float` → `mlperf/kws_float.txt`).
fn record_path(dir: &Path, key: &str) -> PathBuf {
    dir.join(format!("{key}.txt"))
}
