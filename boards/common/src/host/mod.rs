//! The host a board's firmware talks to: file names, I/O errors, and the console, files and
//! exit of the board's way of reaching it: semihosting on bare metal ([`semihosting`]), the
//! operating system's own on a hosted board (feature `std`, [`process`]).

use core::fmt::{self, Write};

#[cfg(not(feature = "std"))]
mod semihosting;
#[cfg(not(feature = "std"))]
pub use semihosting::*;

#[cfg(feature = "std")]
mod process;
#[cfg(feature = "std")]
pub use process::*;

/// A file name on the host (`input_<i>.bin`, `output_<i>.bin`, …), NUL-terminated for
/// semihosting.
#[derive(Clone, Copy)]
pub struct FileName {
    pub(super) bytes: [u8; 24],
    pub(super) len: usize,
}

impl FileName {
    pub fn input(index: usize) -> Self {
        Self::format(format_args!("input_{index}.bin"))
    }

    pub fn output(index: usize) -> Self {
        Self::format(format_args!("output_{index}.bin"))
    }

    /// `s<k>_run.bin`: invocation `k` of a streamed run is asked for (empty), after a reset of
    /// the state (one byte).
    pub fn invocation(k: usize) -> Self {
        Self::format(format_args!("s{k}_run.bin"))
    }

    /// `s<k>_input_<index>.bin`: an input of invocation `k`.
    pub fn invocation_input(k: usize, index: usize) -> Self {
        Self::format(format_args!("s{k}_input_{index}.bin"))
    }

    /// `s<k>_output_<index>.bin`.
    pub fn invocation_output(k: usize, index: usize) -> Self {
        Self::format(format_args!("s{k}_output_{index}.bin"))
    }

    /// `c<case>_input_<index>.bin`: an input of one case of a batch image.
    pub fn case_input(case: usize, index: usize) -> Self {
        Self::format(format_args!("c{case}_input_{index}.bin"))
    }

    /// `c<case>_output_<index>.bin`.
    pub fn case_output(case: usize, index: usize) -> Self {
        Self::format(format_args!("c{case}_output_{index}.bin"))
    }

    /// `c<case>_runs.bin`: where a case runs its model more than once on its inputs (a
    /// stateful op's case), one byte per run.
    pub fn case_runs(case: usize) -> Self {
        Self::format(format_args!("c{case}_runs.bin"))
    }

    pub(super) fn format(args: fmt::Arguments) -> Self {
        let mut name = FileName {
            bytes: [0; 24],
            len: 0,
        };
        // Cases are below 10,000 and indices below 256: the names fit, and one byte stays
        // for the NUL.
        let _ = name.write_fmt(args);
        name
    }

    pub(super) fn as_str(&self) -> &str {
        core::str::from_utf8(&self.bytes[..self.len]).unwrap_or("?")
    }
}

impl Write for FileName {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len + s.len();
        if end >= self.bytes.len() {
            return Err(fmt::Error);
        }
        self.bytes[self.len..end].copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

impl fmt::Display for FileName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failed file operation on the host.
#[derive(Clone, Copy)]
pub enum IoError {
    Open {
        name: FileName,
    },
    Size {
        name: FileName,
        found: usize,
        expected: usize,
    },
    Read {
        name: FileName,
    },
    Write {
        name: FileName,
    },
}

impl fmt::Display for IoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IoError::Open { name } => write!(f, "cannot open {name} on the host"),
            IoError::Size {
                name,
                found,
                expected,
            } => {
                write!(f, "{name} has {found} bytes, the model takes {expected}")
            }
            IoError::Read { name } => write!(f, "cannot read {name}"),
            IoError::Write { name } => write!(f, "cannot write {name}"),
        }
    }
}

/// The word on the semihosting command line (QEMU's `-append`), or the program's arguments on
/// a hosted board, that asks for the test-vector
/// channel on the console instead of files.
pub const CHANNEL_WORD: &str = "kiln-channel";
