//! An image Kiln did not build (another stack's, for a comparison), run the way Kiln's own
//! run: under the board's QEMU command line, the instruction-count plugin counting by the
//! image's stores to its `KILN_MARKER` word, with the estimate of the board's core.

use super::elf::Elf;
use super::qemu::{installed_qemu, plugin, plugin_args, read_marks, run_with_timeout, Core, IoDir};
use super::{io_error, BoardError, BoardInfo};
use std::path::Path;
use std::process::{Command, ExitStatus};
use std::time::Duration;

/// What one run of an image gave.
#[derive(Clone, Debug)]
pub struct MarkedRun {
    /// How QEMU exited: the image's own status through semihosting.
    pub status: ExitStatus,
    /// What the image and QEMU wrote, standard output first.
    pub output: String,
    /// The running (instructions, estimated cycles) at each store to the marker, in order; the
    /// cycles where the board's core has an estimate.
    pub marks: Vec<(u64, Option<u64>)>,
}

/// Runs the image `elf` once on the emulated `board`, for at most `timeout`.
pub fn run_marked(
    board: &BoardInfo,
    elf: &Path,
    timeout: Duration,
) -> Result<MarkedRun, BoardError> {
    let image = |reason: String| BoardError::Image {
        path: elf.to_path_buf(),
        reason,
    };
    let bytes = std::fs::read(elf).map_err(io_error(elf))?;
    let parsed = Elf::parse(&bytes).map_err(image)?;
    let Some((marker, _)) = parsed.symbol("KILN_MARKER") else {
        return Err(image("it has no KILN_MARKER to count by".into()));
    };
    let qemu = installed_qemu(board, elf)?;
    let io = IoDir::new()?;
    let log = io.path.join("insn.log");
    let mut command = Command::new(&qemu[0]);
    command
        .arg("-plugin")
        .arg(plugin_args(&plugin()?, marker, Core::of(board)))
        .args(["-d", "plugin", "-D"])
        .arg(&log)
        .args(&qemu[1..])
        .arg(elf);
    let (status, output) = run_with_timeout(&mut command, &io.path, &board.name, timeout)?;
    let text = std::fs::read_to_string(&log).map_err(io_error(&log))?;
    Ok(MarkedRun {
        status,
        output,
        marks: read_marks(&text),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file that is no image, or an image without a marker, is an error naming the file.
    #[test]
    fn an_image_without_a_marker_is_refused_by_name() {
        let board = super::super::info("qemu-an386").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("not-an-image.elf");
        std::fs::write(&path, b"not an ELF image").unwrap();
        let err = run_marked(&board, &path, Duration::from_secs(5)).unwrap_err();
        assert!(err.to_string().contains("not-an-image.elf"), "{err}");
    }
}
