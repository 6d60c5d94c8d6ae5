//! Boards: what `kiln run --board …` needs to put a bundle on one. A board is a folder of
//! `boards/` with a `.cargo/config.toml` (its target, and its runner: QEMU for an emulated
//! board, `probe-rs run` for a real one) and a `memory.x`; everything here is read from those
//! files, never from a table of its own.
//!
//! The steps, each a function, so that a caller can report between them:
//! [`info`] → [`check_fits`] (before building: does the bundle fit the board's memory?) →
//! [`build`] (the board binary with the bundle linked in, measured) → [`run`] (under QEMU,
//! inputs and outputs through semihosting files or, with [`run_with_options`], the test-vector
//! channel of [`channel`]; instructions counted per step, and cycles estimated per step from
//! the core's published instruction timings where the board's core has them, see [`Core`]).
//!
//! The tools come from `scripts/`: `toolchain-cargo.sh` picks the Rust toolchain for a target
//! and `qemu-plugin.sh` builds the instruction counter; `setup-toolchain.sh` installs both
//! what they need and the emulators.

pub mod batch;
mod build;
pub mod channel;
mod config;
mod elf;
mod fit;
mod foreign;
pub mod gdb;
pub mod measure;
#[cfg(feature = "probe")]
pub mod probe;
mod qemu;
pub mod rtt;

pub use batch::{
    run_batches, run_batches_counted, run_batches_on_probes, run_batches_with, BatchIo, CaseRun,
    CountedOutcome,
};
pub use build::{build, build_with_options, build_with_progress, BuildOptions, BuiltImage};
pub use elf::Elf;
pub use fit::{bytes_text, check_fits, Fit, Memory, Need};
pub use foreign::{run_marked, MarkedRun};
pub use qemu::{
    run, run_invocations, run_invocations_with_options, run_with_options, BoardRun, Core, Io,
    RunOptions,
};

use kiln_codegen::Cpu;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The script that installs what boards need; named by every "missing" error.
pub const SETUP_SCRIPT: &str = "scripts/setup-toolchain.sh";

/// A board, as its folder describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoardInfo {
    /// The folder's name: `qemu-an386`.
    pub name: String,
    /// The Rust target triple: `thumbv7em-none-eabihf`.
    pub target: String,
    /// Its CPU, as its config names it (`KILN_CPU`).
    pub cpu: Cpu,
    /// Runs under QEMU (else under a debug probe).
    pub emulated: bool,
    /// Bytes of the memory the code and weights go to.
    pub flash_bytes: usize,
    /// Bytes of the memory the arena, statics and stack go to.
    pub ram_bytes: usize,
    /// Code and data share one memory (`flash_bytes == ram_bytes`, counted once): QEMU's
    /// RISC-V `virt` board, which loads everything into RAM.
    pub code_in_ram: bool,
    /// The QEMU command line that runs an image appended to it (emulated boards).
    pub qemu: Option<Vec<String>>,
    /// The chip `probe-rs run --chip` flashes (real boards).
    pub probe_chip: Option<String>,
}

impl BoardInfo {
    /// Its program runs on an operating system (a Linux program, [`Cpu::hosted`]), under a
    /// user-mode QEMU when emulated.
    pub fn hosted(&self) -> bool {
        self.cpu.hosted()
    }

    /// The target its kernels are generated for: its CPU's ([`Target::for_cpu`]), as a build
    /// script building for that CPU would.
    ///
    /// [`Target::for_cpu`]: kiln_codegen::target::Target::for_cpu
    pub fn kernel_target(&self) -> kiln_codegen::target::Target {
        kiln_codegen::target::Target::for_cpu(self.cpu)
    }
}

