//! The host's side of RTT (SEGGER's Real-Time Transfer): ring buffers in the target's RAM that a
//! debugger reads and writes while the firmware runs. The firmware (`boards/common/src/probe.rs`)
//! puts the test-vector channel on up channel `kiln` (to the host) and down channel `kiln` (from
//! it); this module finds them through a [`DebugMemory`] and runs the session of
//! [`channel::exchange`] over them.
//!
//! [`DebugMemory`] is all RTT needs of a debugger, and it has two implementations: a debug probe
//! (`board::probe`, through probe-rs, feature `probe`) for real boards, and QEMU's gdbstub
//! ([`super::gdb`]) for emulated ones, so that `kiln run --io rtt` on an emulated board runs the
//! very path a real board takes.
//!
//! # The control block (32-bit targets)
//!
//! At the firmware's `_SEGGER_RTT`: the 16-byte ID `SEGGER RTT` (written last, when the
//! firmware has set up the rest), the number of up channels and of down channels (`i32` each),
//! then one 24-byte descriptor per up channel and per down channel: name pointer, buffer
//! pointer, buffer size, write offset, read offset, flags. The writer of a ring moves its write
//! offset, the reader its read offset; a ring holds at most `size − 1` bytes.

use super::channel::{self, ChannelError, ChannelRun};
use crate::Invocation;
use std::cell::RefCell;
use std::io::{Read, Write};
use std::time::{Duration, Instant};

/// What RTT needs of a debugger: the target's memory, while the firmware runs.
pub trait DebugMemory {
    /// Reads `bytes.len()` bytes of target memory from `address`.
    fn read(&mut self, address: u32, bytes: &mut [u8]) -> Result<(), DebugError>;
    /// Writes `bytes` to target memory at `address`.
    fn write(&mut self, address: u32, bytes: &[u8]) -> Result<(), DebugError>;
    /// Lets the firmware run for about `time` before the next access (a probe reads memory
    /// while the core runs and only sleeps; QEMU's gdbstub stops the machine for each access and
    /// resumes it here).
    fn wait(&mut self, time: Duration) -> Result<(), DebugError>;
}

/// Why the debugger could not reach the target's memory.
#[derive(Debug, thiserror::Error)]
pub enum DebugError {
    /// The firmware stopped (its semihosting exit, a fault, a panic) while the host still
    /// needed it.
    #[error("the firmware stopped (an exit, a fault or a panic) before its session ended")]
    Exited,
    /// The debugger's connection failed.
    #[error("the debugger's connection failed: {0}")]
    Link(String),
    /// The debugger refused an access.
    #[error("reading or writing {len} bytes at {address:#010x} failed: {reason}")]
    Access {
        address: u32,
        len: usize,
        reason: String,
    },
}

/// Why an RTT session failed.
#[derive(Debug, thiserror::Error)]
pub enum RttError {
    #[error("the firmware set up no RTT control block at {address:#010x} within {} s", timeout.as_secs_f64())]
    NoControlBlock { address: u32, timeout: Duration },
    #[error("the RTT control block at {address:#010x} has no {direction} channel `{name}` (it has {})", found.join(", "))]
    NoChannel {
        address: u32,
        direction: &'static str,
        name: String,
        found: Vec<String>,
    },
    #[error("the RTT control block at {address:#010x} is malformed: {reason}")]
    Malformed { address: u32, reason: String },
    #[error("the firmware did not answer on RTT within {} s", timeout.as_secs_f64())]
    Timeout { timeout: Duration },
    #[error(transparent)]
    Debug(#[from] DebugError),
    #[error(transparent)]
    Channel(#[from] ChannelError),
}

/// The name of the test-vector channel's up and down channel.
pub const CHANNEL_NAME: &str = "kiln";
/// The ID at the start of an RTT control block, as the firmware writes it last.
const ID: &[u8; 16] = b"SEGGER RTT\0\0\0\0\0\0";
/// Bytes of one channel descriptor.
const DESCRIPTOR: u32 = 24;
/// Channels a control block may have in each direction before it is taken for garbage.
const MAX_CHANNELS: u32 = 16;
/// How long the host lets the firmware run between polls of an empty or full ring.
const POLL: Duration = Duration::from_millis(1);

/// One ring of the control block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ring {
    pub name: String,
    /// Address of its descriptor.
    descriptor: u32,
    buffer: u32,
    size: u32,
}

impl Ring {
    fn write_offset(&self) -> u32 {
        self.descriptor + 12
    }

