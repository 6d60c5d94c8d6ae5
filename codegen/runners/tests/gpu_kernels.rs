//! Kernels with chosen opts, rendered as OpenCL C and GLSL and run on the installed drivers
//! (PoCL, lavapipe), against the same program in the UOp interpreter and a naive result:
//! grouped reduces through local memory, two reduces in one kernel, a global size split across
//! axes, float4 vectors; and the errors a device's limits give.

mod gpu_support;

use gpu_support::{assert_close, bytes, data, f32s, limits};
use kiln_codegen::dtype::{DType, Scalar};
use kiln_codegen::gpu::{Api, GpuError, GpuKernel};
use kiln_codegen::kernel::{Kernel, Opt, OptOp};
use kiln_codegen::ops::{AluOp, BinaryOp, ReduceOp, UnaryOp};
use kiln_codegen::render::{to_program, Program};
use kiln_codegen::schedule::ast::LazyOp;
use kiln_codegen::shape::ShapeTracker;
use kiln_codegen::target::DeviceLimits;
use kiln_codegen::uop::interp::{run as interpret, HostBuffer};
use kiln_codegen::uop::{ArgId, UOpKind};
use kiln_runners::gpu::{opencl, vulkan, KernelCall};
use std::collections::HashMap;

const APIS: [Api; 2] = [Api::OpenCl, Api::Vulkan];

fn load(id: u32, shape: &[usize]) -> LazyOp {
    LazyOp::load(id, DType::F32, ShapeTracker::from_shape(shape))
}

fn sum(axes: &[usize], x: LazyOp) -> LazyOp {
    LazyOp::reduce(ReduceOp::Sum, axes.to_vec(), x)
}

fn store(shape: &[usize], x: LazyOp) -> Vec<LazyOp> {
    vec![LazyOp::store(0, ShapeTracker::from_shape(shape), x)]
}

/// The program for `ast` on `api`'s target with `limits`, after `opts` (each must apply).
fn program(api: Api, limits: &DeviceLimits, ast: &[LazyOp], opts: &[Opt]) -> Program {
    let mut k = Kernel::new(ast.to_vec(), api.target(limits)).expect("kernel");
    for &o in opts {
        k.apply_opt(o)
            .unwrap_or_else(|e| panic!("{}: {e}", api.name()));
    }
    to_program(&k).unwrap_or_else(|e| panic!("{}: {e}", api.name()))
}

/// Runs `p` on the device and in the interpreter with the same buffers (data0 the output of
/// `out` elements, then `inputs` as data1…); checks they agree and returns the device's output.
fn run_both(api: Api, p: &Program, out: usize, inputs: &[Vec<f32>]) -> Vec<f32> {
    let mut all = vec![vec![0f32; out]];
    all.extend(inputs.iter().cloned());
    let mut bufs: HashMap<ArgId, HostBuffer> = HashMap::new();
    for (i, v) in all.iter().enumerate() {
        bufs.insert(
            ArgId(i as u32),
            HostBuffer::from_bytes(Scalar::F32, &bytes(v)),
        );
    }
    interpret(&p.uops, &mut bufs, &HashMap::new()).expect("interpreter");
    let want = f32s(&bufs[&ArgId(0)].to_bytes());
    let k = GpuKernel::from_program(p, &p.name);
    let call = KernelCall {
        kernel: 0,
        buffers: p
            .buffers
            .iter()
            .map(|b| bytes(&all[b.id.0 as usize]))
            .collect(),
    };
    let kernels = std::slice::from_ref(&k);
    let calls = std::slice::from_ref(&call);
    let run = match api {
        Api::OpenCl => opencl::run_calls(&opencl::device().unwrap(), kernels, calls),
        Api::Vulkan => vulkan::run_calls(&vulkan::device().unwrap(), kernels, calls),
    }
    .unwrap_or_else(|e| panic!("{}: {e}\n{}", api.name(), p.src));
    let got = f32s(&run.buffers[0][0]);
    let (abs, _) = assert_close(api.name(), &got, &want, 1e-5, 1e-6);
    println!(
        "{} {}: groups {:?} local {:?}, max |device - interpreter| {abs:e}, {:?}",
        api.name(),
        p.name,
        k.groups,
        k.local,
        run.times[0]
    );
    got
}

