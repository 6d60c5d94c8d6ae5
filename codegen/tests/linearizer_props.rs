//! Property test: random kernels (random shapes up to rank 4, random views of the inputs,
//! elementwise chains, zero to two reduces, random legal opts) give the naive reference's
//! result both in the UOp interpreter (for a loop-only C target, a C target with float vectors
//! and for a threaded target with local memory) and as C compiled by the system C compiler.

use kiln_codegen::kernel::lanes::relayouts;
use kiln_codegen::kernel::{Kernel, KernelBuffer, Opt, OptOp};
use kiln_codegen::linearize::{linearize, LinearizeError};
use kiln_codegen::render::to_program;
use kiln_codegen::target::Target;
use kiln_codegen::uop::interp::{run, HostBuffer};
use kiln_codegen::uop::ArgId;
use kiln_test_support::cdriver::{run_batch, Call};
use kiln_test_support::gen::{random_case, random_opts, Case};
use kiln_test_support::naive::{close, evaluate, Val};
use kiln_test_support::rng::Rng;
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use std::collections::HashMap;

const CASES: usize = 500;
/// Kernels computed over vector lanes, at least.
const SIMD_CASES: usize = 100;
const SEED: [u8; 32] = *b"kiln linearizer property tests!!";

/// The cases' seeds; `KILN_PROPS_SEED=n` explores another fixed sequence.
fn seeds() -> Vec<u64> {
    let mut seed = SEED;
    if let Some(n) = std::env::var("KILN_PROPS_SEED")
        .ok()
        .and_then(|v| v.parse::<u8>().ok())
    {
        seed[0] ^= n;
    }
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &seed);
    let mut runner = TestRunner::new_with_rng(Config::with_cases(CASES as u32), rng);
    (0..CASES)
        .map(|_| {
            proptest::num::u64::ANY
                .new_tree(&mut runner)
                .expect("a seed")
                .current()
        })
        .collect()
}

fn describe(case: &Case, opts: &[Opt], target: &str) -> String {
    let opts: Vec<String> = opts.iter().map(|o| o.to_string()).collect();
    let views: Vec<String> = case
        .inputs
        .iter()
        .map(|i| format!("data{}: {:?}", i.id, i.view))
        .collect();
    format!(
        "seed {:#x} target {target} full {:?} out {:?} opts [{}]\n{}\n{}",
        case.seed,
        case.full,
        case.out_shape,
        opts.join(", "),
        views.join("\n"),
        case.ast[0]
    )
}

fn check(got: &[f64], want: &[Val], int: bool, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: output length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            close(*g, *w, int),
            "{what}: element {i}: got {g}, want {} (magnitude {})",
            w.v,
            w.mag
        );
    }
}

/// Each input's data as the kernel reads it: in the new order of the inputs it laid out again.
fn input_data(case: &Case, k: &Kernel) -> Vec<(u32, Vec<f64>)> {
    let moved = relayouts(k);
    case.inputs
        .iter()
        .map(|i| {
            let r = moved
                .iter()
                .find(|r| matches!(&k.bufs[r.buf], KernelBuffer::Mem(m) if m.idx.0 == i.id));
            let data = match r {
                Some(r) => r.order().map(|o| i.data[o]).collect(),
                None => i.data.clone(),
            };
            (i.id, data)
        })
        .collect()
}

fn buffers(case: &Case, k: &Kernel) -> HashMap<ArgId, HostBuffer> {
    let out: usize = case.out_shape.iter().product();
    let mut m = HashMap::new();
    m.insert(ArgId(0), HostBuffer::zeros(case.dtype.scalar, out));
    for (id, data) in input_data(case, k) {
        m.insert(ArgId(id), HostBuffer::from_f64(case.dtype.scalar, &data));
    }
    m
}

/// The kinds of target a case runs on.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Loops only, scalars.
    Plain,
    /// Loops, and reduces over float vectors of up to 16 lanes; every input may be laid out
    /// again, and the kernel starts with an output axis upcast to lanes.
    Simd,
    /// Threads and local memory.
    Threaded,
}

