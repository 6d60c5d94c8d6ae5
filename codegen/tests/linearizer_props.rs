//! Property test: random kernels (random shapes up to rank 4, random views of the inputs,
//! elementwise chains, zero to two reduces, random legal opts) give the naive reference's
//! result both in the UOp interpreter (for a loop-only C target and for a threaded target
//! with local memory) and as C compiled by the system C compiler.

mod common;

use common::cdriver::{run_batch, Call};
use common::gen::{random_case, random_opts, Case};
use common::naive::{close, evaluate, Val};
use common::rng::Rng;
use kiln_codegen::kernel::{Kernel, Opt};
use kiln_codegen::linearize::{linearize, to_program, LinearizeError};
use kiln_codegen::render::Target;
use kiln_codegen::uop::interp::{run, HostBuffer};
use kiln_codegen::uop::BufferId;
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use std::collections::HashMap;

const CASES: usize = 500;
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

fn buffers(case: &Case) -> HashMap<BufferId, HostBuffer> {
    let out: usize = case.out_shape.iter().product();
    let mut m = HashMap::new();
    m.insert(BufferId(0), HostBuffer::zeros(case.dtype.scalar, out));
    for i in &case.inputs {
        m.insert(
            BufferId(i.id),
            HostBuffer::from_f64(case.dtype.scalar, &i.data),
        );
    }
    m
}

#[derive(Default, Debug)]
struct Stats {
    cases: usize,
    reduces: usize,
    multireduce: usize,
    opts: HashMap<String, usize>,
    grouped: usize,
    unfit: usize,
}

fn interp_case(case: &Case, want: &[Val], threaded: bool, stats: &mut Stats) -> Option<Call> {
    let target = if threaded {
        Target::threaded(vec![64, 64, 64], vec![16, 16, 16])
    } else {
        Target::c()
    };
    let name = target.name;
    let mut k = Kernel::new(case.ast.clone(), target).expect("a valid kernel");
    let mut rng = Rng::new(case.seed ^ if threaded { 0x7448 } else { 0x43 });
    let opts = if !threaded && rng.below(3) == 0 {
        kiln_codegen::kernel::heuristic::hand_coded_optimizations(&mut k);
        k.applied_opts.clone()
    } else {
        random_opts(&mut rng, &mut k, threaded)
    };
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
    let mut bufs = buffers(case);
    run(&lin.uops, &mut bufs, &HashMap::new())
        .unwrap_or_else(|e| panic!("{what}\ninterpreter: {e}\n{}", lin.uops.listing()));
    check(
        &bufs[&BufferId(0)].to_f64(),
        want,
        case.dtype.is_int(),
        &format!("{what}\ninterpreter\n{}", lin.uops.listing()),
    );
    if threaded {
        return None;
    }
    let program = to_program(&k).unwrap_or_else(|e| panic!("{what}\nrender failed: {e}"));
    let mut order: Vec<(u32, Vec<f64>)> = vec![(0, vec![0.0; want.len()])];
    order.extend(case.inputs.iter().map(|i| (i.id, i.data.clone())));
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
    let cases: Vec<Case> = seeds().into_iter().map(random_case).collect();
    for (i, case) in cases.iter().enumerate() {
        let want = evaluate(case);
        stats.cases += 1;
        let nred = case.ast[0]
            .lazyops()
            .iter()
            .filter(|x| matches!(x.op(), kiln_codegen::kernel::ast::Op::Reduce(..)))
            .count();
        stats.reduces += (nred > 0) as usize;
        stats.multireduce += (nred > 1) as usize;
        if let Some(call) = interp_case(case, &want, false, &mut stats) {
            pending.push((i, call, want.clone()));
        }
        interp_case(case, &want, true, &mut stats);
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
            let what = describe(&cases[*i], &call.program.applied_opts, "c");
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
    for op in ["Upcast", "Unroll", "PadTo", "Local", "Group", "NoLocals"] {
        assert!(
            stats.opts.get(op).copied().unwrap_or(0) > 10,
            "{op} exercised: {stats:?}"
        );
    }
}