    fn read_offset(&self) -> u32 {
        self.descriptor + 16
    }

    /// The write and read offsets, checked against the ring's size.
    fn offsets(&self, memory: &mut dyn DebugMemory) -> Result<(u32, u32), RttError> {
        let mut words = [0u8; 8];
        memory.read(self.write_offset(), &mut words)?;
        let write = u32::from_le_bytes(words[..4].try_into().expect("4 bytes"));
        let read = u32::from_le_bytes(words[4..].try_into().expect("4 bytes"));
        if write >= self.size || read >= self.size {
            return Err(RttError::Malformed {
                address: self.descriptor,
                reason: format!(
                    "channel `{}` has offsets {write} and {read} in a ring of {} bytes",
                    self.name, self.size
                ),
            });
        }
        Ok((write, read))
    }

    /// Takes what the firmware wrote into an up ring, at most `out.len()` bytes; 0 when it is
    /// empty.
    fn take(&self, memory: &mut dyn DebugMemory, out: &mut [u8]) -> Result<usize, RttError> {
        let (write, read) = self.offsets(memory)?;
        let end = if write >= read { write } else { self.size };
        let n = ((end - read) as usize).min(out.len());
        if n == 0 {
            return Ok(0);
        }
        memory.read(self.buffer + read, &mut out[..n])?;
        let read = (read + n as u32) % self.size;
        memory.write(self.read_offset(), &read.to_le_bytes())?;
        Ok(n)
    }

    /// Puts as much of `bytes` into a down ring as it has room for; 0 when it is full.
    fn put(&self, memory: &mut dyn DebugMemory, bytes: &[u8]) -> Result<usize, RttError> {
        let (write, read) = self.offsets(memory)?;
        // One byte always stays free: equal offsets mean empty.
        let free = (read + self.size - write - 1) % self.size;
        let n = (free.min(self.size - write) as usize).min(bytes.len());
        if n == 0 {
            return Ok(0);
        }
        memory.write(self.buffer + write, &bytes[..n])?;
        let write = (write + n as u32) % self.size;
        memory.write(self.write_offset(), &write.to_le_bytes())?;
        Ok(n)
    }
}

/// The control block's rings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ControlBlock {
    pub address: u32,
    pub up: Vec<Ring>,
    pub down: Vec<Ring>,
}

impl ControlBlock {
    /// Waits until the firmware has set up the control block at `address` (its ID is there),
    /// then reads its rings.
    pub fn attach(
        memory: &mut dyn DebugMemory,
        address: u32,
        timeout: Duration,
    ) -> Result<ControlBlock, RttError> {
        let deadline = Instant::now() + timeout;
        let mut header = [0u8; 24];
        loop {
            memory.read(address, &mut header)?;
            if header[..16] == ID[..] {
                break;
            }
            if Instant::now() >= deadline {
                return Err(RttError::NoControlBlock { address, timeout });
            }
            memory.wait(POLL)?;
        }
        let count = |at: usize| u32::from_le_bytes(header[at..at + 4].try_into().expect("4"));
        let (ups, downs) = (count(16), count(20));
        if ups > MAX_CHANNELS || downs > MAX_CHANNELS {
            return Err(RttError::Malformed {
                address,
                reason: format!("{ups} up and {downs} down channels"),
            });
        }
        let mut rings = |first: u32, n: u32| -> Result<Vec<Ring>, RttError> {
            (0..n)
                .map(|i| read_ring(memory, first + i * DESCRIPTOR))
                .filter(|ring| !matches!(ring, Ok(r) if r.size == 0))
                .collect()
        };
        let up = rings(address + 24, ups)?;
        let down = rings(address + 24 + ups * DESCRIPTOR, downs)?;
        Ok(ControlBlock { address, up, down })
    }