/// A fresh kernel of `case` for `kind`, with its opts.
fn kernel_for(case: &Case, kind: Kind, stats: &mut Stats) -> Option<(Kernel, Vec<Opt>)> {
    let target = match kind {
        Kind::Plain => Target::c(),
        Kind::Simd => Target {
            simd_lanes: 16,
            ..Target::host()
        },
        Kind::Threaded => Target::threaded(vec![64, 64, 64], vec![16, 16, 16]),
    };
    let mut k = Kernel::new(case.ast.clone(), target).expect("a valid kernel");
    let salt = match kind {
        Kind::Plain => 0x43,
        Kind::Simd => 0x5349,
        Kind::Threaded => 0x7448,
    };
    let mut rng = Rng::new(case.seed ^ salt);
    let mut opts = Vec::new();
    if kind == Kind::Simd {
        k.free_layout = k
            .bufs
            .iter()
            .enumerate()
            .filter_map(|(b, buf)| match buf {
                KernelBuffer::Mem(m) => case
                    .inputs
                    .iter()
                    .find(|i| i.id == m.idx.0)
                    .map(|i| (b, i.data.len())),
                _ => None,
            })
            .collect();
        let lanes: usize = rng.pick(&[8, 16]);
        let axis = (0..k.first_reduce()).find(|&a| k.full_shape()[a].is_multiple_of(lanes))?;
        let opt = Opt::new(OptOp::Upcast, axis, lanes);
        k.apply_opt(opt).ok()?;
        opts.push(opt);
    }
    if kind != Kind::Threaded && rng.below(3) == 0 {
        kiln_codegen::optimize::heuristic::hand_coded_optimizations(&mut k);
        opts = k.applied_opts.clone();
    } else {
        opts.extend(random_opts(&mut rng, &mut k, kind == Kind::Threaded));
    }
    if kind == Kind::Simd && k.vector_axis().is_some() {
        stats.simd += 1;
        stats.relaid += (!relayouts(&k).is_empty()) as usize;
    }
    Some((k, opts))
}

#[derive(Default, Debug)]
struct Stats {
    cases: usize,
    reduces: usize,
    multireduce: usize,
    opts: HashMap<String, usize>,
    grouped: usize,
    /// Kernels computed over vector lanes, and of those, with an input laid out again.
    simd: usize,
    relaid: usize,
    unfit: usize,
}

fn interp_case(case: &Case, want: &[Val], kind: Kind, stats: &mut Stats) -> Option<Call> {
    let threaded = kind == Kind::Threaded;
    let (free, opts) = kernel_for(case, kind, stats)?;
    // The kernel as compiled: its free inputs read in the orders `input_data` stores them in.
    let k = free.laid_out().0;
    let name = k.target.name;
    for o in &opts {
        *stats.opts.entry(format!("{:?}", o.op)).or_default() += 1;
    }
    stats.grouped += (k.group_for_reduces > 0) as usize;
    let what = describe(case, &opts, name);
    let lin = match linearize(&k) {
        Ok(l) => l,
        Err(LinearizeError::Dims { .. }) if threaded => {
            stats.unfit += 1;
            return None;
        }
        Err(e) => panic!("{what}\nlinearize failed: {e}"),
    };
    let mut bufs = buffers(case, &free);
    run(&lin.uops, &mut bufs, &HashMap::new())
        .unwrap_or_else(|e| panic!("{what}\ninterpreter: {e}\n{}", lin.uops.listing()));
    check(
        &bufs[&ArgId(0)].to_f64(),
        want,
        case.dtype.is_int(),
        &format!("{what}\ninterpreter\n{}", lin.uops.listing()),
    );
    if threaded {
        return None;
    }
    let program = to_program(&k).unwrap_or_else(|e| panic!("{what}\nrender failed: {e}"));
    let mut order: Vec<(u32, Vec<f64>)> = vec![(0, vec![0.0; want.len()])];
    order.extend(input_data(case, &free));
    let buffers = program
        .buffers
        .iter()
        .map(|b| {
            (
                case.dtype,
                order
                    .iter()
                    .find(|(id, _)| *id == b.id.0)
                    .expect("buffer")
                    .1
                    .clone(),
            )
        })
        .collect();
    Some(Call { program, buffers })
}

