//! The BEAM search's board cost: kernel candidates measured by the cycles the instruction-count
//! plugin estimates for them on an emulated Cortex-M4F (`qemu-an386`), many kernels in one
//! image, cached like the host search. These need the board toolchain (`scripts/setup-toolchain.sh`).

use kiln_codegen::compile::{compile, compile_graph};
use kiln_codegen::dtype::DType;
use kiln_codegen::graph::Graph;
use kiln_codegen::kernel::{Kernel, Opt, OptOp};
use kiln_codegen::optimize::search::{apply_all, cached_beam_search_many};
use kiln_codegen::optimize::{Beam, Cache, Candidates, CostModel, Optimize, SearchError};
use kiln_codegen::render::{to_program, Program};
use kiln_codegen::target::Target;
use kiln_runners::board::{self, measure};
use kiln_test_support::weights::weight;
use std::time::Instant;

/// out[i] = sum_j a[i, j] * b[j]: an `rows`×`cols` matrix times a vector.
fn matvec(rows: usize, cols: usize) -> Kernel {
    kiln_codegen::kernel::examples::matvec(rows, cols, Target::c())
}

fn matvec_bytes(rows: usize, cols: usize) -> Vec<usize> {
    vec![rows * 4, rows * cols * 4, cols * 4]
}

fn program(k: &Kernel, opts: &[Opt]) -> Program {
    to_program(&apply_all(k, opts).unwrap()).unwrap()
}

fn an386() -> board::BoardInfo {
    board::info("qemu-an386").unwrap()
}

#[test]
fn estimated_cycles_rank_candidates_the_same_every_time() {
    let board = an386();
    let small = matvec(16, 8);
    let big = matvec(16, 64);
    let small_programs = [
        program(&small, &[]),
        program(&small, &[Opt::new(OptOp::Unroll, 0, 0)]),
        program(
            &small,
            &[Opt::new(OptOp::Unroll, 0, 0), Opt::new(OptOp::Upcast, 0, 4)],
        ),
    ];
    // A candidate that does not compile for the board.
    let mut broken = program(&big, &[]);
    broken.source.tail = broken.source.tail.replacen('{', "{ this is not C;", 1);
    let big_programs = [program(&big, &[]), broken];
    let (small_bytes, big_bytes) = (matvec_bytes(16, 8), matvec_bytes(16, 64));
    let kernels = [
        measure::KernelCandidates {
            kernel: "small",
            programs: &small_programs,
            buffer_bytes: &small_bytes,
        },
        measure::KernelCandidates {
            kernel: "big",
            programs: &big_programs,
            buffer_bytes: &big_bytes,
        },
    ];
    let started = Instant::now();
    let first = measure::cost_candidates(&board, &kernels, &mut |_, _| {})
        .unwrap_or_else(|e| panic!("{e}"));
    eprintln!(
        "measured in {:.1} s: {first:?}",
        started.elapsed().as_secs_f64()
    );
    let small_counts: Vec<u64> = first[0].iter().map(|c| c.unwrap()).collect();
    let plain = first[1][0].expect("the plain big kernel is measured");
    assert_eq!(first[1][1], None, "the broken candidate has no cost");
    // 8× the reduce is several times the cycles.
    assert!(plain > 4 * small_counts[0], "{first:?}");
    // Unrolled, the loop's own instructions are gone.
    assert!(small_counts[1] < small_counts[0], "{first:?}");
    assert!(small_counts[2] < small_counts[0], "{first:?}");
    let again = measure::cost_candidates(&board, &kernels[..1], &mut |_, _| {})
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(again[0], first[0], "the estimates are exact");
}

#[test]
fn the_board_cost_is_named_after_the_board_and_its_flags() {
    let name = measure::cost_name(&an386()).unwrap();
    assert!(name.contains("qemu-an386"), "{name}");
    assert!(name.starts_with("qemu-cycles core=m4 "), "{name}");
    assert_eq!(measure::cost_unit(&an386()), "estimated cycles");
    // A core the plugin has no estimate for is costed by its instructions.
    let rv32 = board::info("qemu-rv32").unwrap();
    assert!(measure::cost_name(&rv32).unwrap().starts_with("qemu-insn "));
    assert_eq!(measure::cost_unit(&rv32), "instructions");
    assert!(name.contains("-mcpu=cortex-m4"), "{name}");
    assert!(name.contains("thumbv7em-none-eabihf"), "{name}");
    let other = measure::cost_name(&board::info("qemu-an385-m0").unwrap()).unwrap();
    assert_ne!(name, other);
}

