//! The models process replay compiles, and compiling them for every target.

use super::records::{ModelRecord, RecordSet, TargetRecord};
use crate::conformance::{case, children::parallel_map, list_cases, tflite, Outcome};
use anyhow::{bail, Context, Result};
use kiln_codegen::compile::compile_graph;
use kiln_codegen::error::chain;
use kiln_codegen::gpu::Api;
use kiln_codegen::model::{self, ImportOptions};
use kiln_codegen::onnx;
use kiln_codegen::target::Target;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

/// A target the corpus is compiled for.
pub enum ReplayTarget {
    /// A C target, through the CPU pipeline.
    Cpu(Target),
    /// An edge GPU, with its interface's portable default limits.
    Gpu(Api),
}

impl ReplayTarget {
    fn name(&self) -> String {
        match self {
            ReplayTarget::Cpu(t) => t.name.to_string(),
            ReplayTarget::Gpu(api) => api.name().to_string(),
        }
    }
}

/// The targets named on the command line.
pub fn targets(names: &[String]) -> Result<Vec<ReplayTarget>> {
    names
        .iter()
        .map(|n| {
            Ok(match (Target::by_name(n), Api::from_name(n)) {
                (Some(t), _) => ReplayTarget::Cpu(t),
                (None, Some(api)) => ReplayTarget::Gpu(api),
                (None, None) => bail!(
                    "no target `{n}` (known: {}, opencl, vulkan)",
                    Target::CPU_NAMES.join(", ")
                ),
            })
        })
        .collect()
}

/// Where a model of the corpus comes from.
pub enum Source {
    /// An ONNX file, its free batch dims pinned to 1.
    File(PathBuf),
    /// A case folder (`model.onnx`), its input shapes from the input files in `data`.
    Case { dir: PathBuf, data: PathBuf },
}

/// One model of the corpus, named by its key (`mlperf/kws_float`).
pub struct CorpusModel {
    pub key: String,
    pub source: Source,
}

/// The model files (`.{ext}`) in `dir`, each keyed `group/stem`.
fn model_files(dir: &Path, ext: &str, group: &str, out: &mut Vec<CorpusModel>) -> Result<()> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("listing {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    files.sort();
    for path in files {
        let stem = path.file_stem().unwrap_or_default().to_string_lossy();
        out.push(CorpusModel {
            key: format!("{group}/{stem}"),
            source: Source::File(path.clone()),
        });
    }
    Ok(())
}

fn case_dirs(
    dir: &Path,
    group: &str,
    data: Option<&str>,
    out: &mut Vec<CorpusModel>,
) -> Result<()> {
    for name in list_cases(dir).with_context(|| format!("listing {}", dir.display()))? {
        let case = dir.join(&name);
        out.push(CorpusModel {
            key: format!("{group}/{name}"),
            source: Source::Case {
                data: data.map_or_else(|| case.clone(), |d| case.join(d)),
                dir: case,
            },
        });
    }
    Ok(())
}

/// The corpus: Kiln's test models, the MLPerf Tiny models (ONNX and TFLite), the op models
/// (ONNX and TFLite), the real TFLite models, the TFLite suite and, when `cases` is given, the
/// ONNX node tests there.
pub fn collect(root: &Path, cases: Option<&Path>) -> Result<Vec<CorpusModel>> {
    let mut models = Vec::new();
    let files = [
        ("tests/models", "onnx", "models"),
        ("tests/models/mlperf-tiny/onnx", "onnx", "mlperf"),
        ("tests/models/mlperf-tiny/tflite", "tflite", "mlperf-tflite"),
        ("tests/models/tflite", "tflite", "tflite-ops"),
        ("tests/models/tflite-real", "tflite", "tflite-real"),
    ];
    for (dir, ext, group) in files {
        model_files(&root.join(dir), ext, group, &mut models)?;
    }
    case_dirs(&root.join("tests/ops"), "ops", None, &mut models)?;
    case_dirs(
        &root.join("tests/tflite-suite"),
        "tflite-suite",
        None,
        &mut models,
    )?;
    if let Some(dir) = cases {
        case_dirs(dir, "conformance", Some("test_data_set_0"), &mut models)?;
    }
    Ok(models)
}

