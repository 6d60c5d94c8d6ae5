//! Building a board's binary with a bundle linked in: the board's crate, built by
//! `scripts/toolchain-cargo.sh` (which picks the Rust toolchain for the target) with
//! `KILN_BUNDLE_DIR` naming the bundle, into the board's own target dir so that rebuilds are
//! incremental. The image is copied out of cargo's output, so that the next build of the same
//! board (another bundle) does not replace it, and measured.

use super::elf::Elf;
use super::{io_error, root, BoardError, BoardFiles, BoardInfo};
use kiln_codegen::bundle::{KERNELS_FILE, SCHEDULE_FILE, WEIGHTS_FILE};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

/// Lines of the build's output an error keeps.
const TAIL_LINES: usize = 30;

/// Variables of the caller's environment that are about the host and would change or break a
/// board build: flags and compilers for the host, and cargo settings that override the board's.
const HOST_VARIABLES: &[&str] = &[
    "KILN_ARENA_BYTES",
    "KILN_BATCH_DIR",
    "RUSTFLAGS",
    "CARGO_ENCODED_RUSTFLAGS",
    "CARGO_BUILD_RUSTFLAGS",
    "CARGO_BUILD_TARGET",
    "CARGO_BUILD_TARGET_DIR",
    "CARGO_TARGET_DIR",
    "CARGO_MAKEFLAGS",
    "MAKEFLAGS",
    "MFLAGS",
    "RUSTC",
    "RUSTDOC",
    "RUSTC_WRAPPER",
    "RUSTC_WORKSPACE_WRAPPER",
    "CC",
    "CFLAGS",
    "AR",
];

/// One board build at a time in this process: builds of one board share its target dir, and an
/// image must be copied out before the next build replaces it.
static BUILDING: Mutex<()> = Mutex::new(());

/// A board binary with a bundle linked in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuiltImage {
    pub board: String,
    /// The ELF image, a copy that later builds leave alone.
    pub elf: PathBuf,
    /// Bytes in flash: code, read-only data (weights and schedule), initial values of `.data`.
    pub flash_used: usize,
    /// Bytes of static RAM: the arena and the runtime's statics (the stack comes on top).
    pub ram_used: usize,
    /// Bytes of the arena alone.
    pub arena_bytes: usize,
}

/// How to build a board image beyond the bundle itself.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BuildOptions {
    /// Size the static arena to this many bytes instead of what the bundle's plan asks for
    /// (to test that the device refuses a bundle its arena cannot hold).
    pub arena_bytes: Option<usize>,
    /// Build an emulated board's firmware with its `rtt` feature: the test-vector channel and
    /// defmt over RTT, as on a real board (for [`Io::Rtt`](super::Io::Rtt)). Real boards always
    /// speak RTT.
    pub rtt: bool,
}

/// [`build_with_progress`] without progress.
pub fn build(board: &BoardInfo, bundle_dir: &Path) -> Result<BuiltImage, BoardError> {
    build_with_progress(board, bundle_dir, &mut |_| {})
}

/// [`build_with_options`] with the default options.
pub fn build_with_progress(
    board: &BoardInfo,
    bundle_dir: &Path,
    progress: &mut dyn FnMut(&str),
) -> Result<BuiltImage, BoardError> {
    build_with_options(board, bundle_dir, BuildOptions::default(), progress)
}

/// Builds `board`'s binary with the bundle in `bundle_dir` (as [`Bundle::write`] leaves it)
/// and measures the image. `progress` gets each line cargo prints (`Compiling …`); a clean
/// build takes a minute or two, a rebuild for another bundle seconds.
///
/// [`Bundle::write`]: kiln_codegen::bundle::Bundle::write
pub fn build_with_options(
    board: &BoardInfo,
    bundle_dir: &Path,
    options: BuildOptions,
    progress: &mut dyn FnMut(&str),
) -> Result<BuiltImage, BoardError> {
    build_image(board, bundle_dir, options, None, progress)
}

