//! The test-vector channel: how a host hands a board a model's inputs and gets its outputs and
//! per-step costs back, over any byte stream: the semihosting console under QEMU, RTT under a
//! debug probe. The messages are shared by both ends; the device's side ([`Link`], [`serve`])
//! is heap-free, with fixed buffers, behind a [`Transport`] a board supplies.
//!
//! # Protocol (version [`CHANNEL_VERSION`])
//!
//! Every message is one postcard-encoded [`ToHost`] or [`ToDevice`], COBS-framed: the frame
//! holds no zero byte and ends with one, so a reader that lost its place resynchronises at the
//! next zero. A frame is at most [`MAX_FRAME`] bytes; tensor bytes travel in chunks of at most
//! [`MAX_CHUNK`].
//!
//! ```text
//! device                                   host
//!   Hello { version, arena_bytes, steps,
//!           inputs: [bytes..], outputs: [bytes..] }  ─▶
//!   then any number of invocations, each either a run:
//!                                     ◀─  Input { index, offset, chunk }   (each input, in order)
//!                                     ◀─  Run
//!   StepCycles { step, count }  ─▶        (each step, when the board has a cycle counter)
//!   Output { index, offset, chunk }  ─▶   (each output, in order)
//!   Done { steps }  ─▶
//!   or a reset of the model's state to its initial values (no answer):
//!                                     ◀─  Reset
//!   and the session's end:
//!                                     ◀─  End
//! ```
//!
//! The runs of a session share one executor: a model with state (a streaming model) carries
//! it from each run to the next until a `Reset`. Every run sends every input in full.
//! A device that refuses its bundle sends `Error { message }` instead of `Hello`; one that gets
//! a message it cannot use sends `Error` and stops. `Hello`'s first field is the version, and
//! `Hello` is variant 0 of [`ToHost`] in every version: a host reads those two before the rest,
//! and refuses a device of another version by name instead of misreading it.

use crate::exec::{Executor, KernelEvent};
use crate::schedule::MAX_MODEL_TENSORS;
use core::fmt::{self, Write};
use serde::{Deserialize, Serialize};

/// The protocol's version, the first field of [`Hello`].
pub const CHANNEL_VERSION: u16 = 2;

/// Most tensor bytes in one `Input` or `Output` message.
pub const MAX_CHUNK: usize = 256;

/// Most bytes of an `Error` message's text; longer ones are cut.
pub const MAX_ERROR: usize = 160;

/// Most bytes of an encoded message, before framing: a chunk message (variant, index, offset
/// and length varints, the chunk) or a `Hello` with every input and output, whichever is
/// larger; the tests check each against it.
pub const MAX_MESSAGE: usize = MAX_CHUNK + 16;

/// Most bytes of a frame: COBS adds one byte per 254 and one at the start, and the frame ends
/// with its zero.
pub const MAX_FRAME: usize = MAX_MESSAGE + MAX_MESSAGE / 254 + 2;

/// What the device tells the host on boot.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    /// [`CHANNEL_VERSION`] of the device's runtime.
    pub version: u16,
    /// Bytes of the device's arena.
    pub arena_bytes: u32,
    /// Kernel calls of one run of its bundle (each loop's body once per iteration).
    pub steps: u32,
    /// Bytes of each model input, which the host must send in full.
    pub inputs: heapless::Vec<u32, MAX_MODEL_TENSORS>,
    /// Bytes of each model output, which the device sends back.
    pub outputs: heapless::Vec<u32, MAX_MODEL_TENSORS>,
}

/// A message from the device.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ToHost<'a> {
    /// Always variant 0: see the module documentation.
    Hello(Hello),
    /// Cycles step `step`'s kernel took, from the board's cycle counter.
    StepCycles { step: u32, count: u32 },
    /// Bytes `offset..offset + chunk.len()` of output `index`.
    Output {
        index: u8,
        offset: u32,
        chunk: &'a [u8],
    },
    /// Every output was sent.
    Done { steps: u32 },
    /// The device refused the bundle or the host's message, and stopped.
    Error { message: &'a str },
}

/// A message from the host.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ToDevice<'a> {
    /// Bytes `offset..offset + chunk.len()` of input `index`; chunks of an input come in order.
    Input {
        index: u8,
        offset: u32,
        chunk: &'a [u8],
    },
    /// Every input was sent: run the model.
    Run,
    /// Return the model's state to its initial values; allowed between runs only.
    Reset,
    /// The session is over: the device stops serving it.
    End,
}

/// Encodes `message` as one frame (ending with its zero) at the start of `buffer`.
pub fn encode<'b, T: Serialize>(message: &T, buffer: &'b mut [u8]) -> Option<&'b [u8]> {
    postcard::to_slice_cobs(message, buffer).ok().map(|f| &*f)
}

/// Decodes one frame (with or without its ending zero), in place.
pub fn decode<'a, T: Deserialize<'a>>(frame: &'a mut [u8]) -> Option<T> {
    postcard::from_bytes_cobs(frame).ok()
}