fn outcome_text(o: &Outcome) -> String {
    match o {
        Outcome::Pass => "imported".to_string(),
        Outcome::Skip { reason } => format!("skipped: {reason}"),
        Outcome::Fail { reason, detail } => format!("{reason}: {detail}"),
    }
}

/// The model of `source`, imported with `options`.
fn import(source: &Source, options: &ImportOptions) -> Result<onnx::import::Imported, String> {
    match source {
        Source::File(path) => {
            model::import_file(path, options).map_err(|e| format!("importing: {}", chain(&e)))
        }
        Source::Case { dir, .. } if tflite::is_case(dir) => tflite::import_case(dir, options)
            .map(|c| c.imported)
            .map_err(|o| outcome_text(&o)),
        Source::Case { dir, data } => case::import_case(dir, data)
            .map(|c| c.imported)
            .map_err(|o| outcome_text(&o)),
    }
}

fn compile_one(imported: &onnx::import::Imported, target: &ReplayTarget) -> TargetRecord {
    let (graph, outputs) = (&imported.graph, &imported.outputs);
    let compiled = match target {
        ReplayTarget::Cpu(t) => compile_graph("replay", graph, outputs, t, true, &mut |_, _| {})
            .map(|b| b.replay_records())
            .map_err(|e| chain(&e)),
        ReplayTarget::Gpu(api) => {
            let limits = api.default_limits();
            kiln_codegen::gpu::compile("replay", graph, outputs, *api, &limits, &mut |_, _| {})
                .map(|gb| gb.bundle.replay_records())
                .map_err(|e| chain(&e))
        }
    };
    match compiled {
        Ok(records) => TargetRecord::Kernels(records),
        Err(e) => TargetRecord::Error(e),
    }
}

fn panic_text(p: Box<dyn std::any::Any + Send>) -> String {
    let msg = p
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default();
    format!("panic: {msg}")
}

fn record_model(m: &CorpusModel, targets: &[ReplayTarget]) -> ModelRecord {
    // Imported once for each set of options the targets import with (see
    // `ImportOptions::for_target`).
    let mut imports: Vec<(ImportOptions, Result<onnx::import::Imported, String>)> = Vec::new();
    targets
        .iter()
        .map(|t| {
            let options = match t {
                ReplayTarget::Cpu(target) => ImportOptions::default().for_target(target),
                ReplayTarget::Gpu(_) => ImportOptions::default(),
            };
            let at = match imports.iter().position(|(o, _)| *o == options) {
                Some(at) => at,
                None => {
                    let imported = catch_unwind(AssertUnwindSafe(|| import(&m.source, &options)))
                        .unwrap_or_else(|p| Err(panic_text(p)));
                    imports.push((options, imported));
                    imports.len() - 1
                }
            };
            let record = match &imports[at].1 {
                Ok(i) => catch_unwind(AssertUnwindSafe(|| compile_one(i, t)))
                    .unwrap_or_else(|p| TargetRecord::Error(panic_text(p))),
                Err(e) => TargetRecord::Error(e.clone()),
            };
            (t.name(), record)
        })
        .collect()
}

/// Every model compiled for every target, `jobs` models at a time.
pub fn compile_all(models: &[CorpusModel], targets: &[ReplayTarget], jobs: usize) -> RecordSet {
    // A panic is recorded as the model's outcome; its message need not reach the terminal.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let bar = indicatif::ProgressBar::new(models.len() as u64);
    let records = parallel_map(models, jobs, |m| {
        let r = record_model(m, targets);
        bar.inc(1);
        r
    });
    bar.finish_and_clear();
    std::panic::set_hook(hook);
    RecordSet {
        models: models.iter().map(|m| m.key.clone()).zip(records).collect(),
    }
}