fn count(p: &Program, f: impl Fn(&UOpKind) -> bool) -> usize {
    p.uops.uops.iter().filter(|u| f(&u.kind)).count()
}

#[test]
fn grouped_reduce_through_local_memory() {
    let (rows, n) = (6, 512);
    let x = data(rows * n, 1);
    let want: Vec<f32> = x.chunks(n).map(|r| r.iter().sum()).collect();
    let ast = store(&[rows, 1], sum(&[1], load(1, &[rows, n])));
    for api in APIS {
        let Some(l) = limits(api) else { continue };
        for op in [OptOp::Group, OptOp::GroupTop] {
            let opts = [Opt::new(op, 0, 64), Opt::new(OptOp::Local, 0, 2)];
            let p = program(api, &l, &ast, &opts);
            assert_eq!(count(&p, |k| matches!(k, UOpKind::DefineLocal { .. })), 1);
            assert!(count(&p, |k| matches!(k, UOpKind::Barrier)) >= 1);
            assert_eq!(
                p.local_size.as_ref().unwrap().iter().product::<usize>(),
                128
            );
            let got = run_both(api, &p, rows, std::slice::from_ref(&x));
            assert_close("grouped sum", &got, &want, 1e-5, 1e-5);
        }
    }
}

#[test]
fn two_reduces_in_one_kernel_each_with_its_own_temp() {
    // out[r] = sum_j exp2(x[r, j] - max_j x[r, j]): a max, then a sum that uses it.
    let (rows, n) = (4, 96);
    let x = data(rows * n, 2);
    let want: Vec<f32> = x
        .chunks(n)
        .map(|r| {
            let m = r.iter().cloned().fold(f32::MIN, f32::max);
            r.iter().map(|v| (v - m).exp2()).sum()
        })
        .collect();
    let xs = load(1, &[rows, n]);
    let mx = LazyOp::reduce(ReduceOp::Max, vec![1], xs.clone());
    let sub = LazyOp::alu(AluOp::Binary(BinaryOp::Sub), vec![xs, mx]);
    let e = LazyOp::alu(AluOp::Unary(UnaryOp::Exp2), vec![sub]);
    let ast = store(&[rows, 1], sum(&[1], e));
    for api in APIS {
        let Some(l) = limits(api) else { continue };
        let opts = [Opt::new(OptOp::Group, 0, 32), Opt::new(OptOp::Unroll, 1, 0)];
        let p = program(api, &l, &ast, &opts);
        let temps = count(&p, |k| matches!(k, UOpKind::DefineLocal { .. }));
        assert_eq!(temps, 2, "one local buffer per reduce");
        let got = run_both(api, &p, rows, std::slice::from_ref(&x));
        assert_close("multireduce", &got, &want, 1e-5, 1e-5);
    }
}

#[test]
fn a_global_dim_larger_than_the_device_limit_is_split_across_axes() {
    let n = 12288;
    let x = data(n, 3);
    let want: Vec<f32> = x.iter().map(|v| v * v).collect();
    let xs = load(1, &[n]);
    let ast = store(
        &[n],
        LazyOp::alu(AluOp::Binary(BinaryOp::Mul), vec![xs.clone(), xs]),
    );
    for api in APIS {
        let Some(real) = limits(api) else { continue };
        // A small device: 64 groups per axis; 12288 / 4 threads = 3072 groups = 48 × 64.
        let small = DeviceLimits {
            groups_max: [64, 64, 64],
            ..real.clone()
        };
        let p = program(api, &small, &ast, &[Opt::new(OptOp::Local, 0, 4)]);
        let groups = p.global_size.clone().unwrap();
        assert!(groups.iter().filter(|&&g| g > 1).count() >= 2, "{groups:?}");
        assert!(groups.iter().all(|&g| g <= 64), "{groups:?}");
        let got = run_both(api, &p, n, std::slice::from_ref(&x));
        assert_close("split", &got, &want, 0.0, 0.0);
        // The device's own limit: Vulkan allows 65535 groups per axis, so 70000 is split.
        let big = 70000;
        let xb = data(big, 4);
        let xs = load(1, &[big]);
        let ast = store(
            &[big],
            LazyOp::alu(AluOp::Binary(BinaryOp::Add), vec![xs.clone(), xs]),
        );
        let p = program(api, &real, &ast, &[]);
        let groups = p.global_size.clone().unwrap();
        let fits = groups.iter().zip(real.groups_max).all(|(&g, m)| g <= m);
        assert!(fits, "{groups:?} within {:?}", real.groups_max);
        let got = run_both(api, &p, big, std::slice::from_ref(&xb));
        let want: Vec<f32> = xb.iter().map(|v| v + v).collect();
        assert_close("device limit", &got, &want, 0.0, 0.0);
    }
}