/// The version a `Hello` frame's device speaks, read before the rest of it: `None` for a frame
/// that is not a `Hello`.
pub fn hello_version(frame: &mut [u8]) -> Option<u16> {
    // The variant is a varint, the version the first field after it; the rest is left unread.
    let (variant, version): (u32, u16) = postcard::from_bytes_cobs(frame).ok()?;
    (variant == 0).then_some(version)
}

/// A byte stream to the host: the semihosting console, an RTT channel pair, a UART.
pub trait Transport {
    type Error;
    /// Reads at least one byte into `buffer`, waiting for it; returns how many it read.
    fn read(&mut self, buffer: &mut [u8]) -> Result<usize, Self::Error>;
    /// Writes all of `bytes`.
    fn write(&mut self, bytes: &[u8]) -> Result<(), Self::Error>;
}

/// Why the channel stopped.
#[derive(Debug, PartialEq, Eq)]
pub enum LinkError<E> {
    /// The transport failed.
    Transport(E),
    /// The stream ended (a read of no bytes).
    Closed,
    /// A frame was longer than [`MAX_FRAME`], or did not decode.
    BadFrame,
    /// The host sent something the protocol does not allow there; the device said so.
    Protocol,
    /// A step failed while running.
    Run,
}

impl<E> From<E> for LinkError<E> {
    fn from(error: E) -> Self {
        LinkError::Transport(error)
    }
}

/// The device's end of the channel: a transport and one frame buffer each way.
pub struct Link<T> {
    transport: T,
    rx: [u8; MAX_FRAME],
    /// Bytes of `rx` read so far.
    filled: usize,
    /// Bytes at the start of `rx` that the last message came from, to drop before the next.
    used: usize,
    tx: [u8; MAX_FRAME],
}

impl<T: Transport> Link<T> {
    pub fn new(transport: T) -> Self {
        Link {
            transport,
            rx: [0; MAX_FRAME],
            filled: 0,
            used: 0,
            tx: [0; MAX_FRAME],
        }
    }

    /// The transport underneath (to wait until the host has read everything, say).
    pub fn transport(&self) -> &T {
        &self.transport
    }

    /// Sends one message.
    pub fn send(&mut self, message: &ToHost) -> Result<(), LinkError<T::Error>> {
        let frame = encode(message, &mut self.tx).ok_or(LinkError::BadFrame)?;
        self.transport.write(frame)?;
        Ok(())
    }

    /// Sends `Error` with the text of `args`, cut to [`MAX_ERROR`] bytes.
    pub fn send_error(&mut self, args: fmt::Arguments) -> Result<(), LinkError<T::Error>> {
        let mut text = Text::default();
        let _ = text.write_fmt(args);
        self.send(&ToHost::Error {
            message: text.as_str(),
        })
    }

    /// Waits for the host's next message.
    pub fn receive(&mut self) -> Result<ToDevice<'_>, LinkError<T::Error>> {
        self.rx.copy_within(self.used..self.filled, 0);
        self.filled -= self.used;
        self.used = 0;
        let end = loop {
            if let Some(zero) = self.rx[..self.filled].iter().position(|&b| b == 0) {
                break zero;
            }
            if self.filled == self.rx.len() {
                return Err(LinkError::BadFrame);
            }
            match self.transport.read(&mut self.rx[self.filled..])? {
                0 => return Err(LinkError::Closed),
                n => self.filled += n,
            }
        };
        self.used = end + 1;
        decode(&mut self.rx[..end]).ok_or(LinkError::BadFrame)
    }
}

/// Up to [`MAX_ERROR`] bytes of text, cut at a character boundary.
#[derive(Default)]
struct Text(heapless::String<MAX_ERROR>);

impl Text {
    fn as_str(&self) -> &str {
        self.0.as_str()
    }
}

impl Write for Text {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for c in s.chars() {
            self.0.push(c).map_err(|_| fmt::Error)?;
        }
        Ok(())
    }
}

/// One session on the device: sends `Hello`, then serves the host's invocations until `End`.
/// A run takes the inputs, runs the model (`hook` sees each kernel call; what it returns on
/// `After` is sent as that step's `StepCycles`), and sends the outputs and `Done`; a `Reset`
/// resets the state. Returns the number of runs. A message the protocol does not allow is
/// answered with `Error` and ends the session.
pub fn serve<T: Transport>(
    link: &mut Link<T>,
    executor: &mut Executor,
    mut hook: impl FnMut(KernelEvent) -> Option<u32>,
) -> Result<u32, LinkError<T::Error>> {
    let hello = hello_of(executor);
    link.send(&ToHost::Hello(hello.clone()))?;
    let mut runs = 0u32;
    loop {
        match receive_request(link, executor, &hello)? {
            Request::Run => {
                run_once(link, executor, &hello, &mut hook)?;
                runs = runs.saturating_add(1);
            }
            Request::Reset => executor.reset(),
            Request::End => return Ok(runs),
        }
    }
}

