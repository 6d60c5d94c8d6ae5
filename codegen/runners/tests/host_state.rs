//! A graph with state: compiled, run on the host by the firmware executor over many
//! invocations of one loaded model, each step's outputs against the same recurrence computed
//! here; a reset starts it again.

use kiln_codegen::compile::compile_graph;
use kiln_codegen::dtype::{DType, Scalar};
use kiln_codegen::graph::Graph;
use kiln_codegen::ops::{BinaryOp, ReduceOp};
use kiln_codegen::target::Target;
use kiln_codegen::tensor::Tensor;
use kiln_runners::host;
use kiln_runners::Invocation;

const N: usize = 4;

/// `acc' = acc / 2 + x` (from 1, 2, 3, 4); `ring'` = the ring without its oldest frame, then
/// `x` (from zeros); the outputs `acc' + acc` and the ring's sum, with a square in between so
/// that the arena holds intermediates beside the states.
fn streaming_graph() -> (Graph, Vec<kiln_codegen::graph::Lazy>) {
    let mut g = Graph::new();
    let x = g.input("x", DType::F32, &[1, N]);
    let init = Tensor::from_f64(Scalar::F32, vec![1, N], &[1.0, 2.0, 3.0, 4.0]).unwrap();
    let (acc, a) = g.state("acc", DType::F32, &[1, N], Some(init)).unwrap();
    let (ring, r) = g.state("ring", DType::F32, &[3, N], None).unwrap();
    let half = g.constant(0.5, DType::F32, &[1, N]);
    let scaled = g.binary(BinaryOp::Mul, &acc, &half).unwrap();
    let next_acc = g.binary(BinaryOp::Add, &scaled, &x).unwrap();
    let sum = g.binary(BinaryOp::Add, &next_acc, &acc).unwrap();
    let square = g.binary(BinaryOp::Mul, &sum, &sum).unwrap();
    let out0 = g.binary(BinaryOp::Sub, &square, &square).unwrap();
    let out0 = g.binary(BinaryOp::Add, &out0, &sum).unwrap();
    let kept = ring.shrink(&[(1, 3), (0, N)]).unwrap();
    let next_ring = g.concat(&[kept, x.clone()], 0).unwrap();
    let ring_sum = g.reduce_axes(ReduceOp::Sum, &ring, &[0]).unwrap();
    g.set_next_state(a, &next_acc).unwrap();
    g.set_next_state(r, &next_ring).unwrap();
    (g, vec![out0, ring_sum])
}

fn floats(bytes: &[u8]) -> Vec<f32> {
    let words = bytes.chunks_exact(4);
    words
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// The outputs the recurrence gives for `xs`, from the initial state.
fn expected(xs: &[[f32; N]]) -> Vec<(Vec<f32>, Vec<f32>)> {
    let mut acc = [1.0f32, 2.0, 3.0, 4.0];
    let mut ring = [[0.0f32; N]; 3];
    xs.iter()
        .map(|x| {
            let next: Vec<f32> = (0..N).map(|i| acc[i] * 0.5 + x[i]).collect();
            let out0 = (0..N).map(|i| next[i] + acc[i]).collect();
            let out1 = (0..N).map(|i| ring.iter().map(|r| r[i]).sum()).collect();
            acc.copy_from_slice(&next);
            ring.rotate_left(1);
            ring[2] = *x;
            (out0, out1)
        })
        .collect()
}

#[test]
fn state_carries_over_invocations_and_resets() {
    let (g, outputs) = streaming_graph();
    let bundle = compile_graph("stream", &g, &outputs, &Target::c(), true, &mut |_, _| {}).unwrap();
    let report = &bundle.report;
    // Two states of 16 and 48 bytes, 16-byte aligned, first in the arena.
    assert_eq!(report.state_bytes, 64);
    assert!(report.arena_bytes > report.state_bytes, "{report}");
    assert!(report.to_string().contains("state bytes: 64"), "{report}");
    let dir = tempfile::tempdir().unwrap();
    bundle.write(&dir.path().join("bundle")).unwrap();
    let lib = host::compile(&dir.path().join("bundle")).unwrap();
    let xs: Vec<[f32; N]> = (0..20)
        .map(|k| std::array::from_fn(|i| (k * N + i) as f32 * 0.25 - 3.0))
        .collect();
    let inputs: Vec<Vec<Vec<u8>>> = (xs.iter())
        .map(|x| vec![x.iter().flat_map(|v| v.to_le_bytes()).collect()])
        .collect();
    let mut invocations: Vec<Invocation> = inputs.iter().map(|i| Invocation::Run(i)).collect();
    invocations.push(Invocation::Reset);
    invocations.extend(inputs[..3].iter().map(|i| Invocation::Run(i)));
    let runs = host::run_invocations(&bundle, &lib, &invocations).unwrap();
    let mut want = expected(&xs);
    want.extend(expected(&xs[..3]));
    assert_eq!(runs.len(), want.len());
    for (step, (run, (out0, out1))) in runs.iter().zip(&want).enumerate() {
        assert_eq!(&floats(&run.outputs[0]), out0, "step {step}: output 0");
        assert_eq!(&floats(&run.outputs[1]), out1, "step {step}: output 1");
    }
}
