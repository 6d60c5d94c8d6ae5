//! Running an image on an emulated board: QEMU, with the board's command line, in a fresh I/O
//! folder (inputs in, outputs out, through semihosting files: see `boards/common`), with the
//! instruction-count plugin (`boards/qemu-plugin/insn.c`, built by `scripts/qemu-plugin.sh`)
//! watching the firmware's marker, which it stores to before and after each step.

use super::build::{on_path, BuiltImage};
use super::elf::Elf;
use super::{io_error, root, BoardError, BoardInfo};
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
    /// Wall-clock time QEMU ran.
    pub wall_time: Duration,
}

/// Runs `image` on the emulated `board` with `inputs` (raw little-endian, one per model input),
/// stopping QEMU after `timeout`. A bundle the firmware refuses is [`BoardError::Refused`] with
/// the firmware's own message.
pub fn run(
    board: &BoardInfo,
    image: &BuiltImage,
    inputs: &[Vec<u8>],
    timeout: Duration,
) -> Result<BoardRun, BoardError> {
    let qemu = emulator(board, image)?;
    let elf_bytes = std::fs::read(&image.elf).map_err(io_error(&image.elf))?;
    let elf = Elf::parse(&elf_bytes).map_err(|reason| BoardError::Image {
        path: image.elf.clone(),
        reason,
    })?;
    let io = IoDir::new()?;
    for (index, bytes) in inputs.iter().enumerate() {
        let path = io.path.join(format!("input_{index}.bin"));
        std::fs::write(&path, bytes).map_err(io_error(&path))?;
    }
    let log = io.path.join("insn.log");
    let mut command = Command::new(&qemu[0]);
    command.args(&qemu[1..]).arg(&image.elf);
    // A firmware that can never run a kernel has no marker, and nothing to count.
    let marker = elf.symbol("KILN_MARKER").map(|(address, _)| address);
    if let Some(address) = marker {
        let plugin = plugin()?;
        command
            .arg("-plugin")
            .arg(format!("{},marker={address:#x}", plugin.display()))
            .args(["-d", "plugin", "-D"])
            .arg(&log);
    }
    let started = Instant::now();
    let (status, output) = run_with_timeout(&mut command, &io.path, &board.name, timeout)?;
    let wall_time = started.elapsed();
    if !status.success() {
        return Err(failure(&board.name, status, output));
    }
    let (step_instructions, total_instructions) = match marker {
        Some(_) => read_counts(&log, &board.name)?,
        None => (Vec::new(), 0),
    };
    let steps = ran_steps(&output);
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
        outputs: read_outputs(&io.path)?,
        step_instructions,
        total_instructions,
        wall_time,
    })
}

/// The board's QEMU command line, once the image and the emulator are known to fit it.
fn emulator<'a>(board: &'a BoardInfo, image: &BuiltImage) -> Result<&'a [String], BoardError> {
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

/// The instruction-count plugin, built by `scripts/qemu-plugin.sh` if it is not up to date.
fn plugin() -> Result<PathBuf, BoardError> {
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

/// Runs `command` in `dir`, its output captured in files there; kills it after `timeout`.
fn run_with_timeout(
    command: &mut Command,
    dir: &Path,
    board: &str,
    timeout: Duration,
) -> Result<(std::process::ExitStatus, String), BoardError> {
    let [out, err] = ["qemu.stdout", "qemu.stderr"].map(|f| dir.join(f));
    let file = |p: &Path| std::fs::File::create(p).map_err(io_error(p));
    let mut child = command
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(file(&out)?)
        .stderr(file(&err)?)
        .spawn()
        .map_err(io_error(Path::new(command.get_program())))?;
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(status) = child.try_wait().map_err(io_error(dir))? {
            break status;
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
    };
    let read = |p: &Path| std::fs::read(p).map_err(io_error(p));
    let mut output = String::from_utf8_lossy(&read(&out)?).into_owned();
    output.push_str(&String::from_utf8_lossy(&read(&err)?));
    Ok((status, output))
}

/// The error of a run that did not succeed: the firmware's message when it left one.
fn failure(board: &str, status: std::process::ExitStatus, output: String) -> BoardError {
    let message = output
        .lines()
        .find_map(|l| l.split_once("kiln: ").map(|(_, m)| m.trim().to_string()));
    let board = board.to_string();
    match message {
        Some(m) => match m.strip_prefix("bundle refused: ") {
            Some(reason) => BoardError::Refused {
                board,
                message: reason.to_string(),
            },
            None => BoardError::DeviceFailed { board, message: m },
        },
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

/// The plugin's log: the running count at each marker store (before and after each step), then
/// the total. Returns each step's instructions and the total.
fn read_counts(log: &Path, board: &str) -> Result<(Vec<u64>, u64), BoardError> {
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
        let (Some(label), Some(count)) = (words.next(), words.next()) else {
            continue;
        };
        let count: u64 = count
            .parse()
            .map_err(|_| bad("has a count that is no number"))?;
        match label {
            "kiln-insn" => marks.push(count),
            "kiln-insn-total" => total = Some(count),
            _ => {}
        }
    }
    if !marks.len().is_multiple_of(2) {
        return Err(bad("has a step that began and did not end"));
    }
    let steps = marks.chunks_exact(2).map(|m| m[1] - m[0]).collect();
    Ok((steps, total.ok_or_else(|| bad("has no total"))?))
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
struct IoDir {
    path: PathBuf,
}

impl IoDir {
    fn new() -> Result<IoDir, BoardError> {
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
        assert_eq!(read_counts(&log, "b").unwrap(), (vec![60, 100], 900));
        std::fs::write(&log, "kiln-insn 100\nkiln-insn-total 900\n").unwrap();
        assert!(read_counts(&log, "b").is_err());
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
}