    /// The up or down ring named `name`.
    fn ring(&self, up: bool, name: &str) -> Result<&Ring, RttError> {
        let rings = if up { &self.up } else { &self.down };
        rings
            .iter()
            .find(|r| r.name == name)
            .ok_or_else(|| RttError::NoChannel {
                address: self.address,
                direction: if up { "up" } else { "down" },
                name: name.to_string(),
                found: rings.iter().map(|r| format!("`{}`", r.name)).collect(),
            })
    }
}

/// One channel descriptor (a ring with a size of 0 is an unused slot).
fn read_ring(memory: &mut dyn DebugMemory, descriptor: u32) -> Result<Ring, RttError> {
    let mut words = [0u8; DESCRIPTOR as usize];
    memory.read(descriptor, &mut words)?;
    let word = |i: usize| u32::from_le_bytes(words[i * 4..i * 4 + 4].try_into().expect("4"));
    let (name_at, buffer, size) = (word(0), word(1), word(2));
    let mut name = Vec::new();
    if name_at != 0 && size != 0 {
        let mut bytes = [0u8; 32];
        memory.read(name_at, &mut bytes)?;
        name.extend(bytes.iter().take_while(|&&b| b != 0));
    }
    Ok(Ring {
        name: String::from_utf8_lossy(&name).into_owned(),
        descriptor,
        buffer,
        size,
    })
}

/// Runs one test-vector session over the firmware's RTT channel pair `kiln`: waits for its
/// control block at `address` (the ELF's `_SEGGER_RTT`), then [`channel::exchange`]s `inputs`
/// for its outputs, all within `timeout`.
pub fn exchange(
    memory: &mut dyn DebugMemory,
    address: u32,
    inputs: &[Vec<u8>],
    timeout: Duration,
) -> Result<ChannelRun, RttError> {
    let mut runs = stream(memory, address, &[Invocation::Run(inputs)], timeout)?;
    Ok(runs.pop().expect("a session of one run gives one"))
}

