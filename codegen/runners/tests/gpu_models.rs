//! Small models compiled for OpenCL and Vulkan (with the GPU heuristics), run on the installed
//! drivers (PoCL, lavapipe) against the host C run of the same graph; and the files a GPU
//! bundle ships.

mod gpu_support;

use gpu_support::{assert_close, bytes, data, f32s, host_outputs, limits, run, weight};
use kiln_codegen::dtype::DType;
use kiln_codegen::gpu::{self, launch, Api, GpuBundle};
use kiln_codegen::graph::{Graph, Lazy};
use kiln_codegen::ops::ReduceOp;
use kiln_codegen::target::DeviceLimits;
use std::time::Duration;

const APIS: [Api; 2] = [Api::OpenCl, Api::Vulkan];

/// A graph, its outputs and its inputs.
type Model = (Graph, Vec<Lazy>, Vec<Vec<u8>>);

/// conv 3→8 (3×3, pad 1) + relu + 2×2 max pool + conv 8→16 + relu + global mean + matmul
/// (16→10) + softmax.
fn cnn() -> Model {
    let mut g = Graph::new();
    let x = g.input("x", DType::F32, &[1, 3, 16, 16]);
    let w1 = weight(&mut g, "w1", &[8, 3, 3, 3], 1);
    let b1 = weight(&mut g, "b1", &[8], 2);
    let c = g
        .conv(&x, &w1, Some(&b1), &[1, 1], &[1, 1], &[(1, 1), (1, 1)], 1)
        .unwrap();
    let r = g.relu(&c).unwrap();
    let windows = g
        .pool(&r, &[2, 2], &[2, 2], &[1, 1], &[(0, 0), (0, 0)])
        .unwrap();
    let p = g.reduce(ReduceOp::Max, &windows, &[4, 5]).unwrap();
    let p = p.reshape(&[1, 8, 8, 8]).unwrap();
    let w2 = weight(&mut g, "w2", &[16, 8, 3, 3], 3);
    let c2 = g
        .conv(&p, &w2, None, &[1, 1], &[1, 1], &[(1, 1), (1, 1)], 1)
        .unwrap();
    let r2 = g.relu(&c2).unwrap();
    let m = g.mean(&r2, &[2, 3]).unwrap().reshape(&[1, 16]).unwrap();
    let fw = weight(&mut g, "fc", &[16, 10], 4);
    let y = g.matmul(&m, &fw).unwrap();
    let s = g.softmax(&y, 1).unwrap();
    (g, vec![y, s], vec![bytes(&data(3 * 16 * 16, 5))])
}

/// Two dense layers on a batch: matmuls large enough for upcasts and local dims.
fn mlp() -> Model {
    let mut g = Graph::new();
    let x = g.input("x", DType::F32, &[64, 128]);
    let w1 = weight(&mut g, "w1", &[128, 96], 6);
    let h = g.matmul(&x, &w1).unwrap();
    let h = g.relu(&h).unwrap();
    let w2 = weight(&mut g, "w2", &[96, 32], 7);
    let y = g.matmul(&h, &w2).unwrap();
    (g, vec![y], vec![bytes(&data(64 * 128, 8))])
}

fn total(t: &[Duration]) -> Duration {
    t.iter().sum()
}

/// Compiles `model` for `api` under `limits`, runs it, checks it against the host C outputs.
fn check(name: &str, api: Api, limits: &DeviceLimits, model: fn() -> Model) -> GpuBundle {
    let (g, outs, inputs) = model();
    let want = host_outputs(name, &g, &outs, &inputs);
    let gb = gpu::compile(name, &g, &outs, api, limits, &mut |_, _| {}).expect("compiles");
    let first = run(&gb, &inputs, 1);
    let r = run(&gb, &inputs, 3);
    assert_eq!(first.outputs, r.outputs, "runs agree");
    for (i, (got, want)) in r.outputs.iter().zip(&want).enumerate() {
        let what = format!("{name} on {} output {i}", api.name());
        let (abs, rel) = assert_close(&what, &f32s(got), &f32s(want), 1e-4, 1e-5);
        println!("{what}: max abs err {abs:e}, max rel err {rel:e}");
    }
    let locals = gb
        .kernels
        .iter()
        .filter(|k| k.threads_per_group() > 1)
        .count();
    println!(
        "{name} on {} ({}): {} launches of {} kernels ({locals} with local dims), device time \
         {:?} (first run {:?})",
        api.name(),
        r.device,
        r.step_times.len(),
        gb.kernels.len(),
        total(&r.step_times),
        total(&first.step_times)
    );
    gb
}

