//! Running an image on an emulated board: QEMU, with the board's command line, in a fresh I/O
//! folder, with the instruction-count plugin (`boards/qemu-plugin/insn.c`, built by
//! `scripts/qemu-plugin.sh`) watching the firmware's marker, which it stores to before and after
//! each step. Inputs go in and outputs come out ([`Io`]) through semihosting files in that
//! folder, or through the test-vector channel (see [`channel`](super::channel)) on QEMU's
//! standard input and output, or on RTT read through QEMU's gdbstub exactly as a probe reads a
//! real board's ([`super::rtt`], [`super::gdb`]).

use super::build::{on_path, BuiltImage};
use super::channel::{self, ChannelError, ChannelRun};
use super::elf::Elf;
use super::gdb::GdbStub;
use super::rtt::{self, DebugError, RttError};
use super::{io_error, root, BoardError, BoardInfo};
use crate::Invocation;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

mod debug;
mod process;
mod results;
mod stdio;
#[cfg(test)]
mod tests;

pub(super) use debug::*;
pub(super) use process::*;
pub(super) use results::*;
pub(super) use stdio::*;

/// What one run of a bundle on a board gave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoardRun {
    /// Each model output, raw little-endian.
    pub outputs: Vec<Vec<u8>>,
    /// Instructions each step's kernel executed, in step order: exact, identical run to run.
    pub step_instructions: Vec<u64>,
    /// Instructions of the whole run: startup, checks, I/O, steps and exit.
    pub total_instructions: u64,
    /// The cycles each step's kernel would take on the board's core, in step order, as long as
    /// `step_instructions`; empty where there is no estimate (a RISC-V board). An estimate from
    /// the core's published instruction timings ([`Core`]), identical run to run: it leaves out
    /// memory wait states, bus contention and caches, and on the Cortex-M7 branch prediction.
    pub step_cycles: Vec<u64>,
    /// The estimated cycles of the whole run, as [`BoardRun::step_cycles`]; `None` where there
    /// is no estimate.
    pub total_cycles: Option<u64>,
    /// Wall-clock time QEMU ran.
    pub wall_time: Duration,
}

/// A core whose cycles the instruction-count plugin estimates (its argument `core=`), from the
/// instruction timings its Technical Reference Manual publishes; see
/// `boards/qemu-plugin/insn.c` for the table and what it leaves out: memory wait states, bus
/// contention, caches, interrupts, stalls of an address on the instruction just before it, and
/// divisions cost their worst case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Core {
    /// Cortex-M0 (TRM table 3-1): loads and stores 2 cycles, a taken branch 3.
    M0,
    /// Cortex-M3 (TRM table 18-1): the M4's figures, but long multiplies at their worst case.
    M3,
    /// Cortex-M4 (TRM table 3-1, section 3.3.2, table 7-1 for the FPU).
    M4,
    /// Cortex-M33: ARM publishes no table of its own; the M4's.
    M33,
    /// Cortex-M7: ARM publishes no table; up to two instructions a cycle, in order, by the
    /// pairing rules and latencies of `boards/qemu-plugin/dual_issue.c`, without branch
    /// prediction.
    M7,
    /// Cortex-M55: the M4's figures for its scalar instructions; its Helium instructions 2
    /// cycles each (two beats a cycle), 1 where one overlaps the instruction before it.
    M55,
}

impl Core {
    /// The core the board's QEMU emulates, from its `-cpu` (or, without one, the machine's
    /// default CPU); `None` for a core with no estimate (RISC-V, or one not known here).
    pub fn of(board: &BoardInfo) -> Option<Core> {
        let args = board.qemu.as_deref()?;
        let after = |flag: &str| {
            let at = args.iter().position(|a| a == flag)?;
            args.get(at + 1).map(String::as_str)
        };
        let cpu = after("-cpu").or(match after("-machine").or(after("-M"))? {
            "microbit" => Some("cortex-m0"),
            "mps2-an385" | "mps2-an511" => Some("cortex-m3"),
            "mps2-an386" => Some("cortex-m4"),
            "mps2-an500" => Some("cortex-m7"),
            "mps2-an505" | "mps2-an521" | "mps3-an524" => Some("cortex-m33"),
            "mps3-an547" => Some("cortex-m55"),
            _ => None,
        })?;
        match cpu {
            "cortex-m0" => Some(Core::M0),
            "cortex-m3" => Some(Core::M3),
            "cortex-m4" => Some(Core::M4),
            "cortex-m33" => Some(Core::M33),
            "cortex-m7" => Some(Core::M7),
            "cortex-m55" => Some(Core::M55),
            _ => None,
        }
    }

