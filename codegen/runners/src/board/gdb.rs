//! QEMU's gdbstub as a [`DebugMemory`]: the GDB remote serial protocol's memory packets (`m`,
//! `M`) over the Unix socket QEMU listens on (`-gdb unix:…,server=on,wait=off`), so that RTT
//! ([`super::rtt`]) reaches an emulated board's RAM the way a probe reaches a real one.
//!
//! QEMU's stub answers only while the machine is stopped: an access first stops it (the
//! interrupt byte, `0x03`, answered by a stop reply), and [`DebugMemory::wait`] resumes it
//! (`c`, answered by nothing until the next stop). Every packet is acknowledged (`+`): QEMU 7
//! does not offer the no-acknowledgment mode. When the firmware exits, QEMU closes the socket.

use super::rtt::{DebugError, DebugMemory};
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

/// Bytes of memory per packet: QEMU's packets hold 4,096 characters, two per byte.
const CHUNK: usize = 1024;

/// A connection to QEMU's gdbstub.
pub struct GdbStub {
    stream: UnixStream,
    /// The machine runs (resumed with `c`, no stop reply since).
    running: bool,
}

impl GdbStub {
    /// Connects to the stub listening on `socket`, retrying until QEMU has opened it or
    /// `timeout` passes. The machine is expected stopped (QEMU's `-S`).
    pub fn connect(socket: &Path, timeout: Duration) -> Result<GdbStub, DebugError> {
        let deadline = Instant::now() + timeout;
        let stream = loop {
            match UnixStream::connect(socket) {
                Ok(stream) => break stream,
                Err(_) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10))
                }
                Err(e) => {
                    let why = format!("cannot connect to QEMU's gdbstub: {e}");
                    return Err(DebugError::Link(why));
                }
            }
        };
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .map_err(link)?;
        Ok(GdbStub {
            stream,
            running: false,
        })
    }

    /// Sends one packet and waits for its acknowledgment.
    fn send(&mut self, data: &str) -> Result<(), DebugError> {
        let sum = data.bytes().fold(0u8, u8::wrapping_add);
        let packet = format!("${data}#{sum:02x}");
        self.stream.write_all(packet.as_bytes()).map_err(link)?;
        match self.byte()? {
            b'+' => Ok(()),
            other => Err(DebugError::Link(format!(
                "QEMU's gdbstub answered `{}` to a packet, not `+`",
                other as char
            ))),
        }
    }

    /// Receives one packet (acknowledging it) and returns its data.
    fn receive(&mut self) -> Result<Vec<u8>, DebugError> {
        while self.byte()? != b'$' {}
        let mut data = Vec::new();
        loop {
            match self.byte()? {
                b'#' => break,
                byte => data.push(byte),
            }
        }
        let _checksum = [self.byte()?, self.byte()?];
        self.stream.write_all(b"+").map_err(link)?;
        Ok(data)
    }

    fn byte(&mut self) -> Result<u8, DebugError> {
        let mut byte = [0u8];
        match self.stream.read(&mut byte) {
            Ok(1) => Ok(byte[0]),
            Ok(_) => Err(DebugError::Exited),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => Err(DebugError::Exited),
            Err(e) => Err(link(e)),
        }
    }

    /// Sends `data` and returns the answer's data.
    fn ask(&mut self, data: &str) -> Result<Vec<u8>, DebugError> {
        self.send(data)?;
        self.receive()
    }

    /// Stops the machine if it runs.
    fn stop(&mut self) -> Result<(), DebugError> {
        if !self.running {
            return Ok(());
        }
        self.stream.write_all(&[0x03]).map_err(link)?;
        let reply = self.receive()?;
        self.running = false;
        match reply.first() {
            Some(b'T' | b'S') => Ok(()),
            Some(b'W' | b'X') => Err(DebugError::Exited),
            _ => Err(DebugError::Link(format!(
                "QEMU's gdbstub stopped with `{}`",
                String::from_utf8_lossy(&reply)
            ))),
        }
    }

    /// Leaves the machine running and closes the connection.
    pub fn detach(mut self) -> Result<(), DebugError> {
        self.stop()?;
        let _ = self.ask("D")?;
        Ok(())
    }
}

fn link(error: std::io::Error) -> DebugError {
    DebugError::Link(error.to_string())
}

fn access(address: u32, len: usize, reply: &[u8]) -> DebugError {
    DebugError::Access {
        address,
        len,
        reason: format!(
            "QEMU's gdbstub answered `{}`",
            String::from_utf8_lossy(reply)
        ),
    }
}

impl DebugMemory for GdbStub {
    fn read(&mut self, address: u32, bytes: &mut [u8]) -> Result<(), DebugError> {
        self.stop()?;
        for (n, chunk) in bytes.chunks_mut(CHUNK).enumerate() {
            let at = address + (n * CHUNK) as u32;
            let reply = self.ask(&format!("m{at:x},{:x}", chunk.len()))?;
            let decoded = decode_hex(&reply).filter(|d| d.len() == chunk.len());
            chunk.copy_from_slice(&decoded.ok_or_else(|| access(at, chunk.len(), &reply))?);
        }
        Ok(())
    }

    fn write(&mut self, address: u32, bytes: &[u8]) -> Result<(), DebugError> {
        self.stop()?;
        for (n, chunk) in bytes.chunks(CHUNK).enumerate() {
            let at = address + (n * CHUNK) as u32;
            let hex: String = chunk.iter().map(|b| format!("{b:02x}")).collect();
            let reply = self.ask(&format!("M{at:x},{:x}:{hex}", chunk.len()))?;
            if reply != b"OK" {
                return Err(access(at, chunk.len(), &reply));
            }
        }
        Ok(())
    }

    fn wait(&mut self, time: Duration) -> Result<(), DebugError> {
        if !self.running {
            self.send("c")?;
            self.running = true;
        }
        std::thread::sleep(time);
        Ok(())
    }
}

/// Bytes from pairs of hex digits; `None` for anything else (an `E..` error reply).
fn decode_hex(text: &[u8]) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    text.chunks(2)
        .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok())
        .collect()
}
