//! Property test on real drivers: the linearizer's random kernels (random shapes and views,
//! elementwise chains, zero to two reduces; random legal opts including LOCAL, GROUP and
//! GROUPTOP, or the GPU heuristics' opts) rendered as OpenCL C and GLSL, run on PoCL and
//! lavapipe in one batch per driver, against the naive reference.

mod gpu_support;

use gpu_support::limits;
use kiln_codegen::dtype::Scalar;
use kiln_codegen::gpu::{Api, GpuKernel};
use kiln_codegen::kernel::Kernel;
use kiln_codegen::linearize::LinearizeError;
use kiln_codegen::optimize::gpu_heuristic;
use kiln_codegen::render::{to_program, ProgramError};
use kiln_codegen::target::DeviceLimits;
use kiln_codegen::tensor::Tensor;
use kiln_runners::gpu::{opencl, vulkan, KernelCall};
use kiln_test_support::gen::{random_case, random_opts, Case};
use kiln_test_support::naive::{close, evaluate, Val};
use kiln_test_support::rng::Rng;

const CASES: u64 = 150;

fn encode(case: &Case, v: &[f64]) -> Vec<u8> {
    Tensor::vector(case.dtype.scalar, v).into_bytes()
}

fn decode(case: &Case, b: &[u8]) -> Vec<f64> {
    let s = case.dtype.scalar;
    let t = Tensor::new(s, vec![b.len() / s.size()], b.to_vec()).expect("whole elements");
    t.to_f64()
}

struct Prepared {
    case: Case,
    want: Vec<Val>,
    kernel: GpuKernel,
    call: KernelCall,
    opts: String,
}

fn prepare(api: Api, limits: &DeviceLimits, seed: u64) -> Option<Prepared> {
    let case = random_case(seed);
    let want = evaluate(&case);
    let mut k = Kernel::new(case.ast.clone(), api.target(limits)).expect("kernel");
    // Half the cases take random opts, half the GPU heuristics' opts.
    let opts = if seed.is_multiple_of(2) {
        random_opts(&mut Rng::new(seed ^ 0x6770), &mut k, true)
    } else {
        gpu_heuristic::optimize(&mut k, &|k| kiln_codegen::linearize::linearize(k).is_ok())
    };
    let p = match to_program(&k) {
        Ok(p) => p,
        Err(ProgramError::Linearize(LinearizeError::Dims { .. })) => return None,
        Err(e) => panic!("seed {seed:#x} on {}: {e}", api.name()),
    };
    let mut data: Vec<(u32, Vec<f64>)> = vec![(0, vec![0.0; want.len()])];
    data.extend(case.inputs.iter().map(|i| (i.id, i.data.clone())));
    let buffers = p
        .buffers
        .iter()
        .map(|b| {
            let v = &data.iter().find(|(id, _)| *id == b.id.0).expect("buffer").1;
            encode(&case, v)
        })
        .collect();
    let kernel = GpuKernel::from_program(&p, &format!("k{seed:x}"));
    let opts: Vec<String> = opts.iter().map(|o| o.to_string()).collect();
    Some(Prepared {
        case,
        want,
        kernel,
        call: KernelCall { kernel: 0, buffers },
        opts: opts.join(", "),
    })
}

#[test]
fn random_kernels_match_the_naive_reference_on_both_drivers() {
    for api in [Api::OpenCl, Api::Vulkan] {
        let Some(l) = limits(api) else { continue };
        let mut rng = Rng::new(0x4b696c6e);
        let cases: Vec<Prepared> = (0..CASES)
            .filter_map(|_| prepare(api, &l, rng.next_u64()))
            .collect();
        let kernels: Vec<GpuKernel> = cases.iter().map(|c| c.kernel.clone()).collect();
        let calls: Vec<KernelCall> = cases
            .iter()
            .enumerate()
            .map(|(i, c)| KernelCall {
                kernel: i,
                buffers: c.call.buffers.clone(),
            })
            .collect();
        let run = match api {
            Api::OpenCl => opencl::run_calls(&opencl::device().unwrap(), &kernels, &calls),
            Api::Vulkan => vulkan::run_calls(&vulkan::device().unwrap(), &kernels, &calls),
        }
        .unwrap_or_else(|e| panic!("{}: {e}", api.name()));
        let (mut grouped, mut locals) = (0, 0);
        for (c, after) in cases.iter().zip(&run.buffers) {
            let got = decode(&c.case, &after[0]);
            let int = c.case.dtype.scalar != Scalar::F32;
            for (i, (g, w)) in got.iter().zip(&c.want).enumerate() {
                assert!(
                    close(*g, *w, int),
                    "{} seed {:#x} opts [{}] element {i}: got {g}, want {}\n{}",
                    api.name(),
                    c.case.seed,
                    c.opts,
                    w.v,
                    c.kernel.src
                );
            }
            grouped += c.kernel.shared_bytes.min(1);
            locals += (c.kernel.threads_per_group() > 1) as usize;
        }
        println!(
            "{}: {} random kernels ({locals} with local dims, {grouped} with local memory) match",
            api.name(),
            cases.len()
        );
        assert!(cases.len() as u64 > CASES * 9 / 10 && grouped > 3 && locals > 20);
    }
}