    /// The plugin's name for it: `core=m4`.
    pub fn plugin_arg(self) -> &'static str {
        match self {
            Core::M0 => "m0",
            Core::M3 => "m3",
            Core::M4 => "m4",
            Core::M33 => "m33",
            Core::M7 => "m7",
            Core::M55 => "m55",
        }
    }

    /// `Cortex-M4`.
    pub fn name(self) -> &'static str {
        match self {
            Core::M0 => "Cortex-M0",
            Core::M3 => "Cortex-M3",
            Core::M4 => "Cortex-M4",
            Core::M33 => "Cortex-M33",
            Core::M7 => "Cortex-M7",
            Core::M55 => "Cortex-M55",
        }
    }

    /// Where its timings come from and what they leave out, for a line under a report:
    /// `the Cortex-M4 TRM's instruction timings (no wait states, no bus contention)`.
    pub fn source(self) -> &'static str {
        match self {
            Core::M0 => {
                "the Cortex-M0 TRM's instruction timings (no wait states, no bus contention)"
            }
            Core::M3 => {
                "the Cortex-M3 TRM's instruction timings (no wait states, no bus contention)"
            }
            Core::M4 => {
                "the Cortex-M4 TRM's instruction timings (no wait states, no bus contention)"
            }
            Core::M33 => {
                "the Cortex-M4 TRM's instruction timings, which the Cortex-M33's 3-stage pipeline \
                 shares (no wait states, no bus contention)"
            }
            Core::M7 => {
                "the Cortex-M7's dual issue as the plugin models it (in order, two instructions a \
                 cycle where they pair; no branch prediction, no wait states)"
            }
            Core::M55 => {
                "the Cortex-M4 TRM's instruction timings for the scalar code and two beats a \
                 cycle for Helium's, overlapping where a vector load meets vector arithmetic \
                 (no wait states, no bus contention)"
            }
        }
    }
}

/// The plugin's arguments: the marker's address and, where the board's core has a cycle
/// model, the core.
pub(super) fn plugin_args(plugin: &Path, marker: u32, core: Option<Core>) -> String {
    let mut args = format!("{},marker={marker:#x}", plugin.display());
    if let Some(core) = core {
        args.push_str(",core=");
        args.push_str(core.plugin_arg());
    }
    args
}

/// How inputs reach the firmware and outputs come back.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Io {
    /// Semihosting files `input_<i>.bin` / `output_<i>.bin` in the run's folder.
    #[default]
    Files,
    /// The test-vector channel over the semihosting console (QEMU's standard input and
    /// output), asked for on the semihosting command line.
    Channel,
    /// The test-vector channel over RTT, as on a real board: the image is the board's firmware
    /// built with its `rtt` feature ([`BuildOptions::rtt`](super::BuildOptions)), and the host
    /// reads and writes its RTT rings through QEMU's gdbstub.
    Rtt,
}

impl Io {
    /// The option's name on the command line: `files`, `channel`, `rtt`.
    pub fn name(self) -> &'static str {
        match self {
            Io::Files => "files",
            Io::Channel => "channel",
            Io::Rtt => "rtt",
        }
    }

    /// The one named `name`.
    pub fn from_name(name: &str) -> Option<Io> {
        [Io::Files, Io::Channel, Io::Rtt]
            .into_iter()
            .find(|io| io.name() == name)
    }
}

/// How to run an image beyond its inputs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunOptions {
    pub io: Io,
}

/// [`run_with_options`] with the default options: semihosting files.
pub fn run(
    board: &BoardInfo,
    image: &BuiltImage,
    inputs: &[Vec<u8>],
    timeout: Duration,
) -> Result<BoardRun, BoardError> {
    run_with_options(board, image, inputs, timeout, RunOptions::default())
}

/// Runs `image` on the emulated `board` with `inputs` (raw little-endian, one per model input),
/// stopping QEMU after `timeout`. A bundle the firmware refuses is [`BoardError::Refused`] with
/// the firmware's own message.
pub fn run_with_options(
    board: &BoardInfo,
    image: &BuiltImage,
    inputs: &[Vec<u8>],
    timeout: Duration,
    options: RunOptions,
) -> Result<BoardRun, BoardError> {
    let mut runs =
        run_invocations_with_options(board, image, &[Invocation::Run(inputs)], timeout, options)?;
    Ok(runs.pop().expect("one run"))
}

