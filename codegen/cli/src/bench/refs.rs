//! The references' side of the benchmark: onnxruntime, tinygrad, TFLM and LiteRT numbers from
//! `scripts/bench_refs.py` (the float models' through [`RefServer`], in rounds between Kiln's),
//! and TFLM's image sizes from `scripts/tflm_sizes.tsv`.

use super::models::{repo_root, BenchModel};
use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write as _};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

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

/// The float references timed on request (`scripts/bench_refs.py serve`), so that their rounds
/// run between Kiln's and both sides see the machine in the same state.
pub struct RefServer {
    child: Child,
    requests: ChildStdin,
    answers: BufReader<ChildStdout>,
}

/// The best and median of one round of timed inferences, in seconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Round {
    pub best_s: f64,
    pub median_s: f64,
}

impl RefServer {
    /// Starts the script in the environment [`run_refs`] set up.
    pub fn start() -> Result<RefServer> {
        let root = repo_root();
        let py = root.join(".venv-bench/bin/python");
        let mut child = Command::new(&py)
            .arg(root.join("scripts/bench_refs.py"))
            .arg("serve")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .with_context(|| format!("running {}", py.display()))?;
        let (Some(requests), Some(answers)) = (child.stdin.take(), child.stdout.take()) else {
            bail!("the reference server's pipes were not opened");
        };
        let answers = BufReader::new(answers);
        Ok(RefServer {
            child,
            requests,
            answers,
        })
    }

    /// Sends one request (tab-separated words) and reads its rows up to the closing `.`.
    fn ask(&mut self, words: &[&str]) -> Result<Refs> {
        let request = words.join("\t");
        writeln!(self.requests, "{request}")
            .and_then(|()| self.requests.flush())
            .with_context(|| format!("sending {request:?} to the reference server"))?;
        read_answer(&mut self.answers, &request)
    }

    /// Makes onnxruntime and tinygrad ready on the float model `m`: tinygrad's device and
    /// difference from onnxruntime, and the runtimes that failed (`<runtime>_error`).
    pub fn prepare(&mut self, m: &BenchModel) -> Result<Refs> {
        self.ask(&["prepare", m.name, &m.model.display().to_string()])
    }

    /// One round of `runs` timed inferences of `runtime` (`ort`, `tinygrad`) on the model
    /// prepared as `name`; `None` where that runtime failed to prepare.
    pub fn time(&mut self, name: &str, runtime: &str, runs: usize) -> Result<Option<Round>> {
        let rows = self.ask(&["time", name, runtime, &runs.to_string()])?;
        let key = |k: &str| num(&rows, name, &format!("{runtime}_{k}"));
        Ok(key("best_s")
            .zip(key("median_s"))
            .map(|(best_s, median_s)| Round { best_s, median_s }))
    }
}

impl Drop for RefServer {
    fn drop(&mut self) {
        // Closing stdin ends the script's loop; kill it if it is stuck in a request.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The rows of the reference server's answer to `request`, up to its closing `.`; an error
/// where the server stopped first or refused the request.
fn read_answer(answers: &mut impl BufRead, request: &str) -> Result<Refs> {
    let mut text = String::new();
    loop {
        let mut line = String::new();
        let read = answers
            .read_line(&mut line)
            .with_context(|| format!("reading the reference server's answer to {request:?}"))?;
        if read == 0 {
            bail!("the reference server stopped while answering {request:?}");
        }
        if line.trim_end() == "." {
            break;
        }
        text += &line;
    }
    let rows = parse_refs(&text);
    if let Some(e) = rows.get("-").and_then(|r| r.get("request_error")) {
        bail!("the reference server refused {request:?}: {e}");
    }
    Ok(rows)
}

/// The rounds of one runtime merged as rows of `model`: the best of their bests, the median
/// of their medians.
pub fn merged_rows(refs: &mut Refs, model: &str, runtime: &str, rounds: &[Round]) {
    if rounds.is_empty() {
        return;
    }
    let best = rounds
        .iter()
        .map(|r| r.best_s)
        .fold(f64::INFINITY, f64::min);
    let mut medians: Vec<f64> = rounds.iter().map(|r| r.median_s).collect();
    medians.sort_by(f64::total_cmp);
    let row = refs.entry(model.to_string()).or_default();
    row.insert(format!("{runtime}_best_s"), best.to_string());
    row.insert(
        format!("{runtime}_median_s"),
        medians[medians.len() / 2].to_string(),
    );
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
    fn reads_one_answer_at_a_time() {
        let mut answers =
            "ic\tort_best_s\t0.5\n.\n.\n-\trequest_error\tunknown\n.\nic\t".as_bytes();
        let first = read_answer(&mut answers, "time").unwrap();
        assert_eq!(num(&first, "ic", "ort_best_s"), Some(0.5));
        assert!(read_answer(&mut answers, "time").unwrap().is_empty());
        let refused = read_answer(&mut answers, "bogus").unwrap_err().to_string();
        assert!(refused.contains("refused \"bogus\": unknown"), "{refused}");
        let stopped = read_answer(&mut answers, "time").unwrap_err().to_string();
        assert!(stopped.contains("stopped while answering"), "{stopped}");
    }

    #[test]
    fn merges_rounds_into_best_and_median() {
        let mut refs = Refs::new();
        merged_rows(&mut refs, "ic", "ort", &[]);
        assert!(refs.is_empty());
        let r = |best_s, median_s| Round { best_s, median_s };
        merged_rows(
            &mut refs,
            "ic",
            "ort",
            &[r(3.0, 9.0), r(1.0, 4.0), r(2.0, 5.0)],
        );
        assert_eq!(num(&refs, "ic", "ort_best_s"), Some(1.0));
        assert_eq!(num(&refs, "ic", "ort_median_s"), Some(5.0));
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
