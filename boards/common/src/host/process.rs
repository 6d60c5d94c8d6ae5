//! The host of a hosted board (feature `std`): the program's own standard output and error,
//! files in its working directory, and its exit status. The same names and errors as
//! semihosting's, so that the run loop is one for both.

use super::{FileName, IoError, CHANNEL_WORD};
use core::fmt;
use std::io::{Read, Write};

/// Writes to standard output; output is best effort.
pub fn print(args: fmt::Arguments) {
    let _ = std::io::stdout().write_fmt(args);
}

/// Writes to standard error; output is best effort.
pub fn eprint(args: fmt::Arguments) {
    let _ = std::io::stderr().write_fmt(args);
}

/// Ends the program with status 0 on `success`, 1 otherwise.
pub fn exit(success: bool) -> ! {
    let _ = std::io::stdout().flush();
    std::process::exit(if success { 0 } else { 1 })
}

/// A file in the working directory, closed when dropped.
pub struct File {
    file: std::fs::File,
    name: FileName,
}

impl File {
    pub fn open_read(name: FileName) -> Result<Self, IoError> {
        let file = std::fs::File::open(name.as_str()).map_err(|_| IoError::Open { name })?;
        Ok(File { file, name })
    }

    pub fn create(name: FileName) -> Result<Self, IoError> {
        let file = std::fs::File::create(name.as_str()).map_err(|_| IoError::Open { name })?;
        Ok(File { file, name })
    }

    /// The file's length in bytes (0 if it cannot be told).
    pub fn size(&self) -> usize {
        self.file.metadata().map_or(0, |m| m.len() as usize)
    }

    /// Fills `buffer` with the whole file, which must be exactly as long.
    pub fn read_exact(&mut self, buffer: &mut [u8]) -> Result<(), IoError> {
        let (name, found) = (self.name, self.size());
        if found != buffer.len() {
            let expected = buffer.len();
            return Err(IoError::Size {
                name,
                found,
                expected,
            });
        }
        self.file
            .read_exact(buffer)
            .map_err(|_| IoError::Read { name })
    }

    pub fn write_all(&mut self, bytes: &[u8]) -> Result<(), IoError> {
        let name = self.name;
        self.file
            .write_all(bytes)
            .map_err(|_| IoError::Write { name })
    }
}

/// Whether the host asked for the test-vector channel: [`CHANNEL_WORD`] is one of the
/// program's arguments.
pub fn channel_requested() -> bool {
    std::env::args().any(|arg| arg == CHANNEL_WORD)
}

/// Standard input and output as a byte stream for the test-vector channel.
pub struct Console {
    input: std::io::Stdin,
    output: std::io::Stdout,
}

/// A console read or write that failed.
#[derive(Clone, Copy, Debug)]
pub struct ConsoleError;

impl Console {
    pub fn open() -> Result<Self, ConsoleError> {
        Ok(Console {
            input: std::io::stdin(),
            output: std::io::stdout(),
        })
    }
}

impl kiln_firmware::channel::Transport for Console {
    type Error = ConsoleError;

    fn read(&mut self, buffer: &mut [u8]) -> Result<usize, ConsoleError> {
        self.input.read(buffer).map_err(|_| ConsoleError)
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), ConsoleError> {
        let mut output = self.output.lock();
        output.write_all(bytes).map_err(|_| ConsoleError)?;
        output.flush().map_err(|_| ConsoleError)
    }
}