#[test]
fn upcast_contiguous_axes_load_and_store_vectors() {
    let (m, n) = (8, 64);
    let (a, b) = (data(m * n, 5), data(n, 6));
    let want: Vec<f32> = (0..m * n).map(|i| a[i] * b[i % n] + a[i]).collect();
    let bl = LazyOp::load(
        2,
        DType::F32,
        ShapeTracker::from_shape(&[1, n]).expand(&[m, n]).unwrap(),
    );
    let al = load(1, &[m, n]);
    let mul = LazyOp::alu(AluOp::Binary(BinaryOp::Mul), vec![al.clone(), bl]);
    let ast = store(
        &[m, n],
        LazyOp::alu(AluOp::Binary(BinaryOp::Add), vec![mul, al]),
    );
    for api in APIS {
        let Some(l) = limits(api) else { continue };
        let opts = [Opt::new(OptOp::Upcast, 1, 4), Opt::new(OptOp::Local, 1, 8)];
        let p = program(api, &l, &ast, &opts);
        let vector = match api {
            Api::OpenCl => "vload4",
            Api::Vulkan => "vec4",
        };
        assert!(p.src.contains(vector), "{}", p.src);
        let got = run_both(api, &p, m * n, &[a.clone(), b.clone()]);
        assert_close("float4", &got, &want, 1e-6, 1e-6);
    }
}

#[test]
fn device_limits_and_missing_features_are_named() {
    let ast = store(&[64, 1], sum(&[1], load(1, &[64, 8192])));
    for api in APIS {
        let Some(real) = limits(api) else { continue };
        // Compiled for a device that allows more threads than this one.
        let roomy = DeviceLimits {
            local_max: [1 << 16; 3],
            local_threads_max: 1 << 16,
            shared_bytes: 1 << 20,
            ..real.clone()
        };
        let opts = [
            Opt::new(OptOp::Local, 0, 64),
            Opt::new(OptOp::Group, 0, 128),
        ];
        let p = program(api, &roomy, &ast, &opts);
        let k = GpuKernel::from_program(&p, &p.name);
        let e = k.check(&real).unwrap_err();
        assert!(matches!(e, GpuError::OverLimit { .. }), "{e}");
        assert!(e.to_string().contains("threads per work-group"), "{e}");
        // A device without local memory cannot run a grouped reduce.
        let p = program(api, &real, &ast, &[Opt::new(OptOp::Group, 0, 16)]);
        let k = GpuKernel::from_program(&p, &p.name);
        let none = DeviceLimits {
            shared_bytes: 0,
            ..real.clone()
        };
        let e = k.check(&none).unwrap_err();
        assert!(
            e.to_string().contains("local (work-group shared) memory"),
            "{e}"
        );
        // Nor is GROUP offered for a target without it.
        let mut kern = Kernel::new(ast.clone(), api.target(&none)).unwrap();
        let e = kern.apply_opt(Opt::new(OptOp::Group, 0, 16)).unwrap_err();
        assert!(e.to_string().contains("no local memory"), "{e}");
    }
    // 16-bit floats: refused when rendering for a device without them, and by the runtime.
    let half = vec![LazyOp::store(
        0,
        ShapeTracker::from_shape(&[4]),
        LazyOp::cast(DType::F16, load(1, &[4])),
    )];
    for api in APIS {
        let Some(real) = limits(api) else { continue };
        let no_half = DeviceLimits {
            half: false,
            ..real.clone()
        };
        let k = Kernel::new(half.clone(), api.target(&no_half)).unwrap();
        let e = to_program(&k).unwrap_err().to_string();
        assert!(e.contains("16-bit floats"), "{e}");
    }
    if let Some(pocl) = limits(Api::OpenCl).filter(|l| !l.half) {
        let with_half = DeviceLimits {
            half: true,
            ..pocl.clone()
        };
        let p = program(Api::OpenCl, &with_half, &half, &[]);
        assert!(p.src.contains("cl_khr_fp16"), "{}", p.src);
        let k = GpuKernel::from_program(&p, &p.name);
        let e = k.check(&pocl).unwrap_err().to_string();
        assert!(e.contains("16-bit floats (fp16)"), "{e}");
    }
}

