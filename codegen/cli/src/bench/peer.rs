//! The int8 peer: TensorFlow Lite Micro with CMSIS-NN's optimized kernels, prebuilt for the
//! emulated Cortex-M4 and M33 ([`DIR`], with its provenance), run under the board's own QEMU
//! command line with the instruction-count plugin and cycle estimate that Kiln's kernels get.
//!
//! Each image runs the model on its reference vectors, compares every output with TFLM's
//! reference and exits with status 0 only when all are equal. Each `Invoke()` lies between two
//! stores to the marker word (in a `-perop` image, each operator's kernel instead), so the
//! plugin's `kiln-insn <instructions> <cycles>` lines come in pairs, vector 0's first.

use super::models::{repo_root, BenchModel};
use super::speed::CORES;
use anyhow::{bail, Context, Result};
use kiln_runners::board::Elf;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The peer's images and their provenance, under the repository's root.
pub const DIR: &str = "tests/peers/tflm-cmsis-nn";

/// The arrays of a peer image that hold its reference vectors (inputs and expected outputs):
/// not part of a deployed image, so not counted in its flash.
const VECTORS: [&str; 2] = ["g_inputs", "g_expected"];

/// Time one run of a peer image may take (the largest takes about a second).
const TIMEOUT: Duration = Duration::from_secs(120);

/// What the peer measured on one core: vector 0's `Invoke()`.
#[derive(Clone, Debug, PartialEq)]
pub struct PeerNumbers {
    pub instructions: u64,
    /// Estimated by the plugin from the core's instruction timings, as Kiln's are.
    pub cycles: u64,
    /// The image's flash counted as Kiln's is, less its reference vectors.
    pub flash: usize,
}

/// The peer's runs of one model: per board of the speed table that has a peer image, its
/// numbers or its error as text.
pub type PeerRuns = Vec<(&'static str, Result<PeerNumbers, String>)>;

/// The peer's image of the model whose .tflite is `tflite`, for the boards in `folder` (`an386`)
/// of [`DIR`]; `suffix` `-perop` names the image that brackets each operator instead.
pub fn image(folder: &str, tflite: &Path, suffix: &str) -> PathBuf {
    let stem = tflite.file_stem().unwrap_or_default().to_string_lossy();
    repo_root()
        .join(DIR)
        .join(folder)
        .join(format!("{stem}{suffix}.elf"))
}

/// `path` under the repository's root as the repository names it (for messages that go into
/// the report).
pub fn shown(path: &Path) -> String {
    let root = repo_root();
    path.strip_prefix(&root)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// Runs the peer's image of `m` on every core of the speed table that has one.
pub fn measure(m: &BenchModel) -> PeerRuns {
    let Some(tflite) = &m.tflite else {
        return Vec::new();
    };
    let mut runs = Vec::new();
    for core in CORES.iter() {
        let Some(folder) = core.peer else { continue };
        let elf = image(folder, tflite, "");
        eprintln!("TFLM + CMSIS-NN: {} on {}", m.name, core.board);
        let run = invoke(core.board, &elf)
            .with_context(|| format!("TFLM + CMSIS-NN on {} ({})", core.board, shown(&elf)))
            .map_err(|e| format!("{e:#}"));
        runs.push((core.board, run));
    }
    runs
}

/// Runs `elf` on `board`: vector 0's `Invoke()`, and the image's flash.
pub fn invoke(board: &str, elf: &Path) -> Result<PeerNumbers> {
    let Some(&(instructions, cycles)) = pairs(&run(board, elf)?).first() else {
        bail!("the image exited with status 0 without storing to its marker");
    };
    Ok(PeerNumbers {
        instructions,
        cycles,
        flash: flash(elf)?,
    })
}

/// Runs the per-operator image `elf` of a model of `operators` operators on `board`: each
/// operator's estimated cycles on vector 0, in the model's order.
pub fn per_operator(board: &str, elf: &Path, operators: usize) -> Result<Vec<u64>> {
    first_run(&pairs(&run(board, elf)?), operators)
}

/// The cycles of the first run's `operators` spans of a per-operator image's `spans` (one per
/// operator per vector).
pub fn first_run(spans: &[(u64, u64)], operators: usize) -> Result<Vec<u64>> {
    if operators == 0 || spans.is_empty() || !spans.len().is_multiple_of(operators) {
        bail!(
            "{} marked kernels are no whole number of runs of the model's {operators} operators",
            spans.len()
        );
    }
    Ok(spans[..operators].iter().map(|&(_, c)| c).collect())
}

/// Each bracketed span's instructions and cycles: the differences of consecutive marks.
pub fn pairs(marks: &[(u64, u64)]) -> Vec<(u64, u64)> {
    (marks.chunks_exact(2))
        .map(|m| (m[1].0 - m[0].0, m[1].1 - m[0].1))
        .collect()
}

/// Runs `elf` once on `board` as Kiln's images run, the plugin counting by its marker: the
/// marks (instructions, estimated cycles); an error unless it exits with status 0 (the image's
/// own check of its outputs).
fn run(board: &str, elf: &Path) -> Result<Vec<(u64, u64)>> {
    let info = kiln_runners::board::info(board)?;
    let run = kiln_runners::board::run_marked(&info, elf, TIMEOUT)?;
    if !run.status.success() {
        bail!("exited with {}{}", run.status, last_word(&run.output));
    }
    (run.marks.iter())
        .map(|&(n, cycles)| cycles.map(|c| (n, c)))
        .collect::<Option<Vec<_>>>()
        .with_context(|| format!("{board}'s core has no cycle estimate"))
}

/// The image's flash counted as a Kiln image's is, less its reference vectors.
fn flash(elf: &Path) -> Result<usize> {
    let bytes = std::fs::read(elf).with_context(|| format!("reading {}", shown(elf)))?;
    let image = Elf::parse(&bytes)
        .map_err(anyhow::Error::msg)
        .with_context(|| format!("reading {}", shown(elf)))?;
    let vectors: u32 = VECTORS
        .iter()
        .filter_map(|n| image.symbol(n))
        .map(|s| s.1)
        .sum();
    Ok(image.flash_bytes().saturating_sub(vectors as usize))
}

/// `: <the image's last line>` where it printed one (`peer: worst maxdiff 3`).
fn last_word(console: &str) -> String {
    let line = console.lines().rev().find(|l| l.starts_with("peer: "));
    line.map(|l| format!(": {}", l.trim())).unwrap_or_default()
}

#[cfg(test)]
mod tests;
