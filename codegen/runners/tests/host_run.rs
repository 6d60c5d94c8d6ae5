//! A graph compiled to a bundle, its C compiled by the system C compiler and run by the
//! firmware executor on the host, against the same schedule run in the UOp interpreter.

use kiln_codegen::compile::compile_graph;
use kiln_codegen::dtype::{DType, Scalar};
use kiln_codegen::graph::Graph;
use kiln_codegen::interpret::run_schedule;
use kiln_codegen::schedule::create_schedule;
use kiln_codegen::target::Target;
use kiln_codegen::tensor::Tensor;
use kiln_firmware::error::BundleError;
use kiln_runners::host;
use kiln_test_support::weights::weight;

/// Compiles `out` of `g` for `target`, runs it on the host on `input`: the bundle and the
/// output as floats, and the interpreter's output of the unoptimized schedule.
fn host_and_interpreter(
    g: &Graph,
    out: &kiln_codegen::graph::Lazy,
    target: &Target,
    input: &[u8],
) -> (
    kiln_codegen::bundle::Bundle,
    host::HostRun,
    Vec<f32>,
    Vec<f64>,
) {
    let bundle = compile_graph(
        "test",
        g,
        std::slice::from_ref(out),
        target,
        true,
        &mut |_, _| {},
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bundle");
    bundle.write(&path).unwrap();
    let lib = host::build_library(&path).unwrap();
    let run = host::run(&bundle, &lib, &[input.to_vec()]).unwrap();
    let got: Vec<f32> = run.outputs[0]
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let sched = create_schedule(g, std::slice::from_ref(out)).unwrap();
    let shape = g.inputs[0].shape.clone();
    let x = Tensor::new(Scalar::F32, shape, input.to_vec()).unwrap();
    let want = run_schedule(&sched, &[x]).unwrap()[0].to_f64();
    (bundle, run, got, want)
}

#[test]
fn conv_pool_gemm_softmax_runs_on_the_host_like_the_interpreter() {
    let mut g = Graph::new();
    let x = g.input("x", DType::F32, &[1, 3, 10, 10]);
    let w = weight(&mut g, &[8, 3, 3, 3], 1);
    let b = weight(&mut g, &[8], 2);
    let c = g
        .conv(&x, &w, Some(&b), &[1, 1], &[1, 1], &[(1, 1), (1, 1)], 1)
        .unwrap();
    let r = g.relu(&c).unwrap();
    let p = g
        .pool(&r, &[2, 2], &[2, 2], &[1, 1], &[(0, 0), (0, 0)])
        .unwrap();
    let m = g
        .mean(&p, &[4, 5])
        .unwrap()
        .reshape(&[1, 8 * 5 * 5])
        .unwrap();
    let fw = weight(&mut g, &[200, 4], 3);
    let y = g.matmul(&m, &fw).unwrap();
    let s = g.softmax(&y, 1).unwrap();
    let input: Vec<f32> = (0..300)
        .map(|i| ((i * 37 % 101) as f32 / 50.0) - 1.0)
        .collect();
    let bytes: Vec<u8> = input.iter().flat_map(|v| v.to_le_bytes()).collect();

    let (bundle, run, got, want) = host_and_interpreter(&g, &s, &Target::c(), &bytes);
    assert_eq!(got.len(), 4);
    for (a, b) in got.iter().zip(&want) {
        assert!((*a as f64 - b).abs() < 1e-6, "{got:?} vs {want:?}");
    }
    assert!((got.iter().sum::<f32>() - 1.0).abs() < 1e-5);
    let steps = create_schedule(&g, &[s]).unwrap().items.len();
    assert_eq!(run.step_times.len(), steps);
    assert!(
        bundle.report.arena_bytes > 0
            && bundle.report.arena_bytes >= bundle.report.arena_lower_bound
    );
}

/// A 1×1 convolution, a padded 3×3 convolution and a dense layer with bias: on the host target
/// their reduces run over 8-lane float vectors, their weights stored lane-innermost.
#[test]
fn vectorized_kernels_on_the_host_match_the_interpreter() {
    let mut g = Graph::new();
    let x = g.input("x", DType::F32, &[1, 8, 5, 5]);
    let w1 = weight(&mut g, &[16, 8, 1, 1], 4);
    let c1 = g
        .conv(&x, &w1, None, &[1, 1], &[1, 1], &[(0, 0), (0, 0)], 1)
        .unwrap();
    let r1 = g.relu(&c1).unwrap();
    let w2 = weight(&mut g, &[16, 16, 3, 3], 5);
    let b2 = weight(&mut g, &[16], 6);
    let c2 = g
        .conv(&r1, &w2, Some(&b2), &[1, 1], &[1, 1], &[(1, 1), (1, 1)], 1)
        .unwrap();
    let flat = c2.reshape(&[1, 16 * 5 * 5]).unwrap();
    let fw = weight(&mut g, &[400, 24], 7);
    let y = g.matmul(&flat, &fw).unwrap();
    let input: Vec<f32> = (0..200)
        .map(|i| ((i * 29 % 97) as f32 / 48.0) - 1.0)
        .collect();
    let bytes: Vec<u8> = input.iter().flat_map(|v| v.to_le_bytes()).collect();

    let (bundle, _, got, want) = host_and_interpreter(&g, &y, &Target::host(), &bytes);
    let src = &bundle.kernels_c;
    assert!(src.contains("vector_size(32)"), "no vector type in:\n{src}");
    assert!(src.contains("*((float8*)("), "no vector load in:\n{src}");
    assert_eq!(got.len(), 24);
    for (a, b) in got.iter().zip(&want) {
        assert!(
            (*a as f64 - b).abs() < 1e-4 * b.abs().max(1.0),
            "{got:?} vs {want:?}"
        );
    }
}

#[test]
fn a_damaged_schedule_is_refused_with_the_runtime_s_own_error() {
    let mut g = Graph::new();
    let x = g.input("x", DType::F32, &[4]);
    let y = g.relu(&x).unwrap();
    let mut bundle = compile_graph("test", &g, &[y], &Target::c(), true, &mut |_, _| {}).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bundle");
    bundle.write(&path).unwrap();
    let lib = host::build_library(&path).unwrap();
    *bundle.schedule.last_mut().unwrap() ^= 1;
    let err = host::run(&bundle, &lib, &[vec![0; 16]]).unwrap_err();
    assert!(
        matches!(
            err,
            host::HostError::Refused(BundleError::ChecksumMismatch { .. })
        ),
        "{err:?}"
    );
    let text = kiln_codegen::error::chain(&err);
    assert!(
        text.starts_with("the bundle was refused: schedule is damaged"),
        "{text}"
    );
}

/// `h_t = tanh(x_t W + h_{t-1} R)` over `steps` time steps, `y` stacking every `h_t` (in
/// reverse order when `reverse`): the body graph, run by a loop over the model's input.
fn recurrent(steps: usize, reverse: bool) -> (Graph, Vec<kiln_codegen::graph::Lazy>) {
    use kiln_codegen::graph::loops::{LoopBody, LoopInput, LoopResult};
    let (batch, inputs, hidden) = (2, 3, 5);
    let mut body = Graph::new();
    let x = body.input("x_t", DType::F32, &[batch, inputs]);
    let h = body.input("h", DType::F32, &[batch, hidden]);
    let w = weight(&mut body, &[inputs, hidden], 3);
    let r = weight(&mut body, &[hidden, hidden], 4);
    let xw = body.matmul(&x, &w).unwrap();
    let hr = body.matmul(&h, &r).unwrap();
    let sum = body
        .binary(kiln_codegen::ops::BinaryOp::Add, &xw, &hr)
        .unwrap();
    let next = body.tanh(&sum).unwrap();
    let loop_body = LoopBody {
        count: steps,
        graph: body,
        outputs: vec![next],
        inputs: vec![
            LoopInput::Row {
                operand: 0,
                reverse,
            },
            LoopInput::State { init: 1, next: 0 },
        ],
        results: vec![
            LoopResult::Stacked { output: 0, reverse },
            LoopResult::Final { input: 1 },
        ],
    };
    let mut g = Graph::new();
    let xs = g.input("xs", DType::F32, &[steps, batch, inputs]);
    let h0 = weight(&mut g, &[batch, hidden], 5);
    let results = g.repeat(loop_body, &[xs, h0]).unwrap();
    // Read both results after the loop, so that they are values of the model.
    let two = g.constant(2.0, DType::F32, &[batch, hidden]);
    let last = g
        .binary(kiln_codegen::ops::BinaryOp::Mul, &results[1], &two)
        .unwrap();
    (g, vec![results[0].clone(), last])
}

#[test]
fn a_loop_runs_its_body_once_per_time_step_like_the_evaluators() {
    for (steps, reverse) in [(7, false), (4, true), (1, false)] {
        let (g, outs) = recurrent(steps, reverse);
        let n = steps * 2 * 3;
        let xs: Vec<f32> = (0..n).map(|i| ((i * 7) % 11) as f32 / 5.5 - 1.0).collect();
        let input: Vec<u8> = xs.iter().flat_map(|v| v.to_le_bytes()).collect();
        let x = Tensor::new(Scalar::F32, vec![steps, 2, 3], input.clone()).unwrap();
        let naive =
            kiln_codegen::graph::eval::evaluate(&g, &outs, std::slice::from_ref(&x)).unwrap();
        let sched = create_schedule(&g, &outs).unwrap();
        // One step is no loop: the body's nodes join the graph.
        assert_eq!(sched.loops.len(), usize::from(steps > 1));
        let body = sched.loops.first().map_or(0, |l| l.items.len());
        let interpreted = run_schedule(&sched, &[x]).unwrap();
        let bundle = compile_graph("rnn", &g, &outs, &Target::c(), true, &mut |_, _| {}).unwrap();
        // The body's kernels are in the bundle once, whatever the number of steps.
        assert_eq!(bundle.programs.len(), sched.items.len());
        assert!(body <= 4, "{body} kernels in the loop body");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bundle");
        bundle.write(&path).unwrap();
        let lib = host::build_library(&path).unwrap();
        let run = host::run(&bundle, &lib, &[input]).unwrap();
        for (k, want) in naive.iter().enumerate() {
            let want = want.to_f64();
            let interp = interpreted[k].to_f64();
            let got: Vec<f64> = run.outputs[k]
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes(c.try_into().unwrap()) as f64)
                .collect();
            assert_eq!(got.len(), want.len());
            for i in 0..want.len() {
                assert!(
                    (got[i] - want[i]).abs() < 1e-5,
                    "output {k}[{i}] {got:?} {want:?}"
                );
                assert!(
                    (interp[i] - want[i]).abs() < 1e-5,
                    "output {k}[{i}] interpreted"
                );
            }
        }
    }
}