/// Why a board could not build or run a bundle.
#[derive(Debug, thiserror::Error)]
pub enum BoardError {
    #[error("there is no board `{name}`; the boards are: {}", known.join(", "))]
    UnknownBoard { name: String, known: Vec<String> },
    #[error("board {board}: cannot read {}: {reason}", file.display())]
    Config {
        board: String,
        file: PathBuf,
        reason: String,
    },
    #[error("board {board}: cannot read {}", file.display())]
    ConfigIo {
        board: String,
        file: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{board} is a real board, not an emulated one: connect it through a debug probe and \
         run `{command}`"
    )]
    NotEmulated { board: String, command: String },
    #[error("{what}: run {SETUP_SCRIPT} to install it{}", detail_line(detail))]
    ToolchainMissing { what: String, detail: String },
    #[error("{}", fit::describe_too_big(board, needs))]
    TooBig { board: String, needs: Vec<Need> },
    #[error("building {board} failed ({status}); the end of its output:\n{tail}")]
    BuildFailed {
        board: String,
        status: String,
        tail: String,
    },
    #[error("{board} refused the bundle: {message}")]
    Refused { board: String, message: String },
    #[error("the firmware on {board} failed: {message}")]
    DeviceFailed { board: String, message: String },
    #[error("{}", no_probe(board, serial.as_deref(), found))]
    NoProbe {
        board: String,
        serial: Option<String>,
        found: Vec<String>,
    },
    #[error(
        "{} debug probes are attached ({}): name the one wired to {board} with --probe SERIAL",
        found.len(),
        found.join(", ")
    )]
    SeveralProbes { board: String, found: Vec<String> },
    #[error("{board} on probe {probe}: {step} failed: {reason}")]
    Probe {
        board: String,
        probe: String,
        step: String,
        reason: String,
    },
    #[error("{board} is an emulated board: it runs under QEMU, not through a debug probe")]
    NotReal { board: String },
    #[error(
        "{board} is a real board: this kiln was built without probe support (feature `probe` \
         of kiln-cli, on by default)"
    )]
    NoProbeSupport { board: String },
    #[error("RTT on {board} failed")]
    Rtt {
        board: String,
        #[source]
        source: rtt::RttError,
    },
    #[error("the test-vector channel to {board} failed")]
    Channel {
        board: String,
        #[source]
        source: channel::ChannelError,
    },
    #[error("{board} did not finish within {} s; it was stopped", timeout.as_secs_f64())]
    Timeout { board: String, timeout: Duration },
    #[error("QEMU failed on {board} ({status}):\n{output}")]
    Qemu {
        board: String,
        status: String,
        output: String,
    },
    #[error("{}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: {reason}", path.display())]
    Image { path: PathBuf, reason: String },
    /// A bundle could not be written into an image's folder.
    #[error("{}", path.display())]
    Bundle {
        path: PathBuf,
        #[source]
        source: kiln_codegen::bundle::PackError,
    },
    #[error("{board} cannot run this model: {reason}")]
    Unsupported { board: String, reason: String },
    #[error("{board} is not emulated: kernels are measured only under QEMU")]
    NotMeasurable { board: String },
    #[error("the candidates of kernel {kernel} make no bundle to measure")]
    Candidates {
        kernel: String,
        #[source]
        source: kiln_codegen::bundle::PackError,
    },
}

impl BoardError {
    /// The error of a firmware that said `message` (`bundle refused: …`, `run failed: …`).
    pub fn from_device(board: String, message: String) -> BoardError {
        match message.strip_prefix("bundle refused: ") {
            Some(reason) => BoardError::Refused {
                board,
                message: reason.to_string(),
            },
            None => BoardError::DeviceFailed { board, message },
        }
    }
}

/// The address of the RTT control block (`_SEGGER_RTT`) of `image`, which the host's RTT
/// ([`rtt`]) reads and writes.
pub(crate) fn rtt_control_block(image: &BuiltImage) -> Result<u32, BoardError> {
    let bytes = std::fs::read(&image.elf).map_err(io_error(&image.elf))?;
    let elf = elf::Elf::parse(&bytes).map_err(|reason| BoardError::Image {
        path: image.elf.clone(),
        reason,
    })?;
    let (address, _) = elf.symbol("_SEGGER_RTT").ok_or_else(|| BoardError::Image {
        path: image.elf.clone(),
        reason: "has no RTT control block (`_SEGGER_RTT`): an emulated board's firmware speaks \
                 RTT only when built with its `rtt` feature (BuildOptions::rtt)"
            .into(),
    })?;
    Ok(address)
}

/// Why `board` cannot build kernels `kernels_c`, if it cannot: GCC for RISC-V has no
/// `_Float16` (GCC for Arm has it with `-mfp16-format=ieee`, which the board build gives it).
pub fn unsupported_kernels(board: &BoardInfo, kernels_c: &str) -> Option<&'static str> {
    (board.target.starts_with("riscv") && kernels_c.contains("_Float16"))
        .then_some("it has float16 tensors, and the board's C compiler has no _Float16")
}

fn no_probe(board: &str, serial: Option<&str>, found: &[String]) -> String {
    let attached = match found {
        [] => "no probe is attached".to_string(),
        found => format!("attached: {}", found.join(", ")),
    };
    match serial {
        Some(serial) => format!("no debug probe with serial {serial} for {board}; {attached}"),
        None => format!(
            "no debug probe is attached for {board}: connect the board's debug USB port, and \
             check that this user may open it (probe-rs's udev rules)"
        ),
    }
}

fn detail_line(detail: &str) -> String {
    if detail.is_empty() {
        String::new()
    } else {
        format!("\n{detail}")
    }
}

/// An I/O error on `path`.
pub(crate) fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> BoardError + '_ {
    move |source| BoardError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The repository root: `$KILN_ROOT`, else the one this crate (`codegen/runners`) was built in.
pub fn root() -> PathBuf {
    let root = match std::env::var_os("KILN_ROOT") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."),
    };
    std::fs::canonicalize(&root).unwrap_or(root)
}