/// Builds `board`'s binary with the bundle in `bundle_dir`, or, given `batch_dir` (a folder of
/// `case_NNN/` bundles, see `kiln-board-build`), its batch binary with those bundles.
pub(super) fn build_image(
    board: &BoardInfo,
    bundle_dir: &Path,
    options: BuildOptions,
    batch_dir: Option<&Path>,
    progress: &mut dyn FnMut(&str),
) -> Result<BuiltImage, BoardError> {
    let files = BoardFiles::read(&board.name)?;
    let bundle_dir = std::fs::canonicalize(bundle_dir).map_err(io_error(bundle_dir))?;
    let kernels = bundle_dir.join(KERNELS_FILE);
    let kernels_c = std::fs::read_to_string(&kernels).map_err(io_error(&kernels))?;
    if let Some(reason) = super::unsupported_kernels(board, &kernels_c) {
        let board = board.name.clone();
        return Err(BoardError::Unsupported {
            board,
            reason: reason.into(),
        });
    }
    let rtt_feature = options.rtt && board.emulated;
    if rtt_feature && !files.has_feature("rtt") {
        return Err(BoardError::Unsupported {
            board: board.name.clone(),
            reason: "its firmware has no `rtt` feature: run it with --io files or channel".into(),
        });
    }
    let mut bundle_key =
        bundle_key(&bundle_dir)? ^ options.arena_bytes.map_or(0, |n| n as u32 ^ 0x5a5a_5a5a);
    let binary = match batch_dir {
        None => files.name.clone(),
        Some(dir) => {
            bundle_key ^= batch_key(dir)?;
            format!("{}-batch", files.name)
        }
    };
    let image_name = match rtt_feature {
        true => format!("{binary}-rtt"),
        false => binary.clone(),
    };
    check_toolchain(&files)?;
    let target_dir = files.target_dir();
    let built = target_dir.join(&files.target).join("release").join(&binary);
    let images = target_dir.join("images");
    let elf = images.join(format!("{image_name}-{bundle_key:08x}.elf"));

    let _one_at_a_time = BUILDING.lock().unwrap_or_else(|e| e.into_inner());
    let mut cargo = toolchain_cargo(&files.target);
    cargo
        .args([
            "build",
            "--release",
            "--bin",
            binary.as_str(),
            "--target-dir",
        ])
        .arg(&target_dir)
        .current_dir(&files.dir)
        .env("KILN_BUNDLE_DIR", &bundle_dir)
        .env("CARGO_TERM_PROGRESS_WHEN", "never")
        .env("CARGO_TERM_COLOR", "never");
    if let Some(n) = options.arena_bytes {
        cargo.env("KILN_ARENA_BYTES", n.to_string());
    }
    if rtt_feature {
        cargo
            .args(["--no-default-features", "--features", "rtt"])
            .env("DEFMT_LOG", "info");
    }
    if let Some(dir) = batch_dir {
        cargo.env("KILN_BATCH_DIR", dir);
    }
    let (status, tail) = run_streaming(&mut cargo, progress)?;
    if !status.success() {
        let tail = tail.into_iter().collect::<Vec<_>>().join("\n");
        return Err(build_error(&board.name, status.to_string(), tail));
    }
    // Copied, then renamed over an older copy: a run still reading that one keeps its file.
    std::fs::create_dir_all(&images).map_err(io_error(&images))?;
    let partial = images.join(format!(".{binary}-{}.partial", std::process::id()));
    std::fs::copy(&built, &partial).map_err(io_error(&built))?;
    std::fs::rename(&partial, &elf).map_err(io_error(&elf))?;
    drop(_one_at_a_time);
    measure(&board.name, elf)
}

/// Reads an image's sizes.
pub(super) fn measure(board: &str, elf: PathBuf) -> Result<BuiltImage, BoardError> {
    let bytes = std::fs::read(&elf).map_err(io_error(&elf))?;
    let parsed = Elf::parse(&bytes).map_err(|reason| BoardError::Image {
        path: elf.clone(),
        reason,
    })?;
    Ok(BuiltImage {
        board: board.to_string(),
        flash_used: parsed.flash_bytes(),
        ram_used: parsed.ram_bytes(),
        arena_bytes: parsed.symbol_size_ending("ARENA").unwrap_or(0) as usize,
        elf,
    })
}

/// `scripts/toolchain-cargo.sh TARGET`, ready for cargo's arguments.
fn toolchain_cargo(target: &str) -> Command {
    let mut command = Command::new("bash");
    command
        .arg(root().join("scripts/toolchain-cargo.sh"))
        .arg(target);
    for variable in HOST_VARIABLES {
        command.env_remove(variable);
    }
    command
}

/// Checks, before a long build fails on it, that a Rust toolchain builds for the board's target
/// and that its linker is there.
fn check_toolchain(files: &BoardFiles) -> Result<(), BoardError> {
    let output = toolchain_cargo(&files.target)
        .arg("--version")
        .output()
        .map_err(io_error(Path::new("bash")))?;
    if !output.status.success() {
        return Err(BoardError::ToolchainMissing {
            what: format!("no Rust toolchain builds for {}", files.target),
            detail: String::from_utf8_lossy(&output.stderr).trim().to_string(),
        });
    }
    match files.linker() {
        Some(linker) if !on_path(linker) => Err(BoardError::ToolchainMissing {
            what: format!("the linker `{linker}` of board {} is missing", files.name),
            detail: String::new(),
        }),
        _ => Ok(()),
    }
}