#[test]
fn a_board_search_is_cached_and_measures_nothing_the_second_time() {
    let board = an386();
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache {
        dir: dir.path().to_path_buf(),
    };
    let kernels = [matvec(16, 8), matvec(8, 16)];
    let bytes = [matvec_bytes(16, 8), matvec_bytes(8, 16)];
    /// The board's cost model, counting the images it builds.
    struct Counted {
        inner: measure::BoardCost,
        images: usize,
    }
    impl CostModel for Counted {
        fn context(&self) -> Result<String, SearchError> {
            self.inner.context()
        }
        fn key(&mut self, candidate: &Kernel) -> Option<String> {
            self.inner.key(candidate)
        }
        fn measure(&mut self, groups: &[Candidates]) -> Result<Vec<Vec<Option<f64>>>, SearchError> {
            self.images += 1;
            self.inner.measure(groups)
        }
    }
    let mut cost = Counted {
        inner: measure::BoardCost {
            board: board.clone(),
        },
        images: 0,
    };
    let started = Instant::now();
    let first = cached_beam_search_many(&kernels, &bytes, 2, &cache, &mut cost).unwrap();
    let rounds = cost.images;
    eprintln!(
        "searched 2 kernels in {rounds} measurements, {:.1} s: {first:?}",
        started.elapsed().as_secs_f64()
    );
    assert!(first.iter().all(|(_, hit)| !hit));
    assert!(rounds >= 2);
    let again = cached_beam_search_many(&kernels, &bytes, 2, &cache, &mut cost).unwrap();
    assert_eq!(cost.images, rounds, "a cache hit builds no image");
    assert!(again.iter().all(|(_, hit)| *hit));
    assert_eq!(
        again.iter().map(|(o, _)| o).collect::<Vec<_>>(),
        first.iter().map(|(o, _)| o).collect::<Vec<_>>()
    );
    // The host's results are another entry.
    let mut host = kiln_runners::host::HostWallTime;
    let host_run = cached_beam_search_many(&kernels, &bytes, 2, &cache, &mut host).unwrap();
    assert!(host_run.iter().all(|(_, hit)| !hit));
}

#[test]
fn a_model_searched_on_the_board_runs_there_like_the_host() {
    let board = an386();
    let mut g = Graph::new();
    let x = g.input("x", DType::F32, &[1, 32]);
    let w = weight(&mut g, &[32, 16], 1);
    let y = g.matmul(&x, &w).unwrap();
    let r = g.relu(&y).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut cost = measure::BoardCost {
        board: board.clone(),
    };
    let cache = || Cache {
        dir: dir.path().to_path_buf(),
    };
    let started = Instant::now();
    let (searched, stats) = compile(
        "mv",
        &g,
        std::slice::from_ref(&r),
        &Target::c(),
        Optimize::Beam(Beam {
            width: 2,
            cache: cache(),
            cost: &mut cost,
        }),
        &mut |_, _| {},
    )
    .unwrap_or_else(|e| panic!("{e}"));
    eprintln!(
        "searched in {:.1} s: {stats:?}",
        started.elapsed().as_secs_f64()
    );
    assert!(stats.searched > 0 && stats.cached == 0, "{stats:?}");
    let (_, stats) = compile(
        "mv",
        &g,
        std::slice::from_ref(&r),
        &Target::c(),
        Optimize::Beam(Beam {
            width: 2,
            cache: cache(),
            cost: &mut cost,
        }),
        &mut |_, _| {},
    )
    .unwrap();
    assert!(stats.searched == 0 && stats.cached > 0, "{stats:?}");
    let hand = compile_graph("mv", &g, &[r], &Target::c(), true, &mut |_, _| {}).unwrap();
    let input: Vec<u8> = (0..32)
        .map(|i| (i as f32 / 16.0) - 1.0)
        .flat_map(|v: f32| v.to_le_bytes())
        .collect();
    let inputs = [input];
    let cases = [
        kiln_runners::Case {
            bundle: &searched,
            inputs: &inputs,
            invocations: 1,
        },
        kiln_runners::Case {
            bundle: &hand,
            inputs: &inputs,
            invocations: 1,
        },
    ];
    let runs = board::run_batches_counted(
        &board,
        &cases,
        std::time::Duration::from_secs(30),
        &mut |_, _| {},
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let searched_run = runs[0].as_ref().unwrap();
    let hand_run = runs[1].as_ref().unwrap();
    assert_eq!(searched_run.outputs.len(), 1);
    let floats = |b: &[u8]| -> Vec<f32> {
        b.chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    };
    let (a, b) = (
        floats(&searched_run.outputs[0]),
        floats(&hand_run.outputs[0]),
    );
    assert!(
        a.iter().zip(&b).all(|(x, y)| (x - y).abs() <= 1e-5),
        "{a:?} {b:?}"
    );
    let total = |r: &board::CaseRun| r.step_cycles.iter().sum::<u64>();
    eprintln!(
        "estimated cycles: searched {}, hand-coded {}",
        total(searched_run),
        total(hand_run)
    );
    assert!(
        total(hand_run) > 0,
        "the board's core has an estimate: {runs:?}"
    );
    // The search measured the hand-coded opts too: it is never worse than them.
    assert!(total(searched_run) <= total(hand_run), "{runs:?}");
}

#[test]
fn a_board_that_cannot_measure_is_an_error_naming_it() {
    let k = matvec(16, 8);
    let programs = [program(&k, &[])];
    let bytes = matvec_bytes(16, 8);
    let kernels = [measure::KernelCandidates {
        kernel: "mv",
        programs: &programs,
        buffer_bytes: &bytes,
    }];
    let real = board::info("nrf52840-dk").unwrap();
    let err = measure::cost_candidates(&real, &kernels, &mut |_, _| {}).unwrap_err();
    assert!(err.to_string().contains("nrf52840-dk"), "{err}");
    // Through the compiler: a search error that names the board, no panic.
    let mut g = Graph::new();
    let x = g.input("x", DType::F32, &[1, 8]);
    let w = weight(&mut g, &[8, 4], 1);
    let y = g.matmul(&x, &w).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut cost = measure::BoardCost { board: real };
    let beam = Optimize::Beam(Beam {
        width: 1,
        cache: Cache {
            dir: dir.path().to_path_buf(),
        },
        cost: &mut cost,
    });
    let err = compile("mv", &g, &[y], &Target::c(), beam, &mut |_, _| {})
        .expect_err("a board that cannot measure fails the search");
    assert!(err.to_string().contains("nrf52840-dk"), "{err}");
}
