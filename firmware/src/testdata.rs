//! A tiny hand-written bundle: the firmware's unit tests run it on the host with Rust kernels,
//! and `boards/testdata/add-relu/` holds it, with the same kernels in C, for the boards.
//!
//! Model: `r = relu(x + bias)`, `s = sigmoid(r)` over 8 floats; outputs `r` and `s`.
//! Kernel table: 0 `add(out, a, b)`, 1 `relu(out, x)`, 2 `sigmoid(out, x)`.

use crate::schedule::WeightsDigest;
use crate::schedule::{encode, Arg, Entry, KernelIndex, Manifest, Scalar, Span, Step, TensorDesc};
use std::vec;
use std::vec::Vec;

/// Elements of every tensor.
pub const ELEMENTS: usize = 8;
const BYTES: u32 = (ELEMENTS * 4) as u32;

/// A schedule, its weights, one set of inputs and the outputs they should give.
pub struct TestBundle {
    pub schedule: Vec<u8>,
    pub weights: Vec<u8>,
    pub inputs: Vec<Vec<u8>>,
    pub outputs: Vec<Vec<u8>>,
}

pub fn manifest(weights: &[u8]) -> Manifest {
    let (inputs, outputs) = ([tensor(0)], [tensor(2), tensor(3)]);
    Manifest::new(4 * BYTES, WeightsDigest::of(weights), 3, &inputs, &outputs)
        .expect("within the format's capacities")
}

pub fn steps() -> Vec<Step> {
    let arena = |slot| Arg::Arena(slot_span(slot));
    vec![
        step(0, &[arena(1), arena(0), Arg::Weights(Span::new(0, BYTES))]),
        step(1, &[arena(2), arena(1)]),
        step(2, &[arena(3), arena(2)]),
    ]
}

/// Each step as an entry of its own.
pub fn calls(steps: Vec<Step>) -> Vec<Entry> {
    steps.into_iter().map(Entry::Call).collect()
}

pub fn add_relu() -> TestBundle {
    let x: Vec<f32> = (0..ELEMENTS).map(|i| i as f32 - 4.0).collect();
    let bias: Vec<f32> = (0..ELEMENTS).map(|i| 0.75 - 0.25 * i as f32).collect();
    let r: Vec<f32> = x.iter().zip(&bias).map(|(x, b)| (x + b).max(0.0)).collect();
    let s: Vec<f32> = r.iter().map(|r| 1.0 / (1.0 + (-r).exp())).collect();
    let weights = le_bytes(&bias);
    TestBundle {
        schedule: encode(&manifest(&weights), &calls(steps())),
        weights,
        inputs: vec![le_bytes(&x)],
        outputs: vec![le_bytes(&r), le_bytes(&s)],
    }
}

pub fn le_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

pub fn from_le_bytes(bytes: &[u8]) -> Vec<f32> {
    let words = bytes.chunks_exact(4);
    words
        .map(|w| f32::from_le_bytes([w[0], w[1], w[2], w[3]]))
        .collect()
}

/// Tensor slot `slot` of the arena: 8 floats each.
fn slot_span(slot: u32) -> Span {
    Span::new(slot * BYTES, BYTES)
}

fn tensor(slot: u32) -> TensorDesc {
    let shape = [1, ELEMENTS as u32];
    TensorDesc::new(slot_span(slot), Scalar::F32, &shape).expect("within the format's capacities")
}

fn step(kernel: u16, args: &[Arg]) -> Step {
    Step::new(KernelIndex(kernel), args).expect("within the format's capacities")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `boards/testdata/add-relu/` holds this bundle; after a change here, regenerate it with
    /// `cargo run -p kiln-firmware --features std --example testdata -- write
    /// boards/testdata/add-relu`.
    #[test]
    fn boards_testdata_is_current() {
        let bundle = add_relu();
        let files = include_bytes!("../../boards/testdata/add-relu/schedule.bin");
        assert_eq!(&files[..], bundle.schedule, "schedule.bin");
        let files = include_bytes!("../../boards/testdata/add-relu/weights.bin");
        assert_eq!(&files[..], bundle.weights, "weights.bin");
        let files = include_bytes!("../../boards/testdata/add-relu/io/input_0.bin");
        assert_eq!(&files[..], bundle.inputs[0], "input_0.bin");
        let expected = [
            &include_bytes!("../../boards/testdata/add-relu/io/expected_0.bin")[..],
            &include_bytes!("../../boards/testdata/add-relu/io/expected_1.bin")[..],
        ];
        for (file, output) in expected.iter().zip(&bundle.outputs) {
            let pairs = from_le_bytes(file).into_iter().zip(from_le_bytes(output));
            assert!(pairs.into_iter().all(|(a, b)| (a - b).abs() <= 1e-6));
        }
    }
}
