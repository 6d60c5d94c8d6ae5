//! A graph with state: compiled, run on the host by the firmware executor over many
//! invocations of one loaded model, each step's outputs against the same recurrence computed
//! here; a reset starts it again.

use kiln_codegen::compile::compile_graph;
use kiln_codegen::dtype::{DType, Scalar};
use kiln_codegen::graph::Graph;
use kiln_codegen::ops::{BinaryOp, ReduceOp};
use kiln_codegen::schedule::ast::Op;
use kiln_codegen::schedule::{create_schedule, Schedule, ScheduleItem};
use kiln_codegen::target::Target;
use kiln_codegen::tensor::Tensor;
use kiln_runners::host;
use kiln_runners::Invocation;

const N: usize = 4;

/// `acc' = acc / 2 + x` (from 1, 2, 3, 4); `ring'` = the ring without its oldest frame, then
/// `x` (from zeros); `total' = total + x` (from zeros); the outputs `acc' + acc`, the ring's
/// sum and `2 · total'`, with a square in between so that the arena holds intermediates beside
/// the states. `total` is updated in place (its kernel reads each element where it writes it, and
/// nothing reads the old value later); `acc` is read again after its update, and the ring's
/// shift reads other elements, so both keep their copies.
fn streaming_graph() -> (Graph, Vec<kiln_codegen::graph::Lazy>) {
    let mut g = Graph::new();
    let x = g.input("x", DType::F32, &[1, N]);
    let init = Tensor::from_f64(Scalar::F32, vec![1, N], &[1.0, 2.0, 3.0, 4.0]).unwrap();
    let (acc, a) = g.state("acc", DType::F32, &[1, N], Some(init)).unwrap();
    let (ring, r) = g.state("ring", DType::F32, &[3, N], None).unwrap();
    let (total, t) = g.state("total", DType::F32, &[1, N], None).unwrap();
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
    let next_total = g.binary(BinaryOp::Add, &total, &x).unwrap();
    g.set_next_state(t, &next_total).unwrap();
    let two = g.constant(2.0, DType::F32, &[1, N]);
    let out2 = g.binary(BinaryOp::Mul, &next_total, &two).unwrap();
    (g, vec![out0, ring_sum, out2])
}

fn floats(bytes: &[u8]) -> Vec<f32> {
    let words = bytes.chunks_exact(4);
    words
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// The outputs the recurrence gives for `xs`, from the initial state.
fn expected(xs: &[[f32; N]]) -> Vec<[Vec<f32>; 3]> {
    let mut acc = [1.0f32, 2.0, 3.0, 4.0];
    let mut ring = [[0.0f32; N]; 3];
    let mut total = [0.0f32; N];
    xs.iter()
        .map(|x| {
            let next: Vec<f32> = (0..N).map(|i| acc[i] * 0.5 + x[i]).collect();
            let out0 = (0..N).map(|i| next[i] + acc[i]).collect();
            let out1 = (0..N).map(|i| ring.iter().map(|r| r[i]).sum()).collect();
            acc.copy_from_slice(&next);
            ring.rotate_left(1);
            ring[2] = *x;
            for (t, x) in total.iter_mut().zip(x) {
                *t += x;
            }
            [out0, out1, total.iter().map(|v| v * 2.0).collect()]
        })
        .collect()
}

#[test]
fn state_carries_over_invocations_and_resets() {
    let (g, outputs) = streaming_graph();
    let bundle = compile_graph("stream", &g, &outputs, &Target::c(), true, &mut |_, _| {}).unwrap();
    let report = &bundle.report;
    // States of 16, 48 and 16 bytes, 16-byte aligned, first in the arena.
    assert_eq!(report.state_bytes, 80);
    assert!(report.arena_bytes > report.state_bytes, "{report}");
    assert!(report.to_string().contains("state bytes: 80"), "{report}");
    let dir = tempfile::tempdir().unwrap();
    bundle.write(&dir.path().join("bundle")).unwrap();
    let lib = host::build_library(&dir.path().join("bundle")).unwrap();
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
    for (step, (run, outs)) in runs.iter().zip(&want).enumerate() {
        for (k, out) in outs.iter().enumerate() {
            assert_eq!(&floats(&run.outputs[k]), out, "step {step}: output {k}");
        }
    }
}

/// The states that a copy of another buffer updates, in the order of the copies.
fn state_copies(s: &Schedule) -> Vec<usize> {
    let states: Vec<_> = s.states.iter().map(|(b, _)| *b).collect();
    let copies = |it: &&ScheduleItem| matches!(it.ast[0].src()[0].op(), Op::Load(_));
    (s.items.iter().filter(copies))
        .filter(|it| states.contains(&it.bufs[0]))
        .map(|it| states.iter().position(|b| *b == it.bufs[0]).unwrap())
        .collect()
}

#[test]
fn a_state_read_where_it_is_written_is_updated_in_place() {
    let (g, outputs) = streaming_graph();
    let s = create_schedule(&g, &outputs).unwrap();
    // acc and ring keep their copies; total's kernel writes the state itself, reading it there.
    assert_eq!(state_copies(&s), vec![0, 1]);
    let total = s.states[2].0;
    let writers: Vec<_> = s.items.iter().filter(|it| it.bufs[0] == total).collect();
    assert_eq!(writers.len(), 1);
    assert!(
        !writers[0].bufs[1..].contains(&total),
        "{:?}",
        writers[0].bufs
    );
    assert!(writers[0].ast[0].to_string().contains("LOAD data0"));
}
