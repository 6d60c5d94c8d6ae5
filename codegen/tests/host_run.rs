//! A graph compiled to a bundle, its C compiled by the system C compiler and run by the
//! firmware executor on the host, against the same schedule run in the UOp interpreter.

use kiln_codegen::compile::compile_graph;
use kiln_codegen::dtype::{DType, Scalar};
use kiln_codegen::graph::Graph;
use kiln_codegen::host;
use kiln_codegen::render::Target;
use kiln_codegen::schedule::{create_schedule, eval::run_interpreted};
use kiln_codegen::uop::interp::HostBuffer;

fn weight(g: &mut Graph, shape: &[usize], seed: u32) -> kiln_codegen::graph::Lazy {
    let n: usize = shape.iter().product();
    let v: Vec<f32> = (0..n)
        .map(|i| ((((i as u32).wrapping_mul(2654435761) ^ seed) % 1000) as f32 / 500.0) - 1.0)
        .collect();
    g.weight(
        "w",
        DType::F32,
        shape,
        v.iter().flat_map(|x| x.to_le_bytes()).collect(),
    )
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

    let bundle = compile_graph(
        "test",
        &g,
        std::slice::from_ref(&s),
        &Target::c(),
        true,
        &mut |_, _| {},
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("bundle");
    bundle.write(&out).unwrap();
    let lib = host::compile(&out).unwrap();
    let run = host::run(&bundle, &lib, std::slice::from_ref(&bytes)).unwrap();
    let got: Vec<f32> = run.outputs[0]
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();

    let sched = create_schedule(&g, &[s]).unwrap();
    let want = run_interpreted(&sched, &[HostBuffer::from_bytes(Scalar::F32, &bytes)]).unwrap()[0]
        .to_f64();
    assert_eq!(got.len(), 4);
    for (a, b) in got.iter().zip(&want) {
        assert!((*a as f64 - b).abs() < 1e-6, "{got:?} vs {want:?}");
    }
    assert!((got.iter().sum::<f32>() - 1.0).abs() < 1e-5);
    assert_eq!(run.step_times.len(), sched.items.len());
    assert!(
        bundle.report.arena_bytes > 0
            && bundle.report.arena_bytes >= bundle.report.arena_lower_bound
    );
}
