use super::*;
use crate::exec::tests::{AlignedBytes, KERNELS};
use crate::schedule::ScheduleView;
use crate::testdata::add_relu;
use std::string::String;
use std::vec::Vec;

/// A transport over bytes the host wrote in advance, handing them out `step` at a time (to
/// split frames across reads), and collecting what the device writes.
struct Script {
    input: Vec<u8>,
    at: usize,
    step: usize,
    output: Vec<u8>,
}

impl Script {
    fn new(messages: &[ToDevice], step: usize) -> Self {
        let mut input = Vec::new();
        for message in messages {
            let mut buffer = [0; MAX_FRAME];
            input.extend_from_slice(encode(message, &mut buffer).unwrap());
        }
        Script {
            input,
            at: 0,
            step,
            output: Vec::new(),
        }
    }
}

impl Transport for &mut Script {
    type Error = ();
    fn read(&mut self, buffer: &mut [u8]) -> Result<usize, ()> {
        let n = buffer.len().min(self.step).min(self.input.len() - self.at);
        buffer[..n].copy_from_slice(&self.input[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
    fn write(&mut self, bytes: &[u8]) -> Result<(), ()> {
        self.output.extend_from_slice(bytes);
        Ok(())
    }
}

/// What the device sent, frame by frame, as owned copies.
fn frames(output: &[u8]) -> Vec<Vec<u8>> {
    output
        .split_inclusive(|&b| b == 0)
        .map(<[u8]>::to_vec)
        .collect()
}

/// Runs the add-relu bundle behind a scripted host; returns the result and the frames sent.
fn session(messages: &[ToDevice], step: usize) -> (Result<u32, LinkError<()>>, Vec<Vec<u8>>) {
    let test = add_relu();
    let view = ScheduleView::parse(&test.schedule, 128, 3).unwrap();
    let mut arena = AlignedBytes::new(&[0; 128]);
    let mut weights = AlignedBytes::new(&test.weights);
    let weights = weights.get(test.weights.len());
    let mut executor = Executor::new(view, &KERNELS, arena.get(128), weights).unwrap();
    let mut script = Script::new(messages, step);
    let mut link = Link::new(&mut script);
    let mut cycles = 100;
    let result = serve(&mut link, &mut executor, |event| match event {
        KernelEvent::Before { .. } => None,
        KernelEvent::After { .. } => {
            cycles += 1;
            Some(cycles)
        }
    });
    (result, frames(&script.output))
}

#[test]
fn a_session_gives_the_outputs_and_cycles() {
    let test = add_relu();
    let input = &test.inputs[0];
    let (first, second) = input.split_at(5);
    let messages = [
        ToDevice::Input {
            index: 0,
            offset: 0,
            chunk: first,
        },
        ToDevice::Input {
            index: 0,
            offset: 5,
            chunk: second,
        },
        ToDevice::Run,
        ToDevice::End,
    ];
    for step in [1, 3, 1000] {
        let (result, mut frames) = session(&messages, step);
        assert_eq!(result, Ok(1));
        assert_eq!(frames.len(), 1 + 3 + 2 + 1, "{frames:?}");
        assert_eq!(hello_version(&mut frames[0].clone()), Some(CHANNEL_VERSION));
        let decoded: Vec<ToHost> = frames.iter_mut().map(|f| decode(f).unwrap()).collect();
        let ToHost::Hello(hello) = &decoded[0] else {
            panic!("{decoded:?}")
        };
        assert_eq!((hello.arena_bytes, hello.steps), (128, 3));
        assert_eq!(
            (&hello.inputs[..], &hello.outputs[..]),
            (&[32][..], &[32, 32][..])
        );
        for (step, message) in decoded[1..4].iter().enumerate() {
            let count = 101 + step as u32;
            let step = step as u32;
            assert_eq!(message, &ToHost::StepCycles { step, count });
        }
        for (index, message) in decoded[4..6].iter().enumerate() {
            let chunk = &test.outputs[index][..];
            let index = index as u8;
            let want = ToHost::Output {
                index,
                offset: 0,
                chunk,
            };
            assert_eq!(message, &want);
        }
        assert_eq!(decoded[6], ToHost::Done { steps: 3 });
    }
}

fn refusal(messages: &[ToDevice]) -> Vec<u8> {
    let (result, mut frames) = session(messages, 7);
    assert_eq!(result, Err(LinkError::Protocol));
    assert_eq!(frames.len(), 2);
    match decode(&mut frames[1]) {
        Some(ToHost::Error { message }) => message.as_bytes().to_vec(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_device_refuses_what_the_protocol_does_not_allow() {
    let chunk = &[0u8; 40][..];
    let text = |messages: &[ToDevice]| String::from_utf8(refusal(messages)).unwrap();
    assert_eq!(
        text(&[ToDevice::Run]),
        "Run before input 0 was complete (0 of 32 bytes)"
    );
    let bad_index = [ToDevice::Input {
        index: 1,
        offset: 0,
        chunk,
    }];
    assert_eq!(text(&bad_index), "the model has no input 1");
    let too_long = [ToDevice::Input {
        index: 0,
        offset: 0,
        chunk,
    }];
    assert_eq!(text(&too_long), "input 0: chunk past its end (32 bytes)");
    let gap = [ToDevice::Input {
        index: 0,
        offset: 4,
        chunk: &chunk[..4],
    }];
    assert_eq!(text(&gap), "input 0: chunk at byte 4, expected byte 0");
    for stop in [ToDevice::Reset, ToDevice::End] {
        let amid = [
            ToDevice::Input {
                index: 0,
                offset: 0,
                chunk: &chunk[..4],
            },
            stop,
        ];
        assert_eq!(text(&amid), "Reset or End amid a run's inputs");
    }
}

/// The accumulator (`out = state + x`, the state kept) over one session: runs on ones, a
/// reset, and a run again; each run's first output element.
#[test]
fn runs_of_a_session_share_the_state_until_a_reset() {
    let (schedule, weights) = crate::exec::tests::accumulator(None);
    let view = ScheduleView::parse(&schedule, 96, 3).unwrap();
    let mut arena = AlignedBytes::new(&[0; 96]);
    let mut aligned = AlignedBytes::new(&weights);
    let weights = aligned.get(weights.len());
    let mut executor = Executor::new(view, &KERNELS, arena.get(96), weights).unwrap();
    let ones = crate::testdata::le_bytes(&[1.0f32; 8]);
    let input = ToDevice::Input {
        index: 0,
        offset: 0,
        chunk: &ones,
    };
    let run = [input.clone(), ToDevice::Run];
    let messages: Vec<ToDevice> =
        [&run[..], &run, &[ToDevice::Reset], &run, &[ToDevice::End]].concat();
    let mut script = Script::new(&messages, 5);
    let mut link = Link::new(&mut script);
    assert_eq!(serve(&mut link, &mut executor, |_| None), Ok(3));
    let mut firsts = Vec::new();
    for mut frame in frames(&script.output) {
        if let Some(ToHost::Output { chunk, .. }) = decode(&mut frame) {
            firsts.push(f32::from_le_bytes(chunk[..4].try_into().unwrap()));
        }
    }
    assert_eq!(firsts, [1.0, 2.0, 1.0]);
}

#[test]
fn a_closed_stream_or_a_bad_frame_ends_the_session() {
    let (result, frames) = session(&[], 4);
    assert_eq!((result, frames.len()), (Err(LinkError::Closed), 1));
    // A session ends with `End`, not with the stream.
    let (result, _) = session(&[ToDevice::Reset], 4);
    assert_eq!(result, Err(LinkError::Closed));
    let mut script = Script::new(&[], 4);
    script.input = std::vec![0x02, 0x07, 0x00];
    let mut link = Link::new(&mut script);
    assert!(matches!(link.receive(), Err(LinkError::BadFrame)));
    script.input = std::vec![0x05; MAX_FRAME + 1];
    script.at = 0;
    let mut link = Link::new(&mut script);
    assert!(matches!(link.receive(), Err(LinkError::BadFrame)));
}

#[test]
fn the_largest_messages_fit_a_frame() {
    let chunk = [0u8; MAX_CHUNK];
    let mut buffer = [0u8; MAX_FRAME];
    let output = ToHost::Output {
        index: u8::MAX,
        offset: u32::MAX,
        chunk: &chunk,
    };
    assert!(encode(&output, &mut buffer).is_some());
    let input = ToDevice::Input {
        index: u8::MAX,
        offset: u32::MAX,
        chunk: &chunk,
    };
    assert!(encode(&input, &mut buffer).is_some());
    let full = heapless::Vec::from_slice(&[u32::MAX; MAX_MODEL_TENSORS]).unwrap();
    let hello = ToHost::Hello(Hello {
        version: u16::MAX,
        arena_bytes: u32::MAX,
        steps: u32::MAX,
        inputs: full.clone(),
        outputs: full,
    });
    assert!(encode(&hello, &mut buffer).is_some());
    let long = std::string::ToString::to_string("e").repeat(MAX_ERROR);
    let error = ToHost::Error { message: &long };
    assert!(encode(&error, &mut buffer).is_some());
    // Frames hold no zero but the last.
    let frame = encode(&output, &mut buffer).unwrap();
    assert_eq!(frame.iter().position(|&b| b == 0), Some(frame.len() - 1));
}

#[test]
fn long_errors_are_cut() {
    let mut script = Script::new(&[], 4);
    let mut link = Link::new(&mut script);
    let long = std::string::ToString::to_string("x").repeat(MAX_ERROR + 50);
    link.send_error(format_args!("é{long}")).unwrap();
    let mut frame = script.output.clone();
    match decode(&mut frame) {
        Some(ToHost::Error { message }) => {
            assert_eq!(message.len(), MAX_ERROR);
            assert!(message.starts_with('é'));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn other_versions_are_read_before_the_rest() {
    let mut buffer = [0u8; MAX_FRAME];
    let mut frame = encode(&(0u8, 7u16, 99u32), &mut buffer).unwrap().to_vec();
    assert_eq!(hello_version(&mut frame), Some(7));
    let mut done = encode(&ToHost::Done { steps: 1 }, &mut buffer)
        .unwrap()
        .to_vec();
    assert_eq!(hello_version(&mut done), None);
}