/// The folder of every board: `boards/` under [`root`].
pub fn boards_dir() -> PathBuf {
    root().join("boards")
}

/// Names of the board folders (those with a `.cargo/config.toml` and a `memory.x`; the
/// examples of users' own crates there pick their memory map in their build scripts), sorted.
pub fn names() -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(boards_dir()) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .flatten()
        .filter(|e| e.path().join(".cargo/config.toml").is_file())
        .filter(|e| e.path().join("memory.x").is_file())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort();
    names
}

/// Every board whose files can be read, sorted by name; [`info`] says what is wrong with one
/// that is missing.
pub fn list() -> Vec<BoardInfo> {
    names().iter().filter_map(|n| info(n).ok()).collect()
}

/// The board named `name`, read from its folder.
pub fn info(name: &str) -> Result<BoardInfo, BoardError> {
    let known = names();
    if !known.iter().any(|n| n == name) {
        return Err(BoardError::UnknownBoard {
            name: name.to_string(),
            known,
        });
    }
    let files = BoardFiles::read(name)?;
    let runner = files
        .runner()
        .map(|r| r.split_whitespace().map(str::to_string).collect::<Vec<_>>());
    // `qemu-system-arm`, or a user-mode QEMU (`qemu-aarch64`) for a hosted board.
    let emulated = runner
        .as_ref()
        .and_then(|r| r.first())
        .is_some_and(|program| program.starts_with("qemu-"));
    let probe_chip = runner
        .as_ref()
        .filter(|r| r.first().is_some_and(|p| p == "probe-rs"))
        .and_then(|r| {
            r.iter()
                .position(|a| a == "--chip")
                .and_then(|i| r.get(i + 1))
                .cloned()
        });
    let memory =
        config::memory_map(&files.memory_x).map_err(|reason| files.error("memory.x", reason))?;
    let cpu = files.cpu()?;
    Ok(BoardInfo {
        name: name.to_string(),
        target: files.target.clone(),
        cpu,
        emulated,
        flash_bytes: memory.flash_bytes,
        ram_bytes: memory.ram_bytes,
        code_in_ram: memory.code_in_ram,
        qemu: runner.filter(|_| emulated),
        probe_chip,
    })
}

/// A board's folder and the files it is described by.
pub(crate) struct BoardFiles {
    pub name: String,
    pub dir: PathBuf,
    pub target: String,
    pub config: config::CargoConfig,
    pub memory_x: String,
}

impl BoardFiles {
    pub fn read(name: &str) -> Result<BoardFiles, BoardError> {
        let dir = boards_dir().join(name);
        let read = |file: &str| {
            std::fs::read_to_string(dir.join(file)).map_err(|source| BoardError::ConfigIo {
                board: name.to_string(),
                file: dir.join(file),
                source,
            })
        };
        let config = config::CargoConfig::parse(&read(".cargo/config.toml")?);
        let memory_x = read("memory.x")?;
        let mut files = BoardFiles {
            name: name.to_string(),
            dir: dir.clone(),
            target: String::new(),
            config,
            memory_x,
        };
        files.target = match files.config.get("build.target") {
            Some(target) => target.to_string(),
            None => return Err(files.error(".cargo/config.toml", "no [build] target".into())),
        };
        Ok(files)
    }

    /// Whether the board's crate has feature `feature` (a line `feature = …` of its
    /// `Cargo.toml`'s `[features]`).
    pub fn has_feature(&self, feature: &str) -> bool {
        let manifest = std::fs::read_to_string(self.dir.join("Cargo.toml")).unwrap_or_default();
        manifest
            .split_once("\n[features]")
            .is_some_and(|(_, features)| {
                features
                    .lines()
                    .take_while(|l| !l.starts_with('['))
                    .any(|l| l.split('=').next().map(str::trim) == Some(feature))
            })
    }

    pub fn runner(&self) -> Option<&str> {
        self.config.get(&format!("target.{}.runner", self.target))
    }

    pub fn linker(&self) -> Option<&str> {
        self.config.get(&format!("target.{}.linker", self.target))
    }

    /// The board's target dir: its config's `build.target-dir` (relative to the board's
    /// folder), else `target/boards/<board>` under the root.
    pub fn target_dir(&self) -> PathBuf {
        match self.config.get("build.target-dir") {
            Some(dir) => self.dir.join(dir),
            None => root().join("target/boards").join(&self.name),
        }
    }

    /// The CPU its config names (`[env] KILN_CPU`), which must build for its target.
    pub fn cpu(&self) -> Result<Cpu, BoardError> {
        config::cpu_of(&self.config, &self.target)
            .map_err(|reason| self.error(".cargo/config.toml", reason))
    }

    pub fn error(&self, file: &str, reason: String) -> BoardError {
        BoardError::Config {
            board: self.name.clone(),
            file: self.dir.join(file),
            reason,
        }
    }
}