/// [`exchange`] for a session of many invocations (runs and resets) on one executor, the
/// model's state carried between them: each run's results.
pub fn stream(
    memory: &mut dyn DebugMemory,
    address: u32,
    invocations: &[Invocation<'_>],
    timeout: Duration,
) -> Result<Vec<ChannelRun>, RttError> {
    let mut sessions = sessions(memory, address, &[invocations], timeout);
    match (sessions.stopped, sessions.runs.pop()) {
        (Some(error), _) => Err(error),
        (None, Some(runs)) => Ok(runs?),
        (None, None) => unreachable!("one session ran or the sessions stopped"),
    }
}

/// What the sessions of a batch image gave: one per case until they `stopped`.
#[derive(Debug)]
pub struct Sessions<T = ChannelRun> {
    /// Each case's session in order: its run, or the device's own error (a refused bundle, a
    /// failed step), after which the device goes on to the next case.
    pub runs: Vec<Result<T, ChannelError>>,
    /// Why the sessions ended before the last case, if they did.
    pub stopped: Option<RttError>,
}

/// Runs one session of one run per entry of `inputs`, in order, over the channel pair `kiln`
/// of the control block at `address` (a batch image serves one model after another), all
/// within `timeout`. A device error ends its session alone; anything else ends them all.
pub fn exchange_each(
    memory: &mut dyn DebugMemory,
    address: u32,
    inputs: &[&[Vec<u8>]],
    timeout: Duration,
) -> Sessions {
    let each: Vec<[Invocation; 1]> = inputs.iter().map(|i| [Invocation::Run(i)]).collect();
    let each: Vec<&[Invocation]> = each.iter().map(|s| &s[..]).collect();
    sessions(memory, address, &each, timeout).one_run_each()
}

impl Sessions<Vec<ChannelRun>> {
    /// Sessions of one run each, as their runs.
    pub fn one_run_each(self) -> Sessions {
        let one = |runs: Vec<ChannelRun>| runs.into_iter().next().expect("one run");
        Sessions {
            runs: self.runs.into_iter().map(|r| r.map(one)).collect(),
            stopped: self.stopped,
        }
    }
}

/// One session per entry of `each`, its invocations in order; see [`exchange_each`].
pub fn sessions(
    memory: &mut dyn DebugMemory,
    address: u32,
    each: &[&[Invocation<'_>]],
    timeout: Duration,
) -> Sessions<Vec<ChannelRun>> {
    let deadline = Instant::now() + timeout;
    let rings = ControlBlock::attach(memory, address, timeout).and_then(|block| {
        let up = block.ring(true, CHANNEL_NAME)?.clone();
        Ok((up, block.ring(false, CHANNEL_NAME)?.clone()))
    });
    let (up, down) = match rings {
        Ok(rings) => rings,
        Err(error) => {
            return Sessions {
                runs: Vec::new(),
                stopped: Some(error),
            }
        }
    };
    let shared = Shared {
        memory: RefCell::new(memory),
        failure: RefCell::new(None),
        deadline,
        timeout,
    };
    let from_device = Stream {
        shared: &shared,
        ring: &up,
    };
    let to_device = Stream {
        shared: &shared,
        ring: &down,
    };
    let mut host = channel::Host::new(from_device, to_device);
    let mut runs = Vec::with_capacity(each.len());
    let mut stopped = None;
    for invocations in each {
        match host.session(invocations) {
            Ok(run) => runs.push(Ok(run)),
            Err(error @ ChannelError::Device(_)) => runs.push(Err(error)),
            Err(error) => {
                stopped = Some(error);
                break;
            }
        }
    }
    drop(host);
    // A failure of the memory underneath is the cause, not the I/O error the session saw.
    let stopped = match (shared.failure.into_inner(), stopped) {
        (Some(failure), _) => Some(failure),
        (None, error) => error.map(RttError::Channel),
    };
    Sessions { runs, stopped }
}

/// The debugger, shared by the two directions of a session, and the first failure under them.
struct Shared<'m> {
    memory: RefCell<&'m mut dyn DebugMemory>,
    failure: RefCell<Option<RttError>>,
    deadline: Instant,
    timeout: Duration,
}

impl Shared<'_> {
    /// Runs `step` on a ring until it moves some bytes, letting the firmware run between tries;
    /// an error is kept for [`exchange`] and given to the session as an I/O error.
    fn poll(
        &self,
        mut step: impl FnMut(&mut dyn DebugMemory) -> Result<usize, RttError>,
    ) -> std::io::Result<usize> {
        let mut memory = self.memory.borrow_mut();
        let error: RttError = loop {
            match step(&mut **memory) {
                Ok(0) if Instant::now() >= self.deadline => {
                    break RttError::Timeout {
                        timeout: self.timeout,
                    }
                }
                Ok(0) => {
                    if let Err(e) = memory.wait(POLL) {
                        break e.into();
                    }
                }
                Ok(n) => return Ok(n),
                Err(e) => break e,
            }
        };
        let io = std::io::Error::other(error.to_string());
        self.failure.borrow_mut().get_or_insert(error);
        Err(io)
    }
}

/// One direction of the session: reads from an up ring, or writes to a down ring.
struct Stream<'s, 'm> {
    shared: &'s Shared<'m>,
    ring: &'s Ring,
}

impl Read for Stream<'_, '_> {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        if buffer.is_empty() {
            return Ok(0);
        }
        let ring = self.ring;
        self.shared.poll(|memory| ring.take(memory, buffer))
    }
}

impl Write for Stream<'_, '_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if bytes.is_empty() {
            return Ok(0);
        }
        let ring = self.ring;
        self.shared.poll(|memory| ring.put(memory, bytes))
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