#[test]
fn cnn_matches_the_host_on_both_drivers() {
    for api in APIS {
        let Some(l) = limits(api) else { continue };
        let gb = check("cnn", api, &l, cnn);
        assert!(
            gb.kernels.iter().any(|k| k.threads_per_group() > 1),
            "the GPU heuristics give local dims"
        );
    }
}

#[test]
fn mlp_matches_the_host_with_device_and_portable_limits() {
    for api in APIS {
        let Some(l) = limits(api) else { continue };
        let gb = check("mlp", api, &l, mlp);
        let first = &gb.kernels[0];
        assert!(first.threads_per_group() > 1, "{first:?}");
        let portable = api.default_limits();
        let gb = check("mlp-portable", api, &portable, mlp);
        assert!(gb
            .kernels
            .iter()
            .all(|k| k.threads_per_group() <= portable.local_threads_max));
    }
}

/// Two elementwise kernels of 720 and 240 elements: on a GPU their sources are the same but
/// for the name (the sizes are in the launch, not the source).
fn two_sizes() -> Model {
    let mut g = Graph::new();
    let mut outs = Vec::new();
    for (name, n) in [("a", 720), ("b", 240)] {
        let x = g.input(name, DType::F32, &[n]);
        let one = g.constant(1.0, DType::F32, &[n]);
        outs.push(
            g.binary(kiln_codegen::ops::BinaryOp::Add, &x, &one)
                .unwrap(),
        );
    }
    let inputs = vec![bytes(&data(720, 11)), bytes(&data(240, 12))];
    (g, outs, inputs)
}

/// Kernels that share a source but not their launch sizes keep one kernel-table entry each,
/// with its own sizes: sharing one launched the 240-element kernel over 720 elements, writing
/// past its buffer (hey_jarvis's state copies did).
#[test]
fn kernels_of_one_source_and_other_sizes_launch_with_their_own() {
    for api in APIS {
        let Some(l) = limits(api) else { continue };
        let gb = check("two_sizes", api, &l, two_sizes);
        let mut groups: Vec<[usize; 3]> = gb.kernels.iter().map(|k| k.groups).collect();
        groups.dedup();
        assert_eq!(gb.kernels.len(), 2, "{:?}", gb.bundle.kernel_names);
        assert_eq!(groups.len(), 2, "{groups:?}");
    }
}

#[test]
fn a_gpu_bundle_writes_sources_spirv_and_a_launch_table() {
    for api in APIS {
        let Some(l) = limits(api) else { continue };
        let (g, outs, _) = cnn();
        let gb = gpu::compile("cnn", &g, &outs, api, &l, &mut |_, _| {}).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("bundle");
        let files = gb.write(&out).unwrap();
        for f in [
            "schedule.bin",
            "weights.bin",
            "report.txt",
            launch::LAUNCH_FILE,
        ] {
            assert!(out.join(f).exists(), "{f}");
        }
        let table = std::fs::read_to_string(out.join(launch::LAUNCH_FILE)).unwrap();
        let (read_api, kernels) = launch::parse(&table).unwrap();
        assert_eq!(read_api, api);
        assert_eq!(kernels.len(), gb.kernels.len());
        for (a, b) in kernels.iter().zip(&gb.kernels) {
            assert_eq!((&a.name, a.groups, a.local), (&b.name, b.groups, b.local));
        }
        match api {
            Api::OpenCl => {
                let cl = std::fs::read_to_string(out.join(gpu::OPENCL_FILE)).unwrap();
                assert_eq!(cl.matches("__kernel void").count(), gb.kernels.len());
            }
            Api::Vulkan => {
                let spv: Vec<_> = files
                    .iter()
                    .filter(|f| f.extension().is_some_and(|e| e == "spv"))
                    .collect();
                assert_eq!(spv.len(), gb.kernels.len());
                for f in spv {
                    let ok = std::process::Command::new("spirv-val")
                        .args(["--target-env", "vulkan1.1"])
                        .arg(f)
                        .status();
                    if let Ok(status) = ok {
                        assert!(status.success(), "spirv-val {}", f.display());
                    }
                }
            }
        }
    }
}