/// [`run_invocations_with_options`] over semihosting files.
pub fn run_invocations(
    board: &BoardInfo,
    image: &BuiltImage,
    invocations: &[Invocation<'_>],
    timeout: Duration,
) -> Result<Vec<BoardRun>, BoardError> {
    run_invocations_with_options(board, image, invocations, timeout, RunOptions::default())
}

/// Makes each invocation in order on one run of `image` on the emulated `board`, the model's
/// state carried from each run to the next, over semihosting files or one session of the
/// test-vector channel: each run's outputs and its steps' counts. The whole run's total is on
/// the last.
pub fn run_invocations_with_options(
    board: &BoardInfo,
    image: &BuiltImage,
    invocations: &[Invocation<'_>],
    timeout: Duration,
    options: RunOptions,
) -> Result<Vec<BoardRun>, BoardError> {
    let runs = plan_invocations(invocations);
    let single = matches!(invocations, [Invocation::Run(_)]);
    let files = |dir: &Path| match options.io {
        Io::Channel | Io::Rtt => Ok(()),
        // One run: the plain file names, as a user's firmware reads them.
        Io::Files if single => write_files(dir, runs[0].1, |i| format!("input_{i}.bin")),
        Io::Files => {
            for (k, (reset, inputs)) in runs.iter().enumerate() {
                let asked = dir.join(format!("s{k}_run.bin"));
                let flag: &[u8] = if *reset { b"r" } else { b"" };
                std::fs::write(&asked, flag).map_err(io_error(&asked))?;
                write_files(dir, inputs, |i| format!("s{k}_input_{i}.bin"))?;
            }
            Ok(())
        }
    };
    let ran = launch(board, image, invocations, timeout, options, &files)?;
    let per_run = |v: &[u64]| -> Vec<Vec<u64>> {
        let n = v.len() / runs.len().max(1);
        v.chunks(n.max(1)).map(<[u64]>::to_vec).collect()
    };
    let (insns, cycles) = (
        per_run(&ran.counts.step_instructions),
        per_run(&ran.counts.step_cycles),
    );
    let mut channel_outputs = ran.channel_outputs.clone().map(Vec::into_iter);
    let mut out = Vec::with_capacity(runs.len());
    for k in 0..runs.len() {
        let outputs = match (&mut channel_outputs, single) {
            (Some(outputs), _) => outputs.next().unwrap_or_default(),
            (None, true) => read_outputs(&ran.dir.path, |i| format!("output_{i}.bin"))?,
            (None, false) => read_outputs(&ran.dir.path, |i| format!("s{k}_output_{i}.bin"))?,
        };
        let counts = Counts {
            step_instructions: insns.get(k).cloned().unwrap_or_default(),
            step_cycles: cycles.get(k).cloned().unwrap_or_default(),
            ..ran.counts.clone()
        };
        out.push(counts.into_run(outputs, ran.wall_time));
    }
    Ok(out)
}

/// The runs of `invocations`, each with whether a reset comes before it.
fn plan_invocations<'a>(invocations: &[Invocation<'a>]) -> Vec<(bool, &'a [Vec<u8>])> {
    let mut runs = Vec::new();
    let mut reset = false;
    for invocation in invocations {
        match *invocation {
            Invocation::Reset => reset = true,
            Invocation::Run(inputs) => {
                runs.push((reset, inputs));
                reset = false;
            }
        }
    }
    runs
}

/// Writes `tensors` into `dir`, tensor `i` as file `name(i)`.
fn write_files(
    dir: &Path,
    tensors: &[Vec<u8>],
    name: impl Fn(usize) -> String,
) -> Result<(), BoardError> {
    for (index, bytes) in tensors.iter().enumerate() {
        let path = dir.join(name(index));
        std::fs::write(&path, bytes).map_err(io_error(&path))?;
    }
    Ok(())
}

/// What QEMU left: its I/O folder, each run's outputs the channel brought back (none over
/// files), the plugin's counts, and how long it ran.
struct Launched {
    dir: IoDir,
    channel_outputs: Option<Vec<Vec<Vec<u8>>>>,
    counts: Counts,
    wall_time: Duration,
}