/// A failed build, unless its output says a tool was missing.
fn build_error(board: &str, status: String, tail: String) -> BoardError {
    let missing = tail.lines().find(|l| {
        l.contains("failed to find tool") || (l.contains("linker `") && l.contains("not found"))
    });
    match missing {
        Some(line) => BoardError::ToolchainMissing {
            what: format!("building {board} needs a tool that is missing"),
            detail: line.trim().to_string(),
        },
        None => BoardError::BuildFailed {
            board: board.to_string(),
            status,
            tail,
        },
    }
}

/// Runs `command`, handing each line of its standard error to `progress` as it comes; returns
/// the exit status and the last lines.
fn run_streaming(
    command: &mut Command,
    progress: &mut dyn FnMut(&str),
) -> Result<(std::process::ExitStatus, VecDeque<String>), BoardError> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(io_error(Path::new("bash")))?;
    let mut tail = VecDeque::with_capacity(TAIL_LINES);
    if let Some(stderr) = child.stderr.take() {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            progress(line.trim());
            if is_noise(&line) {
                continue;
            }
            if tail.len() == TAIL_LINES {
                tail.pop_front();
            }
            tail.push_back(line);
        }
    }
    let status = child.wait().map_err(io_error(Path::new("bash")))?;
    Ok((status, tail))
}

/// Lines of a failed build that say nothing about the failure: the `cc` crate's echo of every
/// variable it looked at (`CFLAGS = None`) and build-script directives.
fn is_noise(line: &str) -> bool {
    let line = line.trim();
    let echo = line.split_once(" = ").is_some_and(|(name, value)| {
        !name.contains(' ') && (value == "None" || value.starts_with("Some("))
    });
    echo || line.starts_with("cargo:rerun-if-")
        || line.starts_with("cargo:rustc-")
        || line.is_empty()
}

/// Whether `program` is an executable file: a path, or a name found on `PATH`.
pub(super) fn on_path(program: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let executable = |path: &Path| {
        path.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        return executable(Path::new(program));
    }
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|d| executable(&d.join(program))))
}

/// A CRC-32 of the bundle's files, to name its image.
fn bundle_key(dir: &Path) -> Result<u32, BoardError> {
    let mut all = Vec::new();
    for file in [KERNELS_FILE, SCHEDULE_FILE, WEIGHTS_FILE] {
        let path = dir.join(file);
        let bytes = std::fs::read(&path).map_err(io_error(&path))?;
        all.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        all.extend_from_slice(&bytes);
    }
    Ok(kiln_firmware::schedule::checksum(&all))
}

/// The checksum of every case bundle in a batch folder, in case order.
fn batch_key(dir: &Path) -> Result<u32, BoardError> {
    let mut cases: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(io_error(dir))?
        .flatten()
        .map(|e| e.path())
        .collect();
    cases.sort();
    let mut all = Vec::new();
    for case in cases {
        all.extend_from_slice(&bundle_key(&case)?.to_le_bytes());
    }
    Ok(kiln_firmware::schedule::checksum(&all))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_tool_is_not_a_build_failure() {
        let cc =
            "  error occurred in cc-rs: failed to find tool \"arm-none-eabi-gcc\": No such file";
        assert!(matches!(
            build_error("b", "1".into(), cc.into()),
            BoardError::ToolchainMissing { .. }
        ));
        let ld = "error: linker `ld.lld` not found";
        assert!(matches!(
            build_error("b", "1".into(), ld.into()),
            BoardError::ToolchainMissing { .. }
        ));
        let c = "kernels.c:3:1: error: unknown type name 'x'";
        assert!(matches!(
            build_error("b", "1".into(), c.into()),
            BoardError::BuildFailed { .. }
        ));
    }

    #[test]
    fn the_cc_crates_echo_is_noise() {
        assert!(is_noise("  CFLAGS_thumbv7em_none_eabihf = None"));
        assert!(is_noise("  CC_thumbv6m-none-eabi = Some(\"clang\")"));
        assert!(is_noise("cargo:rerun-if-env-changed=CFLAGS"));
        assert!(!is_noise(
            "cargo:warning=kernels.c:36:1: error: unknown type name 'this'"
        ));
        assert!(!is_noise("error: could not compile `kiln-board` (lib)"));
    }
}