/// A recurrent layer over `steps` time steps (forward, or `reverse`): each step reads its row
/// of the input sequence and the previous state, `h' = tanh(x_t W + h R)`, and the loop stacks
/// every state into a sequence and keeps the last one. The sequence is also read whole after
/// the loop, so that its rows (the loop's windows) and the whole buffer are both arguments.
fn recurrent(steps: usize, reverse: bool) -> Model {
    use kiln_codegen::graph::loops::{LoopBody, LoopInput, LoopResult};
    use kiln_codegen::ops::BinaryOp;
    let (batch, inputs, hidden) = (2, 3, 5);
    let mut body = Graph::new();
    let x = body.input("x_t", DType::F32, &[batch, inputs]);
    let h = body.input("h", DType::F32, &[batch, hidden]);
    let w = weight(&mut body, "w", &[inputs, hidden], 11);
    let r = weight(&mut body, "r", &[hidden, hidden], 12);
    let xw = body.matmul(&x, &w).unwrap();
    let hr = body.matmul(&h, &r).unwrap();
    let sum = body.binary(BinaryOp::Add, &xw, &hr).unwrap();
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
    let h0 = weight(&mut g, "h0", &[batch, hidden], 13);
    let results = g.repeat(loop_body, &[xs, h0]).unwrap();
    let two = g.constant(2.0, DType::F32, &[batch, hidden]);
    let last = g.binary(BinaryOp::Mul, &results[1], &two).unwrap();
    let mean = g.mean(&results[0], &[0]).unwrap();
    let input = bytes(&data(steps * batch * inputs, 14));
    (g, vec![results[0].clone(), last, mean], vec![input])
}

/// Whether some kernel argument of `gb`'s run starts at an offset the device cannot bind
/// directly: the runtime must then place or copy it elsewhere.
fn has_unaligned_slices(gb: &GpuBundle, align: usize) -> bool {
    use kiln_firmware::schedule::{read_manifest, ScheduleView};
    let plan = read_manifest(&gb.bundle.schedule).unwrap();
    let view = ScheduleView::parse(
        &gb.bundle.schedule,
        plan.arena_bytes as usize,
        gb.kernels.len(),
    )
    .unwrap();
    view.calls()
        .flat_map(|c| c.args)
        .any(|(_, s)| !(s.offset as usize).is_multiple_of(align))
}

#[test]
fn a_recurrent_loop_matches_the_evaluator_on_both_drivers() {
    use kiln_codegen::dtype::Scalar;
    use kiln_codegen::tensor::Tensor;
    let mut unaligned = false;
    for api in APIS {
        let Some(l) = limits(api) else { continue };
        let align = match api {
            Api::OpenCl => kiln_runners::gpu::opencl::device().unwrap().align,
            Api::Vulkan => kiln_runners::gpu::vulkan::device().unwrap().align,
        };
        for (steps, reverse) in [(7, false), (4, true), (1, false)] {
            let name = format!("rnn-{steps}{}", if reverse { "-reverse" } else { "" });
            let (g, outs, inputs) = recurrent(steps, reverse);
            let x = Tensor::new(Scalar::F32, vec![steps, 2, 3], inputs[0].clone()).unwrap();
            let want = kiln_codegen::graph::eval::evaluate(&g, &outs, &[x]).unwrap();
            let gb = gpu::compile(&name, &g, &outs, api, &l, &mut |_, _| {}).expect("compiles");
            unaligned |= has_unaligned_slices(&gb, align);
            let first = run(&gb, &inputs, 1);
            let r = run(&gb, &inputs, 2);
            assert_eq!(first.outputs, r.outputs, "{name}: runs agree");
            assert_eq!(r.outputs.len(), want.len());
            for (i, (got, want)) in r.outputs.iter().zip(&want).enumerate() {
                let what = format!("{name} on {} output {i}", api.name());
                let want: Vec<f32> = want.to_f64().iter().map(|&v| v as f32).collect();
                let (abs, _) = assert_close(&what, &f32s(got), &want, 1e-4, 1e-4);
                println!("{what}: max abs err {abs:e}");
            }
            println!(
                "{name} on {} ({}): {} launches, arena {} bytes, alignment {align}",
                api.name(),
                r.device,
                r.step_times.len(),
                r.arena_bytes
            );
        }
    }
    if kiln_tests::required() {
        assert!(
            unaligned,
            "some slice is unaligned on some device, so the test covers moving it"
        );
    }
}
