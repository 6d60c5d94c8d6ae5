//! The host's end of the test-vector channel (`kiln_firmware::channel`, which documents the
//! protocol): inputs to a board, outputs and per-step cycles back, over any pair of byte
//! streams: QEMU's standard output and input (the board's semihosting console), or an RTT up
//! channel and down channel ([`super::rtt`]) read by a debug probe or QEMU's gdbstub.

use crate::Invocation;
use kiln_firmware::channel::{
    decode, encode, hello_version, Hello, ToDevice, ToHost, CHANNEL_VERSION, MAX_CHUNK, MAX_FRAME,
};
use std::io::{BufRead, BufReader, Read, Write};

/// What a session gave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChannelRun {
    /// What the device said of itself.
    pub hello: Hello,
    /// Each model output, raw little-endian.
    pub outputs: Vec<Vec<u8>>,
    /// Each step's cycles, in step order, when the board counts them (else empty).
    pub step_cycles: Vec<u32>,
    /// Steps the device ran.
    pub steps: u32,
}

/// Why a session failed.
#[derive(Debug, thiserror::Error)]
pub enum ChannelError {
    /// The device sent `Error`.
    #[error("{0}")]
    Device(String),
    #[error("the device speaks channel version {found}, this host version {CHANNEL_VERSION}")]
    Version { found: u16 },
    #[error("the inputs do not fit the model: {0}")]
    Inputs(String),
    #[error("the device broke the protocol: {0}")]
    Protocol(String),
    #[error("the channel closed before the device was done{}", seen(.0))]
    Closed(String),
    #[error("the channel failed")]
    Io(#[from] std::io::Error),
}

fn seen(text: &str) -> String {
    match text.trim() {
        "" => String::new(),
        text => format!("; it had sent: {text}"),
    }
}

/// Runs one session: waits for the device's `Hello`, sends `inputs` (raw little-endian, one per
/// model input, each as long as the device says) and `Run`, collects what comes back until
/// `Done`, and ends the session.
pub fn exchange(
    from_device: impl Read,
    to_device: impl Write,
    inputs: &[Vec<u8>],
) -> Result<ChannelRun, ChannelError> {
    Host::new(from_device, to_device).exchange(inputs)
}

/// The host's end of a channel that carries one session after another (a batch image serves
/// one per model): what the device sent beyond one session's end stays for the next.
pub struct Host<R, W> {
    frames: Frames<R>,
    to_device: W,
}

impl<R: Read, W: Write> Host<R, W> {
    pub fn new(from_device: R, to_device: W) -> Self {
        Host {
            frames: Frames::new(from_device),
            to_device,
        }
    }

    /// Runs the next session with one run, as [`exchange`].
    pub fn exchange(&mut self, inputs: &[Vec<u8>]) -> Result<ChannelRun, ChannelError> {
        let mut runs = self.session(&[Invocation::Run(inputs)])?;
        Ok(runs.pop().expect("a session of one run gives one"))
    }