/// Runs the model on the inputs received, and sends the steps' cycles, the outputs and `Done`.
fn run_once<T: Transport>(
    link: &mut Link<T>,
    executor: &mut Executor,
    hello: &Hello,
    hook: &mut impl FnMut(KernelEvent) -> Option<u32>,
) -> Result<(), LinkError<T::Error>> {
    let mut sent = Ok(());
    let ran = executor.run(&mut |event| {
        if let (Some(count), KernelEvent::After { step, .. }) = (hook(event), event) {
            if sent.is_ok() {
                sent = link.send(&ToHost::StepCycles { step, count });
            }
        }
    });
    sent?;
    if let Err(error) = ran {
        link.send_error(format_args!("run failed: {error}"))?;
        return Err(LinkError::Run);
    }
    for index in 0..hello.outputs.len() {
        let bytes = executor.output(index).unwrap_or(&[]);
        for (n, chunk) in bytes.chunks(MAX_CHUNK).enumerate() {
            link.send(&ToHost::Output {
                index: index as u8,
                offset: (n * MAX_CHUNK) as u32,
                chunk,
            })?;
        }
    }
    link.send(&ToHost::Done { steps: hello.steps })
}

/// What the device says of the model it runs.
fn hello_of(executor: &Executor) -> Hello {
    let schedule = executor.schedule();
    let sizes = |tensors: &[crate::schedule::TensorDesc]| {
        tensors
            .iter()
            .map(|t| t.span.bytes)
            .collect::<heapless::Vec<u32, MAX_MODEL_TENSORS>>()
    };
    Hello {
        version: CHANNEL_VERSION,
        arena_bytes: schedule.manifest().arena_bytes,
        steps: u32::try_from(schedule.call_count()).unwrap_or(u32::MAX),
        inputs: sizes(schedule.inputs()),
        outputs: sizes(schedule.outputs()),
    }
}

/// What the host asked for once its inputs (if any) were in.
enum Request {
    Run,
    Reset,
    End,
}

/// Takes the inputs' chunks into the executor until `Run` with every input complete, or a
/// `Reset` or `End` before any chunk. Any other message is answered with `Error` and ends the
/// session.
fn receive_request<T: Transport>(
    link: &mut Link<T>,
    executor: &mut Executor,
    hello: &Hello,
) -> Result<Request, LinkError<T::Error>> {
    let mut received = [0u32; MAX_MODEL_TENSORS];
    let refusal = loop {
        let started = received.iter().any(|&n| n > 0);
        match link.receive()? {
            ToDevice::Run => {
                match (0..hello.inputs.len()).find(|&i| received[i] != hello.inputs[i]) {
                    None => return Ok(Request::Run),
                    Some(i) => {
                        break Refusal::Incomplete {
                            index: i,
                            got: received[i],
                            size: hello.inputs[i],
                        }
                    }
                }
            }
            ToDevice::Reset if !started => return Ok(Request::Reset),
            ToDevice::End if !started => return Ok(Request::End),
            ToDevice::Reset | ToDevice::End => break Refusal::BetweenInputs,
            ToDevice::Input {
                index,
                offset,
                chunk,
            } => {
                let index = usize::from(index);
                let Some(bytes) = executor.input_mut(index) else {
                    break Refusal::NoInput { index };
                };
                if offset != received[index] {
                    break Refusal::OutOfOrder {
                        index,
                        offset,
                        expected: received[index],
                    };
                }
                let Some(target) = bytes.get_mut(offset as usize..offset as usize + chunk.len())
                else {
                    break Refusal::TooLong {
                        index,
                        size: hello.inputs[index],
                    };
                };
                target.copy_from_slice(chunk);
                received[index] += chunk.len() as u32;
            }
        }
    };
    link.send_error(format_args!("{refusal}"))?;
    Err(LinkError::Protocol)
}

/// Why the device refused a host message.
enum Refusal {
    /// `Reset` or `End` after some of a run's inputs.
    BetweenInputs,
    NoInput {
        index: usize,
    },
    OutOfOrder {
        index: usize,
        offset: u32,
        expected: u32,
    },
    TooLong {
        index: usize,
        size: u32,
    },
    Incomplete {
        index: usize,
        got: u32,
        size: u32,
    },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Refusal::BetweenInputs => write!(f, "Reset or End amid a run's inputs"),
            Refusal::NoInput { index } => write!(f, "the model has no input {index}"),
            Refusal::OutOfOrder {
                index,
                offset,
                expected,
            } => write!(
                f,
                "input {index}: chunk at byte {offset}, expected byte {expected}"
            ),
            Refusal::TooLong { index, size } => {
                write!(f, "input {index}: chunk past its end ({size} bytes)")
            }
            Refusal::Incomplete { index, got, size } => {
                write!(
                    f,
                    "Run before input {index} was complete ({got} of {size} bytes)"
                )
            }
        }
    }
}

#[cfg(test)]
mod tests;
