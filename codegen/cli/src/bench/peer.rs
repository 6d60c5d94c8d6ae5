//! The int8 peer: TensorFlow Lite Micro with CMSIS-NN's optimized kernels, prebuilt for the
//! emulated Cortex-M4 and M33 ([`DIR`], with its provenance), run under the board's own QEMU
//! command line with the instruction-count plugin and cycle estimate that Kiln's kernels get.
//!
//! Each image runs the model on its reference vectors, compares every output with TFLM's
//! reference and exits with status 0 only when all are equal. Each `Invoke()` lies between two
//! stores to the marker word (in a `-perop` image, each operator's kernel instead), so the
//! plugin's `kiln-insn <instructions> <cycles>` lines come in pairs, vector 0's first.

use super::elf::Image;
use super::models::{repo_root, BenchModel};
use super::speed::CORES;
use anyhow::{bail, Context, Result};
use kiln_runners::board::Core;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

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
    let (marks, image) = run(board, elf)?;
    let Some(&(instructions, cycles)) = pairs(&marks).first() else {
        bail!("the image exited with status 0 without storing to its marker");
    };
    Ok(PeerNumbers {
        instructions,
        cycles,
        flash: image.flash_without(&VECTORS),
    })
}

/// Runs the per-operator image `elf` of a model of `operators` operators on `board`: each
/// operator's estimated cycles on vector 0, in the model's order.
pub fn per_operator(board: &str, elf: &Path, operators: usize) -> Result<Vec<u64>> {
    let (marks, _) = run(board, elf)?;
    first_run(&pairs(&marks), operators)
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

/// The marks of a plugin log with a cycle estimate: `kiln-insn <instructions> <cycles>` at each
/// marker store, in order (the `kiln-insn-total` line and anything else are left out).
pub fn parse_marks(log: &str) -> Result<Vec<(u64, u64)>> {
    let mut marks = Vec::new();
    for line in log.lines() {
        let mut words = line.split_whitespace();
        if words.next() != Some("kiln-insn") {
            continue;
        }
        let numbers: Result<Vec<u64>, _> = words.map(str::parse).collect();
        match numbers.as_deref() {
            Ok(&[instructions, cycles]) => marks.push((instructions, cycles)),
            _ => bail!("the plugin's log has a mark that is not two numbers: {line:?}"),
        }
    }
    Ok(marks)
}

/// The QEMU command line of `board` (its runner's), the plugin's arguments for its core, and
/// whether QEMU and the plugin are there: what running a peer image needs.
pub fn command_line(board: &str) -> Result<(Vec<String>, Core)> {
    let info = kiln_runners::board::info(board)?;
    let Some(qemu) = info.qemu.clone().filter(|q| !q.is_empty()) else {
        bail!("{board} is not an emulated board");
    };
    let Some(core) = Core::of(&info) else {
        bail!("{board}'s core has no cycle estimate");
    };
    let version = Command::new(&qemu[0]).arg("--version").output();
    if !version.is_ok_and(|o| o.status.success()) {
        bail!("QEMU (`{}`), which runs {board}, is missing", qemu[0]);
    }
    Ok((qemu, core))
}

/// The instruction-count plugin, built by `scripts/qemu-plugin.sh` if it is not up to date.
pub fn plugin() -> Result<PathBuf> {
    let root = repo_root();
    let script = root.join("scripts/qemu-plugin.sh");
    let out = Command::new("bash")
        .arg(&script)
        .output()
        .context("running scripts/qemu-plugin.sh")?;
    if !out.status.success() {
        let why = String::from_utf8_lossy(&out.stderr);
        bail!(
            "scripts/qemu-plugin.sh failed ({}): {}",
            out.status,
            why.trim()
        );
    }
    Ok(root.join("target/qemu-plugin/libinsn.so"))
}

/// Runs `elf` once on `board` with the plugin watching its marker: the marks, and the image;
/// an error unless it exits with status 0 (the image's own check of its outputs).
fn run(board: &str, elf: &Path) -> Result<(Vec<(u64, u64)>, Image)> {
    let bytes = std::fs::read(elf).with_context(|| format!("reading {}", shown(elf)))?;
    let image = Image::parse(&bytes).with_context(|| format!("reading {}", shown(elf)))?;
    let Some((marker, _)) = image.symbol("KILN_MARKER") else {
        bail!("{} has no KILN_MARKER to count by", shown(elf));
    };
    let (qemu, core) = command_line(board)?;
    let dir = tempfile::tempdir().context("a folder for QEMU's output")?;
    let log = dir.path().join("insn.log");
    let file = |name: &str| std::fs::File::create(dir.path().join(name));
    let mut child = Command::new(&qemu[0])
        .args(&qemu[1..])
        .arg(elf)
        .arg("-plugin")
        .arg(format!(
            "{},marker={marker:#x},core={}",
            plugin()?.display(),
            core.plugin_arg()
        ))
        .args(["-d", "plugin", "-D"])
        .arg(&log)
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(file("stdout")?)
        .stderr(file("stderr")?)
        .spawn()
        .with_context(|| format!("starting {}", qemu[0]))?;
    let status = wait(&mut child, TIMEOUT)?;
    let console = std::fs::read_to_string(dir.path().join("stderr")).unwrap_or_default();
    if !status.success() {
        bail!("exited with {status}{}", last_word(&console));
    }
    let text = std::fs::read_to_string(&log).context("reading the plugin's log")?;
    Ok((parse_marks(&text)?, image))
}

/// `: <the image's last line>` where it printed one (`peer: worst maxdiff 3`).
fn last_word(console: &str) -> String {
    let line = console.lines().rev().find(|l| l.starts_with("peer: "));
    line.map(|l| format!(": {}", l.trim())).unwrap_or_default()
}

/// Waits for `child`, killing it after `timeout` (then an error).
fn wait(child: &mut std::process::Child, timeout: Duration) -> Result<ExitStatus> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            bail!("QEMU did not finish in {} s", timeout.as_secs());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[cfg(test)]
mod tests;