    /// Runs the next session: waits for the device's `Hello`, makes each invocation in order
    /// (a run: its inputs, `Run`, and what comes back until `Done`; or a `Reset`), and ends it
    /// with `End`. Returns each run's results.
    pub fn session(
        &mut self,
        invocations: &[Invocation<'_>],
    ) -> Result<Vec<ChannelRun>, ChannelError> {
        let hello = match self.frames.next()? {
            ToHost::Hello(hello) => hello,
            ToHost::Error { message } => return Err(ChannelError::Device(message.to_string())),
            other => return Err(ChannelError::Protocol(format!("{other:?} before Hello"))),
        };
        let sizes: Vec<usize> = hello.inputs.iter().map(|&n| n as usize).collect();
        let mut runs = Vec::new();
        for invocation in invocations {
            let inputs = match invocation {
                Invocation::Reset => {
                    send(&mut self.to_device, &ToDevice::Reset)?;
                    continue;
                }
                Invocation::Run(inputs) => inputs,
            };
            let given: Vec<usize> = inputs.iter().map(Vec::len).collect();
            if sizes != given {
                return Err(ChannelError::Inputs(format!(
                    "the model takes inputs of {sizes:?} bytes, given {given:?}"
                )));
            }
            send_inputs(&mut self.to_device, inputs)?;
            runs.push(collect_results(&mut self.frames, hello.clone())?);
        }
        send(&mut self.to_device, &ToDevice::End)?;
        self.to_device.flush()?;
        Ok(runs)
    }
}

/// Sends one message.
fn send(mut to_device: impl Write, message: &ToDevice) -> Result<(), ChannelError> {
    let mut buffer = [0u8; MAX_FRAME];
    let frame = encode(message, &mut buffer).expect("a chunk message fits a frame");
    to_device.write_all(frame)?;
    Ok(())
}

/// Sends each input in chunks, then `Run`.
fn send_inputs(mut to_device: impl Write, inputs: &[Vec<u8>]) -> Result<(), ChannelError> {
    for (index, input) in inputs.iter().enumerate() {
        for (n, chunk) in input.chunks(MAX_CHUNK).enumerate() {
            let offset = (n * MAX_CHUNK) as u32;
            let message = ToDevice::Input {
                index: index as u8,
                offset,
                chunk,
            };
            send(&mut to_device, &message)?;
        }
    }
    send(&mut to_device, &ToDevice::Run)?;
    to_device.flush()?;
    Ok(())
}

/// Collects the outputs' chunks and the steps' cycles until `Done`, checked against what
/// `hello` announced.
fn collect_results<R: Read>(
    frames: &mut Frames<R>,
    hello: Hello,
) -> Result<ChannelRun, ChannelError> {
    let mut outputs: Vec<Vec<u8>> = hello
        .outputs
        .iter()
        .map(|&n| Vec::with_capacity(n as usize))
        .collect();
    let mut step_cycles = Vec::new();
    loop {
        match frames.next()? {
            // One per kernel call, in order: a step in a loop's body sends one per iteration.
            ToHost::StepCycles { count, .. } if step_cycles.len() < hello.steps as usize => {
                step_cycles.push(count)
            }
            ToHost::Output {
                index,
                offset,
                chunk,
            } => {
                let Some(output) = outputs.get_mut(usize::from(index)) else {
                    let bad = format!("output {index} of {}", hello.outputs.len());
                    return Err(ChannelError::Protocol(bad));
                };
                if offset as usize != output.len() {
                    let bad = format!("output {index}: chunk at byte {offset}");
                    return Err(ChannelError::Protocol(bad));
                }
                output.extend_from_slice(chunk);
            }
            ToHost::Done { steps } => {
                let sizes: Vec<u32> = outputs.iter().map(|o| o.len() as u32).collect();
                if sizes[..] != hello.outputs[..] || steps != hello.steps {
                    let bad = format!("Done after outputs of {sizes:?} bytes, {steps} steps");
                    return Err(ChannelError::Protocol(bad));
                }
                return Ok(ChannelRun {
                    hello,
                    outputs,
                    step_cycles,
                    steps,
                });
            }
            ToHost::Error { message } => return Err(ChannelError::Device(message.to_string())),
            other => return Err(ChannelError::Protocol(format!("unexpected {other:?}"))),
        }
    }
}

/// The device's frames, one at a time.
struct Frames<R> {
    reader: BufReader<R>,
    frame: Vec<u8>,
}

impl<R: Read> Frames<R> {
    fn new(reader: R) -> Self {
        Frames {
            reader: BufReader::new(reader),
            frame: Vec::with_capacity(MAX_FRAME),
        }
    }