#[test]
fn random_kernels_match_the_naive_reference() {
    let mut stats = Stats::default();
    let mut pending: Vec<(usize, Call, Vec<Val>)> = Vec::new();
    let mut cases: Vec<Case> = seeds().into_iter().map(random_case).collect();
    for (i, case) in cases.iter().enumerate() {
        let want = evaluate(case);
        stats.cases += 1;
        let nred = case.ast[0]
            .lazyops()
            .iter()
            .filter(|x| matches!(x.op(), kiln_codegen::schedule::ast::Op::Reduce(..)))
            .count();
        stats.reduces += (nred > 0) as usize;
        stats.multireduce += (nred > 1) as usize;
        for kind in [Kind::Plain, Kind::Simd] {
            if let Some(call) = interp_case(case, &want, kind, &mut stats) {
                pending.push((i, call, want.clone()));
            }
        }
        interp_case(case, &want, Kind::Threaded, &mut stats);
    }
    // Few random shapes have an axis of 8 or 16: more cases for the vector lanes alone, from
    // the same seeds turned another way, until enough of them compute over vectors.
    let mut more = seeds().into_iter().cycle().enumerate();
    while stats.simd < SIMD_CASES {
        let (n, seed) = more.next().expect("endless");
        assert!(n < 40 * CASES, "too few cases with vector lanes: {stats:?}");
        let case = random_case(seed ^ (n as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let want = evaluate(&case);
        if let Some(call) = interp_case(&case, &want, Kind::Simd, &mut stats) {
            cases.push(case);
            pending.push((cases.len() - 1, call, want));
        }
    }
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("linearizer-props");
    for (b, chunk) in pending.chunks(125).enumerate() {
        let calls: Vec<Call> = chunk
            .iter()
            .map(|(_, c, _)| Call {
                program: c.program.clone(),
                buffers: c.buffers.clone(),
            })
            .collect();
        let outs = run_batch(&dir.join(format!("batch{b}")), &calls);
        for ((i, call, want), got) in chunk.iter().zip(outs) {
            let what = describe(&cases[*i], &call.program.applied_opts, "c or host");
            check(
                &got,
                want,
                cases[*i].dtype.is_int(),
                &format!("{what}\ncompiled C:\n{}", call.program.src),
            );
        }
    }
    println!("{stats:?}");
    assert_eq!(stats.cases, CASES);
    assert!(
        stats.reduces > CASES / 2 && stats.multireduce > CASES / 10,
        "{stats:?}"
    );
    assert!(
        stats.grouped > CASES / 50,
        "grouped reduces exercised: {stats:?}"
    );
    assert!(
        stats.simd >= SIMD_CASES && stats.relaid > SIMD_CASES / 10,
        "vector lanes exercised: {stats:?}"
    );
    for op in [
        "Upcast", "Unroll", "PadTo", "Local", "Group", "NoLocals", "Interior",
    ] {
        assert!(
            stats.opts.get(op).copied().unwrap_or(0) > 10,
            "{op} exercised: {stats:?}"
        );
    }
}

/// Loads of different buffers at constant indices never share one cached value: with twelve
/// buffers, buffer 1 at index 12 and buffer 11 at index 2 are two loads (their cache keys once
/// ran together, and one read the other's value).
#[test]
fn loads_of_buffers_with_run_together_names_stay_apart() {
    use kiln_codegen::dtype::DType;
    use kiln_codegen::ops::{AluOp, BinaryOp};
    use kiln_codegen::schedule::ast::LazyOp;
    use kiln_codegen::shape::ShapeTracker;
    let n = 16;
    let st = || ShapeTracker::from_shape(&[n]);
    let mut sum = LazyOp::load(1, DType::F32, st());
    for id in 2..=11 {
        let ld = LazyOp::load(id, DType::F32, st());
        sum = LazyOp::alu(AluOp::Binary(BinaryOp::Add), vec![sum, ld]);
    }
    let ast = vec![LazyOp::store(0, st(), sum)];
    let mut k = Kernel::new(ast, Target::c()).unwrap();
    k.apply_opt(Opt::new(OptOp::Upcast, 0, 8)).unwrap();
    k.apply_opt(Opt::new(OptOp::Upcast, 0, 2)).unwrap();
    let lin = linearize(&k).unwrap();
    let mut bufs = HashMap::new();
    bufs.insert(ArgId(0), HostBuffer::zeros(DType::F32.scalar, n));
    for id in 1..=11u32 {
        let data: Vec<f64> = (0..n).map(|i| (i as f64) * 100.0 + f64::from(id)).collect();
        bufs.insert(ArgId(id), HostBuffer::from_f64(DType::F32.scalar, &data));
    }
    run(&lin.uops, &mut bufs, &HashMap::new()).unwrap();
    let want: Vec<f64> = (0..n).map(|i| 1100.0 * i as f64 + 66.0).collect();
    assert_eq!(bufs[&ArgId(0)].to_f64(), want, "{}", lin.uops.listing());
}
