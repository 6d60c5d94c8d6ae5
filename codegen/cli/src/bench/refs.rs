//! The references' side of the benchmark: onnxruntime, tinygrad, TFLM and LiteRT numbers from
//! `scripts/bench_refs.py`, and TFLM's image sizes from `scripts/tflm_sizes.tsv`.

use super::models::{repo_root, BenchModel};
use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

/// The references' numbers: model → key → value.
pub type Refs = BTreeMap<String, BTreeMap<String, String>>;

/// Sets up the references' Python environment and runs `scripts/bench_refs.py` on `list`; an
/// int8 model's input and TFLM's outputs on it go to `vectors/<name>/`.
pub fn run_refs(list: &[&BenchModel], runs: usize, vectors: &Path) -> Result<Refs> {
    let root = repo_root();
    let setup = root.join("scripts/setup-bench.sh");
    run_checked(Command::new("bash").arg(&setup), &setup, &setup)?;
    let scratch = tempfile::tempdir().context("a temporary folder")?;
    let spec = scratch.path().join("refs-spec.tsv");
    std::fs::write(&spec, spec_text(list, runs)?)
        .with_context(|| format!("writing {}", spec.display()))?;
    let result = scratch.path().join("refs.tsv");
    let py = root.join(".venv-bench/bin/python");
    let script = root.join("scripts/bench_refs.py");
    run_checked(
        Command::new(&py)
            .arg(&script)
            .arg(&spec)
            .arg(&result)
            .arg(vectors),
        &py,
        &script,
    )?;
    let text = std::fs::read_to_string(&result)
        .with_context(|| format!("reading {}", result.display()))?;
    Ok(parse_refs(&text))
}

/// Runs `cmd`; an error names `program` when it cannot start, `script` when it fails.
fn run_checked(cmd: &mut Command, program: &Path, script: &Path) -> Result<()> {
    let status = cmd
        .status()
        .with_context(|| format!("running {}", program.display()))?;
    if !status.success() {
        bail!("{} failed ({status})", script.display());
    }
    Ok(())
}

/// The script's input: one `name, kind, model, tflite (or -), runs` line per model.
fn spec_text(list: &[&BenchModel], runs: usize) -> Result<String> {
    let mut text = String::new();
    for m in list {
        let tflite = m
            .tflite
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "-".into());
        writeln!(
            text,
            "{}\t{}\t{}\t{}\t{}",
            m.name,
            m.kind.name(),
            m.model.display(),
            tflite,
            m.runs(runs)
        )?;
    }
    Ok(text)
}

/// The script's `model, key, value` lines.
pub fn parse_refs(text: &str) -> Refs {
    let mut refs = Refs::new();
    for line in text.lines() {
        let mut parts = line.splitn(3, '\t');
        if let (Some(m), Some(k), Some(v)) = (parts.next(), parts.next(), parts.next()) {
            refs.entry(m.to_string())
                .or_default()
                .insert(k.to_string(), v.to_string());
        }
    }
    refs
}

/// The number under `key` for `model`, if there is one.
pub fn num(refs: &Refs, model: &str, key: &str) -> Option<f64> {
    refs.get(model)?.get(key)?.parse().ok()
}

/// `runtime`'s best latency on `model` in µs (its `<runtime>_best_s`), if it ran.
pub fn best_us(refs: &Refs, model: &str, runtime: &str) -> Option<f64> {
    num(refs, model, &format!("{runtime}_best_s")).map(|s| s * 1e6)
}

/// TFLM's image of the same float model on the board (flash and RAM counted as Kiln's image is),
/// with its provenance: `scripts/tflm_sizes.tsv`.
pub const TFLM_SIZES: &str = include_str!("../../../../scripts/tflm_sizes.tsv");

/// Flash and RAM bytes of TFLM's image of one model, and where the numbers come from.
#[derive(Clone, Debug, PartialEq)]
pub struct TflmImage {
    pub flash: usize,
    pub ram: usize,
    pub source: String,
}

/// `model → TflmImage` from the tab-separated `model, flash, RAM, source` lines of `text`
/// (`#` starts a comment line; malformed lines are skipped).
pub fn parse_tflm_sizes(text: &str) -> BTreeMap<String, TflmImage> {
    let mut out = BTreeMap::new();
    for line in text.lines().filter(|l| !l.trim_start().starts_with('#')) {
        let f: Vec<&str> = line.split('\t').map(str::trim).collect();
        if let [model, flash, ram, source] = f[..] {
            if let (Ok(flash), Ok(ram)) = (flash.parse(), ram.parse()) {
                let source = source.to_string();
                out.insert(model.to_string(), TflmImage { flash, ram, source });
            }
        }
    }
    out
}

/// What `measured` in the source column of `scripts/tflm_sizes.tsv` stands for.
pub const TFLM_MEASURED: &str =
    "measured once, not published: tflite-micro 90b983c2 with its reference \
     kernels and only the model's ops registered, built by arm-none-eabi-gcc 12.2.1 for the \
     Cortex-M4F (hard float) with TFLM's release flags (core -Os, kernels -O2, --gc-sections) and \
     newlib, the .tflite and a static arena of TFLM's smallest size in the image";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::models::Kind;

    #[test]
    fn reads_the_reference_numbers() {
        let refs = parse_refs("ic\tort_best_s\t0.001\nic\tort_error\tboom: x\ty\n");
        assert_eq!(num(&refs, "ic", "ort_best_s"), Some(0.001));
        assert_eq!(best_us(&refs, "ic", "ort"), Some(1000.0));
        assert_eq!(best_us(&refs, "ic", "tflm"), None);
        assert_eq!(refs["ic"]["ort_error"], "boom: x\ty");
        assert_eq!(num(&refs, "kws", "ort_best_s"), None);
    }

    #[test]
    fn writes_one_spec_line_per_model() {
        let m = |name, kind, model: &str, tflite: Option<&str>| BenchModel {
            model: model.into(),
            tflite: tflite.map(Into::into),
            ..BenchModel::named(name, kind)
        };
        let ad = m("ad", Kind::Float, "ad.onnx", Some("ad.tflite"));
        let kws = m("kws", Kind::Float, "kws.onnx", None);
        let ad8 = m("ad_int8", Kind::Int8, "ad8.tflite", Some("ad8.tflite"));
        assert_eq!(
            spec_text(&[&ad, &kws, &ad8], 7).unwrap(),
            "ad\tfloat\tad.onnx\tad.tflite\t7\nkws\tfloat\tkws.onnx\t-\t7\n\
             ad_int8\tint8\tad8.tflite\tad8.tflite\t7\n"
        );
    }

    #[test]
    fn reads_the_tflm_image_sizes() {
        let t =
            parse_tflm_sizes("# c\tomment\nad\t1097068\t8916\tmeasured\nic\tx\t1\tm\nvww\t1\t2\n");
        assert_eq!(t.len(), 1);
        assert_eq!(
            t["ad"],
            TflmImage {
                flash: 1_097_068,
                ram: 8_916,
                source: "measured".into()
            }
        );
        let shipped = parse_tflm_sizes(TFLM_SIZES);
        assert!(["ad", "ic", "vww"].iter().all(|m| shipped.contains_key(*m)));
    }
}