    fn next(&mut self) -> Result<ToHost<'_>, ChannelError> {
        self.frame.clear();
        self.reader.read_until(0, &mut self.frame)?;
        if self.frame.last() != Some(&0) {
            let text = String::from_utf8_lossy(&self.frame).into_owned();
            return Err(ChannelError::Closed(text));
        }
        if let Some(found) = hello_version(&mut self.frame.clone()) {
            if found != CHANNEL_VERSION {
                return Err(ChannelError::Version { found });
            }
        }
        let bad = || {
            let text = String::from_utf8_lossy(&self.frame).into_owned();
            ChannelError::Protocol(format!("a frame that does not decode: {text:?}"))
        };
        if self.frame.len() > MAX_FRAME {
            return Err(bad());
        }
        let error = bad();
        decode(&mut self.frame).ok_or(error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_firmware::channel::{Link, Transport};
    use std::sync::mpsc;

    /// The device's end over two in-memory pipes, on a thread: a device that echoes its input
    /// back as its output, doubled, with no bundle behind it.
    struct Pipe {
        rx: mpsc::Receiver<Vec<u8>>,
        pending: Vec<u8>,
        tx: mpsc::Sender<Vec<u8>>,
    }

    impl Transport for Pipe {
        type Error = ();
        fn read(&mut self, buffer: &mut [u8]) -> Result<usize, ()> {
            if self.pending.is_empty() {
                self.pending = self.rx.recv().unwrap_or_default();
            }
            let n = buffer.len().min(self.pending.len());
            buffer[..n].copy_from_slice(&self.pending[..n]);
            self.pending.drain(..n);
            Ok(n)
        }
        fn write(&mut self, bytes: &[u8]) -> Result<(), ()> {
            self.tx.send(bytes.to_vec()).map_err(|_| ())
        }
    }

    struct Sender(mpsc::Sender<Vec<u8>>);
    impl Write for Sender {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            let _ = self.0.send(bytes.to_vec());
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    struct Receiver(mpsc::Receiver<Vec<u8>>, Vec<u8>);
    impl Read for Receiver {
        fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
            if self.1.is_empty() {
                self.1 = self.0.recv().unwrap_or_default();
            }
            let n = buffer.len().min(self.1.len());
            buffer[..n].copy_from_slice(&self.1[..n]);
            self.1.drain(..n);
            Ok(n)
        }
    }

    /// A device thread serving `device`'s messages; returns the host's streams.
    fn device(run: impl FnOnce(&mut Link<Pipe>) + Send + 'static) -> (Receiver, Sender) {
        let (to_host, from_device) = mpsc::channel();
        let (to_device, from_host) = mpsc::channel();
        std::thread::spawn(move || {
            let pipe = Pipe {
                rx: from_host,
                pending: Vec::new(),
                tx: to_host,
            };
            run(&mut Link::new(pipe));
        });
        (Receiver(from_device, Vec::new()), Sender(to_device))
    }

    fn hello(inputs: &[u32], outputs: &[u32]) -> Hello {
        let mut hello = Hello {
            version: CHANNEL_VERSION,
            arena_bytes: 1024,
            steps: 2,
            inputs: Default::default(),
            outputs: Default::default(),
        };
        hello.inputs.extend_from_slice(inputs).unwrap();
        hello.outputs.extend_from_slice(outputs).unwrap();
        hello
    }

    #[test]
    fn a_session_collects_outputs_and_cycles() {
        let input: Vec<u8> = (0..700u32).map(|i| (i % 251) as u8).collect();
        let (from_device, to_device) = device(|link| {
            let hello = Hello {
                steps: 3,
                ..hello(&[700], &[700, 3])
            };
            link.send(&ToHost::Hello(hello)).unwrap();
            let mut got = Vec::new();
            while let ToDevice::Input { chunk, .. } = link.receive().unwrap() {
                got.extend_from_slice(chunk);
            }
            // Step 1 is a loop's body, run twice: one count per call.
            for step in [0, 1, 1] {
                let count = 10 + step;
                link.send(&ToHost::StepCycles { step, count }).unwrap();
            }
            for (offset, chunk) in (0..).step_by(200).zip(got.chunks(200)) {
                let output = ToHost::Output {
                    index: 0,
                    offset,
                    chunk,
                };
                link.send(&output).unwrap();
            }
            let chunk = &[1, 2, 3];
            let output = ToHost::Output {
                index: 1,
                offset: 0,
                chunk,
            };
            link.send(&output).unwrap();
            link.send(&ToHost::Done { steps: 3 }).unwrap();
        });
        let run = exchange(from_device, to_device, std::slice::from_ref(&input)).unwrap();
        assert_eq!(run.outputs, vec![input, vec![1, 2, 3]]);
        assert_eq!((run.step_cycles, run.steps), (vec![10, 11, 11], 3));
    }

    /// A session of runs and resets: what the device receives, in order, and each run's outputs.
    #[test]
    fn a_session_makes_each_invocation_then_ends() {
        let (seen_tx, seen) = mpsc::channel();
        let (from_device, to_device) = device(move |link| {
            link.send(&ToHost::Hello(hello(&[2], &[2]))).unwrap();
            let mut input = Vec::new();
            loop {
                let message = link.receive().unwrap();
                let _ = seen_tx.send(format!("{message:?}"));
                match message {
                    ToDevice::Input { chunk, .. } => input = chunk.to_vec(),
                    ToDevice::Run => {
                        let (index, offset, chunk) = (0, 0, &input[..]);
                        let output = ToHost::Output {
                            index,
                            offset,
                            chunk,
                        };
                        link.send(&output).unwrap();
                        link.send(&ToHost::Done { steps: 2 }).unwrap();
                    }
                    ToDevice::Reset => {}
                    ToDevice::End => return,
                }
            }
        });
        let (a, b) = (vec![vec![1, 2]], vec![vec![3, 4]]);
        let invocations = [Invocation::Run(&a), Invocation::Reset, Invocation::Run(&b)];
        let runs = Host::new(from_device, to_device)
            .session(&invocations)
            .unwrap();
        let outputs: Vec<&Vec<Vec<u8>>> = runs.iter().map(|r| &r.outputs).collect();
        assert_eq!(outputs, [&a, &b]);
        let seen: Vec<String> = seen.iter().collect();
        let kinds: Vec<&str> = seen
            .iter()
            .map(|m| m.split([' ', '{']).next().unwrap())
            .collect();
        assert_eq!(kinds, ["Input", "Run", "Reset", "Input", "Run", "End"]);
    }

    #[test]
    fn device_errors_and_wrong_inputs_are_named() {
        let (from_device, to_device) = device(|link| {
            link.send_error(format_args!("bundle refused: no")).unwrap();
        });
        match exchange(from_device, to_device, &[]) {
            Err(ChannelError::Device(message)) => assert_eq!(message, "bundle refused: no"),
            other => panic!("{other:?}"),
        }
        let (from_device, to_device) = device(|link| {
            link.send(&ToHost::Hello(hello(&[8], &[4]))).unwrap();
        });
        let error = exchange(from_device, to_device, &[vec![0; 4]]).unwrap_err();
        assert!(
            error.to_string().contains("[8] bytes, given [4]"),
            "{error}"
        );
    }

    #[test]
    fn another_version_and_a_closed_stream_are_named() {
        let mut other = hello(&[], &[]);
        other.version = CHANNEL_VERSION + 1;
        let (from_device, to_device) = device(move |link| {
            link.send(&ToHost::Hello(other)).unwrap();
        });
        let error = exchange(from_device, to_device, &[]).unwrap_err();
        assert!(matches!(error, ChannelError::Version { .. }), "{error}");
        let text = b"kiln: panic: at boot".to_vec();
        let error = exchange(&text[..], std::io::sink(), &[]).unwrap_err();
        assert!(error
            .to_string()
            .ends_with("it had sent: kiln: panic: at boot"));
    }
}
