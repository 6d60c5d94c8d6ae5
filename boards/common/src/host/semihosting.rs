//! The host through semihosting (bare-metal boards under QEMU or a probe): console, files and
//! exit, which `probe-rs run` also understands.

use super::{FileName, IoError};
use core::fmt::{self, Write};

#[cfg(target_arch = "arm")]
use cortex_m_semihosting as sys;
#[cfg(target_arch = "riscv32")]
use riscv_semihosting as sys;

use sys::{debug, hio, nr};

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
        match unsafe { sys::syscall(nr::OPEN, &args) } as isize {
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
        let found = unsafe { sys::syscall(nr::FLEN, &[self.handle]) } as isize;
        found.max(0) as usize
    }

    /// Fills `buffer` with the whole file, which must be exactly as long.
    pub fn read_exact(&mut self, buffer: &mut [u8]) -> Result<(), IoError> {
        let name = self.name;
        // SAFETY: FLEN takes a handle.
        let found = unsafe { sys::syscall(nr::FLEN, &[self.handle]) } as isize;
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
        match unsafe { sys::syscall(nr::READ, &args) } {
            0 => Ok(()),
            _ => Err(IoError::Read { name }),
        }
    }

    pub fn write_all(&mut self, bytes: &[u8]) -> Result<(), IoError> {
        let args = [self.handle, bytes.as_ptr() as usize, bytes.len()];
        // SAFETY: WRITE reads `len` bytes; it returns how many it did not write.
        match unsafe { sys::syscall(nr::WRITE, &args) } {
            0 => Ok(()),
            _ => Err(IoError::Write { name: self.name }),
        }
    }
}

impl Drop for File {
    fn drop(&mut self) {
        // SAFETY: CLOSE takes a handle this file owns.
        unsafe { sys::syscall(nr::CLOSE, &[self.handle]) };
    }
}

/// Whether the host asked for the test-vector channel: [`CHANNEL_WORD`] is a word of the
/// semihosting command line.
pub fn channel_requested() -> bool {
    let mut buffer = [0u8; 256];
    let mut args = [buffer.as_mut_ptr() as usize, buffer.len()];
    // SAFETY: GET_CMDLINE writes at most `len` bytes into the buffer and the length it wrote
    // into the second word of the block; both outlive the call.
    let status = unsafe { sys::syscall1(nr::GET_CMDLINE, args.as_mut_ptr() as usize) };
    if status != 0 {
        return false;
    }
    let len = args[1].min(buffer.len());
    core::str::from_utf8(&buffer[..len]).is_ok_and(|line| {
        line.split_whitespace()
            .any(|word| word == super::CHANNEL_WORD)
    })
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
            match unsafe { sys::syscall(nr::OPEN, &args) } as isize {
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
        let missing = unsafe { sys::syscall(nr::READ, &args) };
        buffer.len().checked_sub(missing).ok_or(ConsoleError)
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), ConsoleError> {
        let args = [self.output, bytes.as_ptr() as usize, bytes.len()];
        // SAFETY: WRITE reads `len` bytes; it returns how many it did not write.
        match unsafe { sys::syscall(nr::WRITE, &args) } {
            0 => Ok(()),
            _ => Err(ConsoleError),
        }
    }
}
