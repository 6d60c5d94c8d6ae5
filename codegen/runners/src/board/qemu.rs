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
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

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
    /// memory wait states, bus contention and caches, and on the Cortex-M7 dual issue and
    /// branch prediction (there it is about an upper bound).
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
    /// Cortex-M7: the M4's figures one instruction at a time, without dual issue or branch
    /// prediction: about an upper bound.
    M7,
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
            "mps2-an505" | "mps2-an521" | "mps3-an524" | "mps3-an547" => Some("cortex-m33"),
            _ => None,
        })?;
        match cpu {
            "cortex-m0" => Some(Core::M0),
            "cortex-m3" => Some(Core::M3),
            "cortex-m4" => Some(Core::M4),
            "cortex-m33" => Some(Core::M33),
            "cortex-m7" => Some(Core::M7),
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
        }
    }

    /// Where its timings come from and what they leave out, for a line under a report:
    /// `the Cortex-M4 TRM's instruction timings (no wait states, no bus contention)`.
    pub fn source(self) -> &'static str {
        match self {
            Core::M0 => "the Cortex-M0 TRM's instruction timings (no wait states, no bus contention)",
            Core::M3 => "the Cortex-M3 TRM's instruction timings (no wait states, no bus contention)",
            Core::M4 => "the Cortex-M4 TRM's instruction timings (no wait states, no bus contention)",
            Core::M33 => {
                "the Cortex-M4 TRM's instruction timings, which the Cortex-M33's 3-stage pipeline \
                 shares (no wait states, no bus contention)"
            }
            Core::M7 => {
                "the Cortex-M4 TRM's instruction timings, one instruction at a time (no dual issue, \
                 no branch prediction, no wait states): about an upper bound for the Cortex-M7"
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
    let qemu = emulator(board, image)?;
    let elf_bytes = std::fs::read(&image.elf).map_err(io_error(&image.elf))?;
    let elf = Elf::parse(&elf_bytes).map_err(|reason| BoardError::Image {
        path: image.elf.clone(),
        reason,
    })?;
    let io = IoDir::new()?;
    if options.io == Io::Files {
        for (index, bytes) in inputs.iter().enumerate() {
            let path = io.path.join(format!("input_{index}.bin"));
            std::fs::write(&path, bytes).map_err(io_error(&path))?;
        }
    }
    let log = io.path.join("insn.log");
    let socket = io.path.join("gdb.sock");
    let rtt_block = match options.io {
        Io::Rtt => Some(super::rtt_control_block(image)?),
        Io::Files | Io::Channel => None,
    };
    let mut command = Command::new(&qemu[0]);
    match options.io {
        Io::Files => command.args(&qemu[1..]).arg(&image.elf),
        Io::Channel => command
            .args(channel_command_line(&qemu[1..]))
            .arg(&image.elf)
            .args(["-append", CHANNEL_WORD]),
        Io::Rtt => command
            .args(channel_command_line(&qemu[1..]))
            .arg(&image.elf)
            .args(gdb_args(&socket)),
    };
    // A firmware that can never run a kernel has no marker, and nothing to count.
    let marker = elf.symbol("KILN_MARKER").map(|(address, _)| address);
    if let Some(address) = marker {
        let plugin = plugin()?;
        command
            .arg("-plugin")
            .arg(plugin_args(&plugin, address, Core::of(board)))
            .args(["-d", "plugin", "-D"])
            .arg(&log);
    }
    let started = Instant::now();
    let (status, output, session) = match options.io {
        Io::Files => {
            let (status, output) = run_with_timeout(&mut command, &io.path, &board.name, timeout)?;
            (status, output, None)
        }
        Io::Channel => {
            let (status, output, session) =
                run_channel(&mut command, &io.path, &board.name, inputs, timeout)?;
            (status, output, Some(session))
        }
        Io::Rtt => {
            let rtt = (socket.as_path(), rtt_block.expect("checked above"), inputs);
            let (status, output, session) =
                run_rtt(&mut command, &io.path, &board.name, rtt, timeout)?;
            (status, output, Some(session))
        }
    };
    let wall_time = started.elapsed();
    let (outputs, steps) = match session {
        None if !status.success() => return Err(failure(&board.name, status, output)),
        None => (read_outputs(&io.path)?, ran_steps(&output)),
        Some(session) => {
            let run = channel_session(&board.name, status, output.clone(), session)?;
            (run.outputs, Some(run.steps as usize))
        }
    };
    let counts = match marker {
        Some(_) => read_counts(&log, &board.name)?,
        None => Counts::default(),
    };
    let Counts {
        step_instructions,
        total_instructions,
        step_cycles,
        total_cycles,
    } = counts;
    if marker.is_some() && steps != Some(step_instructions.len()) {
        return Err(BoardError::Qemu {
            board: board.name.clone(),
            status: format!(
                "{} steps counted, the firmware says {steps:?}",
                step_instructions.len()
            ),
            output,
        });
    }
    Ok(BoardRun {
        outputs,
        step_instructions,
        total_instructions,
        step_cycles,
        total_cycles,
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
    let Some(qemu) = board.qemu.as_deref().filter(|q| !q.is_empty()) else {
        let chip = board.probe_chip.as_deref().unwrap_or("<chip>");
        return Err(BoardError::NotEmulated {
            board: board.name.clone(),
            command: format!("probe-rs run --chip {chip} {}", image.elf.display()),
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

/// The word on the semihosting command line that asks the firmware for the channel; the
/// board crates' `host::CHANNEL_WORD`.
const CHANNEL_WORD: &str = "kiln-channel";

/// The board's QEMU arguments for a run over the channel: standard input and output are the
/// semihosting console's alone (`-nographic` would put the serial port and monitor there).
pub(super) fn channel_command_line(args: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len() + 6);
    for arg in args {
        match arg.as_str() {
            "-nographic" => out.extend(
                ["-display", "none", "-monitor", "none", "-serial", "null"].map(String::from),
            ),
            _ => out.push(arg.clone()),
        }
    }
    out
}

/// Runs `command` in `dir` with its standard input and output as the channel, on which a thread
/// runs the session; its standard error is captured. Kills QEMU after `timeout`.
fn run_channel(
    command: &mut Command,
    dir: &Path,
    board: &str,
    inputs: &[Vec<u8>],
    timeout: Duration,
) -> Result<
    (
        std::process::ExitStatus,
        String,
        Result<channel::ChannelRun, ChannelError>,
    ),
    BoardError,
> {
    let err = dir.join("qemu.stderr");
    let file = std::fs::File::create(&err).map_err(io_error(&err))?;
    let mut child = command
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(file)
        .spawn()
        .map_err(io_error(Path::new(command.get_program())))?;
    let (Some(to_device), Some(from_device)) = (child.stdin.take(), child.stdout.take()) else {
        unreachable!("both were asked to be piped")
    };
    let inputs = inputs.to_vec();
    let session = std::thread::spawn(move || {
        let mut from_device = from_device;
        let result = channel::exchange(&mut from_device, to_device, &inputs);
        // Whatever else the device writes, so that it never blocks on a full pipe.
        let _ = std::io::copy(&mut from_device, &mut std::io::sink());
        result
    });
    let status = match wait_or_kill(&mut child, dir, board, timeout) {
        Ok(status) => status,
        Err(e) => {
            let _ = session.join();
            return Err(e);
        }
    };
    let session = session
        .join()
        .unwrap_or_else(|_| Err(ChannelError::Protocol("the session thread panicked".into())));
    let mut output = String::new();
    std::fs::File::open(&err)
        .and_then(|mut f| f.read_to_string(&mut output))
        .map_err(io_error(&err))?;
    Ok((status, output, session))
}

/// What a session gave, or the error it ended in: the firmware's own message when it sent
/// one.
fn channel_session(
    board: &str,
    status: std::process::ExitStatus,
    output: String,
    session: Result<ChannelRun, ChannelError>,
) -> Result<ChannelRun, BoardError> {
    let board = board.to_string();
    match session {
        Ok(run) if status.success() => Ok(run),
        Ok(_) => Err(BoardError::Qemu {
            board,
            status: format!("{status} after the session ended well"),
            output,
        }),
        Err(ChannelError::Device(message)) => Err(BoardError::from_device(board, message)),
        // The host gave up first (inputs that do not fit, another version, a frame it could
        // not read): its reason, not the device's reaction to the closed channel.
        Err(
            error @ (ChannelError::Inputs(_)
            | ChannelError::Version { .. }
            | ChannelError::Protocol(_)),
        ) => Err(BoardError::Channel {
            board,
            source: error,
        }),
        Err(error) => Err(match failure(&board, status, output) {
            BoardError::Qemu {
                board,
                status,
                output,
            } => BoardError::Qemu {
                board,
                status: format!("{status}; {}", kiln_codegen::error::chain(&error)),
                output,
            },
            other => other,
        }),
    }
}

/// What a run under QEMU's gdbstub gave.
pub(super) struct GdbRun<T> {
    /// QEMU's exit status; `None` when it was killed at the time limit.
    pub status: Option<std::process::ExitStatus>,
    /// Its standard output and error.
    pub output: String,
    /// What the session over the gdbstub gave, or why the stub could not be reached.
    pub session: Result<T, DebugError>,
}

/// QEMU's arguments to start stopped at reset, its gdbstub listening on the Unix socket
/// `socket` (for [`run_under_gdb`]).
pub(super) fn gdb_args(socket: &Path) -> [String; 3] {
    let listen = format!("unix:{},server=on,wait=off", socket.display());
    ["-S".into(), "-gdb".into(), listen]
}

/// How long QEMU may take to open its gdbstub's socket.
const GDB_CONNECT_TIME: Duration = Duration::from_secs(10);

/// Runs `command` (QEMU, stopped at reset, its gdbstub listening on `socket`) in `dir`, its
/// output captured in files there, and `session` over the gdbstub; QEMU is killed after
/// `timeout`, or at once when `session` says the firmware will not end by itself.
pub(super) fn run_under_gdb<T>(
    command: &mut Command,
    dir: &Path,
    board: &str,
    socket: &Path,
    timeout: Duration,
    session: impl FnOnce(&mut GdbStub) -> (T, bool),
) -> Result<GdbRun<T>, BoardError> {
    let deadline = Instant::now() + timeout;
    let mut child = spawn_captured(command, dir)?;
    let (session, ends) = match GdbStub::connect(socket, GDB_CONNECT_TIME) {
        Ok(mut stub) => {
            let (result, ends) = session(&mut stub);
            // The firmware goes on (to its exit, or to the kill) without the host.
            let _ = stub.detach();
            (Ok(result), ends)
        }
        Err(error) => (Err(error), false),
    };
    let left = match ends {
        true => deadline.saturating_duration_since(Instant::now()),
        false => Duration::ZERO,
    };
    let status = match wait_or_kill(&mut child, dir, board, left) {
        Ok(status) => Some(status),
        Err(BoardError::Timeout { .. }) => None,
        Err(other) => return Err(other),
    };
    let output = read_captured(dir)?;
    Ok(GdbRun {
        status,
        output,
        session,
    })
}

/// Runs one session over RTT through QEMU's gdbstub (see [`run_under_gdb`]); errors of the
/// debugging link itself are the run's error, the session's own are returned for
/// [`channel_session`].
fn run_rtt(
    command: &mut Command,
    dir: &Path,
    board: &str,
    (socket, block, inputs): (&Path, u32, &[Vec<u8>]),
    timeout: Duration,
) -> Result<
    (
        std::process::ExitStatus,
        String,
        Result<ChannelRun, ChannelError>,
    ),
    BoardError,
> {
    let run = run_under_gdb(command, dir, board, socket, timeout, |stub| {
        let session = rtt::exchange(stub, block, inputs, timeout);
        // The firmware exits after its session, whether it ran or refused the bundle.
        let ends = matches!(
            session,
            Ok(_) | Err(RttError::Channel(ChannelError::Device(_)))
        );
        (session, ends)
    })?;
    let board = board.to_string();
    let session = match run.session.map_err(RttError::from).and_then(|s| s) {
        Ok(session) => Ok(session),
        Err(RttError::Channel(error)) => Err(error),
        // The firmware stopped mid-session: its exit status and output tell why.
        Err(RttError::Debug(DebugError::Exited)) => Err(ChannelError::Closed(String::new())),
        Err(RttError::Timeout { .. }) => return Err(BoardError::Timeout { board, timeout }),
        Err(source) => return Err(BoardError::Rtt { board, source }),
    };
    match run.status {
        Some(status) => Ok((status, run.output, session)),
        None => Err(BoardError::Timeout { board, timeout }),
    }
}

/// The instruction-count plugin, built by `scripts/qemu-plugin.sh` if it is not up to date.
pub(super) fn plugin() -> Result<PathBuf, BoardError> {
    let output = Command::new("bash")
        .arg(root().join("scripts/qemu-plugin.sh"))
        .output()
        .map_err(io_error(Path::new("bash")))?;
    if !output.status.success() {
        return Err(BoardError::ToolchainMissing {
            what: "the QEMU instruction-count plugin cannot be built".into(),
            detail: String::from_utf8_lossy(&output.stderr).trim().to_string(),
        });
    }
    Ok(root().join("target/qemu-plugin/libinsn.so"))
}

/// Waits for `child` to exit; kills it after `timeout`, which is then the error.
fn wait_or_kill(
    child: &mut std::process::Child,
    dir: &Path,
    board: &str,
    timeout: Duration,
) -> Result<std::process::ExitStatus, BoardError> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait().map_err(io_error(dir))? {
            return Ok(status);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(BoardError::Timeout {
                board: board.to_string(),
                timeout,
            });
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Runs `command` in `dir`, its output captured in files there; kills it after `timeout`.
pub(super) fn run_with_timeout(
    command: &mut Command,
    dir: &Path,
    board: &str,
    timeout: Duration,
) -> Result<(std::process::ExitStatus, String), BoardError> {
    let mut child = spawn_captured(command, dir)?;
    let status = wait_or_kill(&mut child, dir, board, timeout)?;
    Ok((status, read_captured(dir)?))
}

/// The files of `dir` a command's standard output and error go to.
fn captured(dir: &Path) -> [PathBuf; 2] {
    ["qemu.stdout", "qemu.stderr"].map(|f| dir.join(f))
}

/// Starts `command` in `dir`, its output captured in files there.
fn spawn_captured(command: &mut Command, dir: &Path) -> Result<std::process::Child, BoardError> {
    let [out, err] = captured(dir);
    let file = |p: &Path| std::fs::File::create(p).map_err(io_error(p));
    command
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(file(&out)?)
        .stderr(file(&err)?)
        .spawn()
        .map_err(io_error(Path::new(command.get_program())))
}

/// What a command started by [`spawn_captured`] wrote, standard output first.
fn read_captured(dir: &Path) -> Result<String, BoardError> {
    let [out, err] = captured(dir);
    let read = |p: &Path| std::fs::read(p).map_err(io_error(p));
    let mut output = String::from_utf8_lossy(&read(&out)?).into_owned();
    output.push_str(&String::from_utf8_lossy(&read(&err)?));
    Ok(output)
}

/// The error of a run that did not succeed: the firmware's message when it left one.
fn failure(board: &str, status: std::process::ExitStatus, output: String) -> BoardError {
    let message = output
        .lines()
        .find_map(|l| l.split_once("kiln: ").map(|(_, m)| m.trim().to_string()));
    let board = board.to_string();
    match message {
        Some(message) => BoardError::from_device(board, message),
        None => BoardError::Qemu {
            board,
            status: status.to_string(),
            output,
        },
    }
}

/// `kiln: ran N steps`, the firmware's last word on success.
fn ran_steps(output: &str) -> Option<usize> {
    output.lines().find_map(|l| {
        let rest = l.split_once("kiln: ran ")?.1;
        rest.strip_suffix(" steps")?.trim().parse().ok()
    })
}

/// What the plugin's log says: each step's instructions and the total, and the estimated
/// cycles of each when the plugin had a core.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Counts {
    step_instructions: Vec<u64>,
    total_instructions: u64,
    /// Empty without a cycle estimate.
    step_cycles: Vec<u64>,
    total_cycles: Option<u64>,
}

/// The plugin's log: the running count at each marker store (before and after each step), then
/// the total; each line `kiln-insn <instructions>` or, with a cycle estimate,
/// `kiln-insn <instructions> <cycles>`.
fn read_counts(log: &Path, board: &str) -> Result<Counts, BoardError> {
    let text = std::fs::read_to_string(log).map_err(io_error(log))?;
    let bad = |why: &str| BoardError::Qemu {
        board: board.to_string(),
        status: format!("the instruction-count log {why}"),
        output: text.clone(),
    };
    let mut marks = Vec::new();
    let mut total = None;
    for line in text.lines() {
        let mut words = line.split_whitespace();
        let (Some(label @ ("kiln-insn" | "kiln-insn-total")), Some(count)) =
            (words.next(), words.next())
        else {
            continue;
        };
        let number = |word: &str| {
            word.parse::<u64>()
                .map_err(|_| bad("has a count that is no number"))
        };
        let count = number(count)?;
        let cycles = words.next().map(number).transpose()?;
        match label {
            "kiln-insn" => marks.push((count, cycles)),
            _ => total = Some((count, cycles)),
        }
    }
    if !marks.len().is_multiple_of(2) {
        return Err(bad("has a step that began and did not end"));
    }
    let (total_instructions, total_cycles) = total.ok_or_else(|| bad("has no total"))?;
    let step_instructions = marks.chunks_exact(2).map(|m| m[1].0 - m[0].0).collect();
    let step_cycles = match total_cycles {
        Some(_) => marks
            .chunks_exact(2)
            .map(|m| match (m[0].1, m[1].1) {
                (Some(a), Some(b)) => Ok(b - a),
                _ => Err(bad("has marks without cycles and a total with them")),
            })
            .collect::<Result<_, _>>()?,
        None => Vec::new(),
    };
    Ok(Counts {
        step_instructions,
        total_instructions,
        step_cycles,
        total_cycles,
    })
}

/// The running counts of a plugin log at each marker store, in order (the instructions; a
/// line's estimated cycles, when it has them, are left out); lines that are not whole marks
/// (the end of a log cut short, without its newline) are left out.
pub(super) fn read_marks(text: &str) -> Vec<u64> {
    text.split_inclusive('\n')
        .filter_map(|line| {
            let mut words = line.strip_suffix('\n')?.split_whitespace();
            match (words.next(), words.next()) {
                (Some("kiln-insn"), Some(count)) => count.parse().ok(),
                _ => None,
            }
        })
        .collect()
}

/// `output_0.bin`, `output_1.bin`, … as the firmware wrote them.
fn read_outputs(dir: &Path) -> Result<Vec<Vec<u8>>, BoardError> {
    let mut outputs = Vec::new();
    loop {
        let path = dir.join(format!("output_{}.bin", outputs.len()));
        if !path.exists() {
            return Ok(outputs);
        }
        outputs.push(std::fs::read(&path).map_err(io_error(&path))?);
    }
}

/// A fresh folder under the system's temporary folder, removed when dropped.
pub(super) struct IoDir {
    pub(super) path: PathBuf,
}

impl IoDir {
    pub(super) fn new() -> Result<IoDir, BoardError> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("kiln-run-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).map_err(io_error(&path))?;
        Ok(IoDir { path })
    }
}

impl Drop for IoDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_pair_up_into_steps() {
        let dir = IoDir::new().unwrap();
        let log = dir.path.join("insn.log");
        std::fs::write(
            &log,
            "kiln-insn 100\nkiln-insn 160\nkiln-insn 170\nkiln-insn 270\n\
                              kiln-insn-total 900\n",
        )
        .unwrap();
        let counts = read_counts(&log, "b").unwrap();
        assert_eq!(counts.step_instructions, [60, 100]);
        assert_eq!(counts.total_instructions, 900);
        assert!(counts.step_cycles.is_empty());
        assert_eq!(counts.total_cycles, None);
        std::fs::write(&log, "kiln-insn 100\nkiln-insn-total 900\n").unwrap();
        assert!(read_counts(&log, "b").is_err());
    }

    #[test]
    fn cycles_pair_up_next_to_the_counts() {
        let dir = IoDir::new().unwrap();
        let log = dir.path.join("insn.log");
        let text = "kiln-insn 100 150\nkiln-insn 160 240\nkiln-insn 170 260\n\
                    kiln-insn 270 400\nkiln-insn-total 900 1300\n";
        std::fs::write(&log, text).unwrap();
        let counts = read_counts(&log, "b").unwrap();
        assert_eq!(counts.step_instructions, [60, 100]);
        assert_eq!(counts.total_instructions, 900);
        assert_eq!(counts.step_cycles, [90, 140]);
        assert_eq!(counts.total_cycles, Some(1300));
        // The batch path reads the instructions alone, and only of whole lines.
        assert_eq!(read_marks(text), [100, 160, 170, 270]);
        assert_eq!(read_marks("kiln-insn 100 150\nkiln-insn 16"), [100]);
        // Cycles in the total but not in a mark: the log is damaged.
        std::fs::write(
            &log,
            "kiln-insn 100\nkiln-insn 160 240\nkiln-insn-total 9 9\n",
        )
        .unwrap();
        assert!(read_counts(&log, "b").is_err());
        std::fs::write(&log, "kiln-insn 100 x\nkiln-insn 160\nkiln-insn-total 9\n").unwrap();
        assert!(read_counts(&log, "b").is_err());
    }

    #[test]
    fn the_core_comes_from_the_cpu_or_the_machine() {
        let board = |line: &str| BoardInfo {
            name: "b".into(),
            target: "t".into(),
            emulated: true,
            flash_bytes: 1,
            ram_bytes: 1,
            code_in_ram: false,
            qemu: Some(line.split_whitespace().map(String::from).collect()),
            probe_chip: None,
        };
        let core = |line: &str| Core::of(&board(line));
        assert_eq!(
            core("qemu-system-arm -machine mps2-an386 -cpu cortex-m4 -nographic -kernel"),
            Some(Core::M4)
        );
        assert_eq!(
            core("qemu-system-arm -machine mps2-an385 -cpu cortex-m3 -kernel"),
            Some(Core::M3)
        );
        assert_eq!(
            core("qemu-system-arm -machine mps2-an505 -cpu cortex-m33"),
            Some(Core::M33)
        );
        assert_eq!(
            core("qemu-system-arm -machine mps2-an500 -cpu cortex-m7"),
            Some(Core::M7)
        );
        assert_eq!(
            core("qemu-system-arm -machine microbit -nographic"),
            Some(Core::M0)
        );
        assert_eq!(
            core("qemu-system-riscv32 -machine virt -bios none -kernel"),
            None
        );
        let plugin = Path::new("/p/libinsn.so");
        assert_eq!(
            plugin_args(plugin, 0x2000_0000, Some(Core::M33)),
            "/p/libinsn.so,marker=0x20000000,core=m33"
        );
        assert_eq!(plugin_args(plugin, 16, None), "/p/libinsn.so,marker=0x10");
    }

    #[test]
    fn the_firmware_message_decides_the_error() {
        let status = Command::new("false").status().unwrap();
        let refused = "kiln: bundle refused: schedule is damaged: body CRC-32 0x1, header says 0x2";
        match failure("b", status, refused.into()) {
            BoardError::Refused { message, .. } => assert!(message.starts_with("schedule is")),
            other => panic!("{other}"),
        }
        match failure(
            "b",
            status,
            "kiln: cannot open input_0.bin on the host\n".into(),
        ) {
            BoardError::DeviceFailed { message, .. } => assert!(message.contains("input_0")),
            other => panic!("{other}"),
        }
        assert!(matches!(
            failure("b", status, "qemu: no such machine".into()),
            BoardError::Qemu { .. }
        ));
        assert_eq!(ran_steps("x\nkiln: ran 12 steps\n"), Some(12));
    }

    #[test]
    fn the_channel_has_stdio_to_itself() {
        let args = ["-machine", "microbit", "-nographic", "-kernel"].map(String::from);
        let line = channel_command_line(&args).join(" ");
        assert_eq!(
            line,
            "-machine microbit -display none -monitor none -serial null -kernel"
        );
    }

    #[test]
    fn the_channel_error_decides_the_error() {
        let failed = Command::new("false").status().unwrap();
        let ok = Command::new("true").status().unwrap();
        let device = |m: &str| Err(ChannelError::Device(m.into()));
        let refused = channel_session("b", failed, String::new(), device("bundle refused: x"));
        assert!(matches!(refused, Err(BoardError::Refused { message, .. }) if message == "x"));
        let failed_run = channel_session("b", failed, String::new(), device("run failed: y"));
        assert!(matches!(failed_run, Err(BoardError::DeviceFailed { .. })));
        let stderr = "kiln: channel: the host closed the console\n".to_string();
        let inputs = Err(ChannelError::Inputs("sizes".into()));
        let host = channel_session("b", failed, stderr.clone(), inputs);
        assert!(
            matches!(
                &host,
                Err(BoardError::Channel {
                    source: ChannelError::Inputs(sizes),
                    ..
                }) if sizes == "sizes"
            ),
            "{host:?}"
        );
        let closed = Err(ChannelError::Closed(String::new()));
        let device = channel_session("b", failed, stderr, closed);
        assert!(
            matches!(device, Err(BoardError::DeviceFailed { .. })),
            "{device:?}"
        );
        let early = channel_session("b", ok, String::new(), Err(ChannelError::Closed("".into())));
        assert!(early.is_err());
    }
}