/// Runs `image` under QEMU in a fresh I/O folder that `files` fills first, `invocations` going
/// over the channel where `options` asks for one; checks that the plugin counted as many steps
/// as the firmware says it ran.
fn launch(
    board: &BoardInfo,
    image: &BuiltImage,
    invocations: &[Invocation<'_>],
    timeout: Duration,
    options: RunOptions,
    files: &dyn Fn(&Path) -> Result<(), BoardError>,
) -> Result<Launched, BoardError> {
    let qemu = emulator(board, image)?;
    let elf_bytes = std::fs::read(&image.elf).map_err(io_error(&image.elf))?;
    let elf = Elf::parse(&elf_bytes).map_err(|reason| BoardError::Image {
        path: image.elf.clone(),
        reason,
    })?;
    let io = IoDir::new()?;
    files(&io.path)?;
    let log = io.path.join("insn.log");
    let socket = io.path.join("gdb.sock");
    let rtt_block = match options.io {
        Io::Rtt if !board.hosted() => Some(super::rtt_control_block(image)?),
        Io::Rtt => None,
        Io::Files | Io::Channel => None,
    };
    let mut command = Command::new(&qemu[0]);
    // A firmware that can never run a kernel has no marker, and nothing to count. The plugin
    // comes first: a user-mode QEMU takes what follows the program as the program's arguments.
    let marker = elf.symbol("KILN_MARKER").map(|(address, _)| address);
    if let Some(address) = marker {
        let plugin = plugin()?;
        command
            .arg("-plugin")
            .arg(plugin_args(&plugin, address, Core::of(board)))
            .args(["-d", "plugin", "-D"])
            .arg(&log);
    }
    match (options.io, board.hosted()) {
        (Io::Files, _) => command.args(&qemu[1..]).arg(&image.elf),
        // A hosted program's channel is its standard streams, asked for among its arguments.
        (Io::Channel, true) => command.args(&qemu[1..]).arg(&image.elf).arg(CHANNEL_WORD),
        (Io::Channel, false) => command
            .args(channel_command_line(&qemu[1..]))
            .arg(&image.elf)
            .args(["-append", CHANNEL_WORD]),
        (Io::Rtt, true) => {
            return Err(BoardError::Unsupported {
                board: board.name.clone(),
                reason: "a hosted program has no RTT; its test-vector channel is its standard \
                         input and output (--io channel)"
                    .into(),
            })
        }
        (Io::Rtt, false) => command
            .args(channel_command_line(&qemu[1..]))
            .arg(&image.elf)
            .args(gdb_args(&socket)),
    };
    let started = Instant::now();
    let (status, output, session) = match options.io {
        Io::Files => {
            let (status, output) = run_with_timeout(&mut command, &io.path, &board.name, timeout)?;
            (status, output, None)
        }
        Io::Channel => {
            let (status, output, session) =
                run_channel(&mut command, &io.path, &board.name, invocations, timeout)?;
            (status, output, Some(session))
        }
        Io::Rtt => {
            let rtt = (
                socket.as_path(),
                rtt_block.expect("checked above"),
                invocations,
            );
            let (status, output, session) =
                run_rtt(&mut command, &io.path, &board.name, rtt, timeout)?;
            (status, output, Some(session))
        }
    };
    let wall_time = started.elapsed();
    let (channel_outputs, steps) = match session {
        None if !status.success() => return Err(failure(&board.name, status, output)),
        None => (None, ran_steps(&output)),
        Some(session) => {
            let runs = channel_session(&board.name, status, output.clone(), session)?;
            let steps = runs.iter().map(|r| r.steps as usize).sum();
            (
                Some(runs.into_iter().map(|r| r.outputs).collect()),
                Some(steps),
            )
        }
    };
    let counts = match marker {
        Some(_) => read_counts(&log, &board.name)?,
        None => Counts::default(),
    };
    if marker.is_some() && steps != Some(counts.step_instructions.len()) {
        return Err(BoardError::Qemu {
            board: board.name.clone(),
            status: format!(
                "{} steps counted, the firmware says {steps:?}",
                counts.step_instructions.len()
            ),
            output,
        });
    }
    Ok(Launched {
        dir: io,
        channel_outputs,
        counts,
        wall_time,
    })
}

/// The board's QEMU command line, once the image and the emulator are known to fit it.
pub(super) fn emulator<'a>(
    board: &'a BoardInfo,
    image: &BuiltImage,
) -> Result<&'a [String], BoardError> {
    if image.board != board.name {
        return Err(BoardError::Image {
            path: image.elf.clone(),
            reason: format!("built for {}, not {}", image.board, board.name),
        });
    }
    installed_qemu(board, &image.elf)
}

/// The board's QEMU command line to run `elf` with, once the board is known to be emulated
/// and its emulator installed.
pub(super) fn installed_qemu<'a>(
    board: &'a BoardInfo,
    elf: &Path,
) -> Result<&'a [String], BoardError> {
    let Some(qemu) = board.qemu.as_deref().filter(|q| !q.is_empty()) else {
        let chip = board.probe_chip.as_deref().unwrap_or("<chip>");
        return Err(BoardError::NotEmulated {
            board: board.name.clone(),
            command: format!("probe-rs run --chip {chip} {}", elf.display()),
        });
    };
    if !on_path(&qemu[0]) {
        return Err(BoardError::ToolchainMissing {
            what: format!(
                "QEMU (`{}`), which runs {}, is missing",
                qemu[0], board.name
            ),
            detail: String::new(),
        });
    }
    Ok(qemu)
}