#[test]
fn booleans_are_stored_as_bytes() {
    let n = 64;
    let (a, b) = (data(n, 9), data(n, 10));
    let cmp = LazyOp::alu(
        AluOp::Binary(BinaryOp::CmpLt),
        vec![load(1, &[n]), load(2, &[n])],
    );
    let ast = vec![LazyOp::store(0, ShapeTracker::from_shape(&[n]), cmp)];
    let want: Vec<u8> = a.iter().zip(&b).map(|(x, y)| (x < y) as u8).collect();
    for api in APIS {
        let Some(l) = limits(api) else { continue };
        let p = program(api, &l, &ast, &[Opt::new(OptOp::Local, 0, 16)]);
        let k = GpuKernel::from_program(&p, &p.name);
        let call = KernelCall {
            kernel: 0,
            buffers: vec![vec![7u8; n], bytes(&a), bytes(&b)],
        };
        let run = match api {
            Api::OpenCl => opencl::run_calls(&opencl::device().unwrap(), &[k], &[call]),
            Api::Vulkan => vulkan::run_calls(&vulkan::device().unwrap(), &[k], &[call]),
        }
        .unwrap_or_else(|e| panic!("{}: {e}\n{}", api.name(), p.src));
        assert_eq!(run.buffers[0][0], want, "{}\n{}", api.name(), p.src);
        // And read back: out = where(c, a, b).
        let c = LazyOp::load(1, DType::BOOL, ShapeTracker::from_shape(&[n]));
        let sel = LazyOp::alu(
            AluOp::Ternary(kiln_codegen::ops::TernaryOp::Where),
            vec![c, load(2, &[n]), load(3, &[n])],
        );
        let ast = vec![LazyOp::store(0, ShapeTracker::from_shape(&[n]), sel)];
        let p = program(api, &l, &ast, &[Opt::new(OptOp::Local, 0, 16)]);
        let k = GpuKernel::from_program(&p, &p.name);
        let call = KernelCall {
            kernel: 0,
            buffers: vec![vec![0u8; 4 * n], want.clone(), bytes(&a), bytes(&b)],
        };
        let run = match api {
            Api::OpenCl => opencl::run_calls(&opencl::device().unwrap(), &[k], &[call]),
            Api::Vulkan => vulkan::run_calls(&vulkan::device().unwrap(), &[k], &[call]),
        }
        .unwrap_or_else(|e| panic!("{}: {e}\n{}", api.name(), p.src));
        let min: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x.min(*y)).collect();
        assert_eq!(f32s(&run.buffers[0][0]), min, "{}\n{}", api.name(), p.src);
    }
}

