//! The host, through semihosting: console, files and exit (which `probe-rs run` also
//! understands).

use core::fmt::{self, Write};

#[cfg(target_arch = "arm")]
use cortex_m_semihosting as semihosting;
#[cfg(target_arch = "riscv32")]
use riscv_semihosting as semihosting;

use semihosting::{debug, hio, nr};

/// Writes to the host's standard output; output is best effort.
pub fn print(args: fmt::Arguments) {
    if let Ok(mut out) = hio::hstdout() {
        let _ = out.write_fmt(args);
    }
}

/// Writes to the host's standard error; output is best effort.
pub fn eprint(args: fmt::Arguments) {
    if let Ok(mut out) = hio::hstderr() {
        let _ = out.write_fmt(args);
    }
}

/// Ends the program; under QEMU, its exit status is 0 on `success`, 1 otherwise.
pub fn exit(success: bool) -> ! {
    debug::exit(if success {
        debug::EXIT_SUCCESS
    } else {
        debug::EXIT_FAILURE
    });
    // Without a debugger or emulator to stop us, stay here.
    #[allow(clippy::empty_loop)]
    loop {}
}

/// A file name on the host (`input_<i>.bin`, `output_<i>.bin`, …), NUL-terminated for
/// semihosting.
#[derive(Clone, Copy)]
pub struct FileName {
    bytes: [u8; 24],
    len: usize,
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

    fn format(args: fmt::Arguments) -> Self {
        let mut name = FileName {
            bytes: [0; 24],
            len: 0,
        };
        // Cases are below 10,000 and indices below 256: the names fit, and one byte stays
        // for the NUL.
        let _ = name.write_fmt(args);
        name
    }

    fn as_str(&self) -> &str {
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

/// A file on the host, closed when dropped.
pub struct File {
    handle: usize,
    name: FileName,
}

impl File {
    pub fn open_read(name: FileName) -> Result<Self, IoError> {
        Self::open(name, nr::open::R_BINARY)
    }

    pub fn create(name: FileName) -> Result<Self, IoError> {
        Self::open(name, nr::open::W_TRUNC_BINARY)
    }

    fn open(name: FileName, mode: usize) -> Result<Self, IoError> {
        let args = [name.bytes.as_ptr() as usize, mode, name.len];
        // SAFETY: OPEN reads `len` bytes of the NUL-terminated name.
        match unsafe { semihosting::syscall(nr::OPEN, &args) } as isize {
            -1 => Err(IoError::Open { name }),
            handle => Ok(File {
                handle: handle as usize,
                name,
            }),
        }
    }

    /// The file's length in bytes (0 if the host cannot tell).
    pub fn size(&self) -> usize {
        // SAFETY: FLEN takes a handle.
        let found = unsafe { semihosting::syscall(nr::FLEN, &[self.handle]) } as isize;
        found.max(0) as usize
    }

    /// Fills `buffer` with the whole file, which must be exactly as long.
    pub fn read_exact(&mut self, buffer: &mut [u8]) -> Result<(), IoError> {
        let name = self.name;
        // SAFETY: FLEN takes a handle.
        let found = unsafe { semihosting::syscall(nr::FLEN, &[self.handle]) } as isize;
        if found != buffer.len() as isize {
            let found = found.max(0) as usize;
            return Err(IoError::Size {
                name,
                found,
                expected: buffer.len(),
            });
        }
        let args = [self.handle, buffer.as_mut_ptr() as usize, buffer.len()];
        // SAFETY: READ writes at most `len` bytes into the buffer; it returns how many it did not.
        match unsafe { semihosting::syscall(nr::READ, &args) } {
            0 => Ok(()),
            _ => Err(IoError::Read { name }),
        }
    }

    pub fn write_all(&mut self, bytes: &[u8]) -> Result<(), IoError> {
        let args = [self.handle, bytes.as_ptr() as usize, bytes.len()];
        // SAFETY: WRITE reads `len` bytes; it returns how many it did not write.
        match unsafe { semihosting::syscall(nr::WRITE, &args) } {
            0 => Ok(()),
            _ => Err(IoError::Write { name: self.name }),
        }
    }
}

impl Drop for File {
    fn drop(&mut self) {
        // SAFETY: CLOSE takes a handle this file owns.
        unsafe { semihosting::syscall(nr::CLOSE, &[self.handle]) };
    }
}

/// The word on the semihosting command line (QEMU's `-append`) that asks for the test-vector
/// channel on the console instead of files.
pub const CHANNEL_WORD: &str = "kiln-channel";

/// Whether the host asked for the test-vector channel: [`CHANNEL_WORD`] is a word of the
/// semihosting command line.
pub fn channel_requested() -> bool {
    let mut buffer = [0u8; 256];
    let mut args = [buffer.as_mut_ptr() as usize, buffer.len()];
    // SAFETY: GET_CMDLINE writes at most `len` bytes into the buffer and the length it wrote
    // into the second word of the block; both outlive the call.
    let status = unsafe { semihosting::syscall1(nr::GET_CMDLINE, args.as_mut_ptr() as usize) };
    if status != 0 {
        return false;
    }
    let len = args[1].min(buffer.len());
    core::str::from_utf8(&buffer[..len])
        .is_ok_and(|line| line.split_whitespace().any(|word| word == CHANNEL_WORD))
}

/// The host's console as a byte stream for the test-vector channel: the semihosting `:tt`
/// handles, which QEMU (`target=native`) maps to its own standard input and output.
pub struct Console {
    input: usize,
    output: usize,
}

/// A console read or write that failed, or a console that would not open.
#[derive(Clone, Copy, Debug)]
pub struct ConsoleError;

impl Console {
    pub fn open() -> Result<Self, ConsoleError> {
        let open = |mode| {
            let name = FileName::format(format_args!(":tt"));
            let args = [name.bytes.as_ptr() as usize, mode, name.len];
            // SAFETY: OPEN reads `len` bytes of the NUL-terminated name.
            match unsafe { semihosting::syscall(nr::OPEN, &args) } as isize {
                -1 => Err(ConsoleError),
                handle => Ok(handle as usize),
            }
        };
        Ok(Console {
            input: open(nr::open::R)?,
            output: open(nr::open::W_TRUNC)?,
        })
    }
}

impl kiln_firmware::channel::Transport for Console {
    type Error = ConsoleError;

    fn read(&mut self, buffer: &mut [u8]) -> Result<usize, ConsoleError> {
        let args = [self.input, buffer.as_mut_ptr() as usize, buffer.len()];
        // SAFETY: READ writes at most `len` bytes into the buffer; it returns how many it did not
        // (all of them at the end of the stream), waiting for at least one.
        let missing = unsafe { semihosting::syscall(nr::READ, &args) };
        buffer.len().checked_sub(missing).ok_or(ConsoleError)
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), ConsoleError> {
        let args = [self.output, bytes.as_ptr() as usize, bytes.len()];
        // SAFETY: WRITE reads `len` bytes; it returns how many it did not write.
        match unsafe { semihosting::syscall(nr::WRITE, &args) } {
            0 => Ok(()),
            _ => Err(ConsoleError),
        }
    }
}
