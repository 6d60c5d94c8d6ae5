//! QEMU as a process: the instruction-count plugin, timeouts, captured output, and the error
//! a failed run gives.

use super::*;

/// The instruction-count plugin, built by `scripts/qemu-plugin.sh` if it is not up to date.
pub(in crate::board) fn plugin() -> Result<PathBuf, BoardError> {
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
pub(in crate::board) fn wait_or_kill(
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
pub(in crate::board) fn run_with_timeout(
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
pub(in crate::board) fn captured(dir: &Path) -> [PathBuf; 2] {
    ["qemu.stdout", "qemu.stderr"].map(|f| dir.join(f))
}

/// Starts `command` in `dir`, its output captured in files there.
pub(in crate::board) fn spawn_captured(
    command: &mut Command,
    dir: &Path,
) -> Result<std::process::Child, BoardError> {
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
pub(in crate::board) fn read_captured(dir: &Path) -> Result<String, BoardError> {
    let [out, err] = captured(dir);
    let read = |p: &Path| std::fs::read(p).map_err(io_error(p));
    let mut output = String::from_utf8_lossy(&read(&out)?).into_owned();
    output.push_str(&String::from_utf8_lossy(&read(&err)?));
    Ok(output)
}

/// The error of a run that did not succeed: the firmware's message when it left one.
pub(in crate::board) fn failure(
    board: &str,
    status: std::process::ExitStatus,
    output: String,
) -> BoardError {
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