/// 64-bit integers: loaded, summed and stored as `int64_t` in GLSL (the int64 arithmetic
/// extension, the device's `shaderInt64`) and as `long` in OpenCL C; values past 2^32, so that
/// 32-bit arithmetic would be caught.
#[test]
fn sixty_four_bit_integers_are_stored_and_summed() {
    let (rows, cols) = (8, 16);
    let x: Vec<i64> = (0..rows * cols)
        .map(|i| (i as i64 - 50) * 3_000_000_007)
        .collect();
    let x_bytes: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
    let want: Vec<i64> = x.chunks(cols).map(|row| row.iter().sum()).collect();
    let ld = LazyOp::load(1, DType::I64, ShapeTracker::from_shape(&[rows, cols]));
    let ast = store(&[rows, 1], sum(&[1], ld));
    for api in APIS {
        let Some(l) = limits(api) else { continue };
        let p = program(api, &l, &ast, &[Opt::new(OptOp::Local, 0, 4)]);
        if api == Api::Vulkan {
            let extension = kiln_codegen::render::glsl::INT64_EXTENSION;
            assert!(p.src.contains(extension), "{}", p.src);
        }
        let k = GpuKernel::from_program(&p, &p.name);
        let call = KernelCall {
            kernel: 0,
            buffers: vec![vec![0u8; 8 * rows], x_bytes.clone()],
        };
        let run = match api {
            Api::OpenCl => opencl::run_calls(&opencl::device().unwrap(), &[k], &[call]),
            Api::Vulkan => vulkan::run_calls(&vulkan::device().unwrap(), &[k], &[call]),
        }
        .unwrap_or_else(|e| panic!("{}: {e}\n{}", api.name(), p.src));
        let got: Vec<i64> = run.buffers[0][0]
            .chunks_exact(8)
            .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(got, want, "{}\n{}", api.name(), p.src);
    }
}

/// 8- and 16-bit integers: loaded, reduced with `max`, offset by a literal of their own type
/// and stored as `int8_t`/`int16_t` in GLSL (8- and 16-bit storage and arithmetic) and as
/// `char`/`short` in OpenCL C; booleans reduced with `max` (any), which GLSL spells `||`.
#[test]
fn narrow_integers_and_booleans_are_reduced() {
    let (rows, cols) = (4, 8);
    for dtype in [DType::I8, DType::I16, DType::BOOL] {
        let size = dtype.size();
        let x: Vec<i64> = (0..rows * cols)
            .map(|i| match dtype {
                DType::BOOL => i64::from(i % 11 == 3),
                _ => (i as i64 * 37) % 101 - 60,
            })
            .collect();
        let x_bytes: Vec<u8> = x
            .iter()
            .flat_map(|&v| v.to_le_bytes()[..size].to_vec())
            .collect();
        let offset = i64::from(dtype != DType::BOOL) * -3;
        let want: Vec<i64> = x
            .chunks(cols)
            .map(|row| row.iter().max().unwrap() + offset)
            .collect();
        let ld = LazyOp::load(1, dtype, ShapeTracker::from_shape(&[rows, cols]));
        let mut top = LazyOp::reduce(ReduceOp::Max, vec![1], ld);
        if dtype != DType::BOOL {
            let c = kiln_codegen::ops::ConstValue::from_i64(dtype, offset);
            let k = LazyOp::constant(c, dtype, ShapeTracker::from_shape(&[rows, 1]));
            top = LazyOp::alu(AluOp::Binary(BinaryOp::Add), vec![top, k]);
        }
        let ast = store(&[rows, 1], top);
        for api in APIS {
            let Some(l) = limits(api) else { continue };
            let p = program(api, &l, &ast, &[]);
            let k = GpuKernel::from_program(&p, &p.name);
            let call = KernelCall {
                kernel: 0,
                buffers: vec![vec![0u8; size * rows], x_bytes.clone()],
            };
            let run = match api {
                Api::OpenCl => opencl::run_calls(&opencl::device().unwrap(), &[k], &[call]),
                Api::Vulkan => vulkan::run_calls(&vulkan::device().unwrap(), &[k], &[call]),
            }
            .unwrap_or_else(|e| panic!("{} {dtype}: {e}\n{}", api.name(), p.src));
            let got: Vec<i64> = run.buffers[0][0]
                .chunks_exact(size)
                .map(|c| match size {
                    1 if dtype == DType::BOOL => i64::from(c[0]),
                    1 => i64::from(c[0] as i8),
                    _ => i64::from(i16::from_le_bytes([c[0], c[1]])),
                })
                .collect();
            assert_eq!(got, want, "{} {dtype}\n{}", api.name(), p.src);
        }
    }
}
