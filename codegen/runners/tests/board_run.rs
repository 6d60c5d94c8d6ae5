//! Bundles built into board binaries and run under QEMU, against the same bundle run on the
//! host. These need the board toolchain (`scripts/setup-toolchain.sh`); without it they fail,
//! saying so.

use kiln_codegen::bundle::{Bundle, SCHEDULE_FILE};
use kiln_codegen::compile::compile_graph;
use kiln_codegen::dtype::DType;
use kiln_codegen::graph::Graph;
use kiln_codegen::target::Target;
use kiln_runners::board::channel::ChannelError;
use kiln_runners::board::{self, BoardError, BoardInfo, BuiltImage, Io, RunOptions};
use kiln_runners::host;
use kiln_test_support::weights::weight;
use std::path::Path;
use std::time::{Duration, Instant};

const TIMEOUT: Duration = Duration::from_secs(120);

/// conv 3→4 (3×3, padded) + relu + 2×2 average pool + matmul to 5 + softmax on a 3×8×8
/// image: every kind of kernel, in a few KiB of arena (a micro:bit has 16 KiB of RAM).
fn small_model() -> (Bundle, Vec<u8>) {
    let mut g = Graph::new();
    let x = g.input("x", DType::F32, &[1, 3, 8, 8]);
    let w = weight(&mut g, &[4, 3, 3, 3], 1);
    let b = weight(&mut g, &[4], 2);
    let c = g
        .conv(&x, &w, Some(&b), &[1, 1], &[1, 1], &[(1, 1), (1, 1)], 1)
        .unwrap();
    let r = g.relu(&c).unwrap();
    let p = g
        .pool(&r, &[2, 2], &[2, 2], &[1, 1], &[(0, 0), (0, 0)])
        .unwrap();
    let m = g.mean(&p, &[4, 5]).unwrap().reshape(&[1, 64]).unwrap();
    let fc = weight(&mut g, &[64, 5], 3);
    let y = g.matmul(&m, &fc).unwrap();
    let s = g.softmax(&y, 1).unwrap();
    let bundle = compile_graph("small", &g, &[s], &Target::c(), true, &mut |_, _| {}).unwrap();
    let input: Vec<u8> = (0..192)
        .map(|i| ((i * 37 % 101) as f32 / 50.0) - 1.0)
        .flat_map(|v: f32| v.to_le_bytes())
        .collect();
    (bundle, input)
}

fn step_count(bundle: &Bundle) -> usize {
    let plan = kiln_firmware::schedule::read_manifest(&bundle.schedule).unwrap();
    let arena = plan.arena_bytes as usize;
    let parsed = kiln_firmware::schedule::ScheduleView::parse(
        &bundle.schedule,
        arena,
        bundle.kernel_names.len(),
    );
    parsed.unwrap().step_count() as usize
}

fn floats(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// Builds `board` with the bundle in `dir`; a missing toolchain fails here, saying what to run.
fn build(board: &BoardInfo, dir: &Path) -> BuiltImage {
    build_for(board, dir, Io::Files)
}

/// [`build`] for a run through `io`: the firmware built with its `rtt` feature for RTT.
fn build_for(board: &BoardInfo, dir: &Path, io: Io) -> BuiltImage {
    let started = Instant::now();
    let options = board::BuildOptions {
        rtt: io == Io::Rtt,
        ..Default::default()
    };
    let image = board::build_with_options(board, dir, options, &mut |_| {})
        .unwrap_or_else(|e| panic!("building {}: {e}", board.name));
    eprintln!(
        "{}: built in {:.1} s: flash {} B, static RAM {} B (arena {} B)",
        board.name,
        started.elapsed().as_secs_f64(),
        image.flash_used,
        image.ram_used,
        image.arena_bytes
    );
    image
}

/// The small model on `board` twice, its inputs and outputs through `io`: outputs as on the
/// host, per-step counts there and equal. Over the channel, also once through files: the same
/// outputs and the same count for every step. Over RTT the firmware waits for the host in a
/// loop whose length depends on the host's polling: the steps' counts are equal run to run, the
/// total is not.
fn runs_like_the_host(name: &str, io: Io) {
    let board = board::info(name).unwrap();
    let (bundle, input) = small_model();
    let fit = board::check_fits(&board, &bundle).unwrap();
    eprintln!("{name}: fits: {fit}");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("bundle");
    bundle.write(&out).unwrap();
    let lib = host::build_library(&out).unwrap();
    let want = floats(
        &host::run(&bundle, &lib, std::slice::from_ref(&input))
            .unwrap()
            .outputs[0],
    );

    let image = build_for(&board, &out, io);
    assert!(image.arena_bytes >= bundle.report.arena_bytes);
    assert!(image.ram_used >= image.arena_bytes && image.flash_used > bundle.weights.len());
    let inputs = [input];
    let run = |io| {
        board::run_with_options(&board, &image, &inputs, TIMEOUT, RunOptions { io })
            .unwrap_or_else(|e| panic!("{name} ({io:?}): {e}"))
    };
    let (first, second) = (run(io), run(io));
    if io == Io::Channel {
        let files = run(Io::Files);
        assert_eq!(first.outputs, files.outputs);
        assert_eq!(first.step_instructions, files.step_instructions);
        eprintln!(
            "{name}: {} instructions through the channel, {} through files",
            first.total_instructions, files.total_instructions
        );
    }
    eprintln!(
        "{name} ({io:?}): ran in {:.2} s: {} instructions, per step {:?}",
        first.wall_time.as_secs_f64(),
        first.total_instructions,
        first.step_instructions
    );

    assert_eq!(first.outputs.len(), 1);
    let got = floats(&first.outputs[0]);
    assert_eq!(got.len(), want.len());
    let relative = |(a, b): (&f32, &f32)| (a - b).abs() / b.abs().max(f32::MIN_POSITIVE);
    let worst = got.iter().zip(&want).map(relative).fold(0.0, f32::max);
    eprintln!("{name}: outputs {got:?}, largest relative difference to the host {worst:e}");
    assert!(worst <= 1e-5, "{name}: {got:?}, host {want:?}");
    assert_eq!(first.step_instructions.len(), step_count(&bundle));
    assert!(first.step_instructions.iter().all(|&n| n > 0));
    let in_steps: u64 = first.step_instructions.iter().sum();
    assert!(in_steps < first.total_instructions);
    assert_eq!(first.step_instructions, second.step_instructions);
    if io != Io::Rtt {
        assert_eq!(first.total_instructions, second.total_instructions);
    }
    assert_eq!(first.outputs, second.outputs);
}

#[test]
fn small_model_on_an386_runs_like_the_host() {
    runs_like_the_host("qemu-an386", Io::Files);
}

#[test]
fn small_model_on_an386_runs_like_the_host_over_the_channel() {
    runs_like_the_host("qemu-an386", Io::Channel);
}

#[test]
fn small_model_on_an386_runs_like_the_host_over_rtt() {
    runs_like_the_host("qemu-an386", Io::Rtt);
}

/// The Cortex-M0: RTT without the atomic instructions of the larger cores.
#[test]
fn small_model_on_microbit_runs_like_the_host_over_rtt() {
    runs_like_the_host("qemu-microbit", Io::Rtt);
}

/// An image built without RTT cannot run with `Io::Rtt`, and a board whose firmware has no
/// `rtt` feature refuses to build one: each said before QEMU starts.
#[test]
fn rtt_needs_a_firmware_that_speaks_it() {
    let board = board::info("qemu-an386").unwrap();
    let (bundle, input) = small_model();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("bundle");
    bundle.write(&out).unwrap();
    let image = build(&board, &out);
    let rtt = RunOptions { io: Io::Rtt };
    match board::run_with_options(&board, &image, &[input], TIMEOUT, rtt) {
        Err(e @ BoardError::Image { .. }) => assert!(e.to_string().contains("_SEGGER_RTT"), "{e}"),
        other => panic!("expected the image to be refused, got {other:?}"),
    }
    let rv32 = board::info("qemu-rv32").unwrap();
    let options = board::BuildOptions {
        rtt: true,
        ..Default::default()
    };
    match board::build_with_options(&rv32, &out, options, &mut |_| {}) {
        Err(e @ BoardError::Unsupported { .. }) => assert!(e.to_string().contains("rtt"), "{e}"),
        other => panic!("expected qemu-rv32 to refuse an RTT build, got {other:?}"),
    }
}

#[test]
fn small_model_on_rv32_runs_like_the_host() {
    runs_like_the_host("qemu-rv32", Io::Files);
}

#[test]
fn small_model_on_rv32_runs_like_the_host_over_the_channel() {
    runs_like_the_host("qemu-rv32", Io::Channel);
}

#[test]
fn small_model_on_microbit_runs_like_the_host() {
    runs_like_the_host("qemu-microbit", Io::Files);
}

#[test]
fn small_model_on_microbit_runs_like_the_host_over_the_channel() {
    runs_like_the_host("qemu-microbit", Io::Channel);
}

/// Over the channel, a damaged bundle is the device's `Error`, and inputs of the wrong size
/// are refused by the host before they are sent.
#[test]
fn the_channel_carries_refusals() {
    let board = board::info("qemu-an386").unwrap();
    let (bundle, input) = small_model();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("bundle");
    bundle.write(&out).unwrap();
    let channel = RunOptions { io: Io::Channel };
    let image = build(&board, &out);
    let short = vec![input[..input.len() - 4].to_vec()];
    match board::run_with_options(&board, &image, &short, TIMEOUT, channel) {
        Err(BoardError::Channel {
            source: ChannelError::Inputs(message),
            ..
        }) => {
            assert!(message.contains("[768] bytes, given [764]"), "{message}")
        }
        other => panic!("expected the host to refuse the inputs, got {other:?}"),
    }

    let schedule = out.join(SCHEDULE_FILE);
    let mut bytes = std::fs::read(&schedule).unwrap();
    *bytes.last_mut().unwrap() ^= 1;
    std::fs::write(&schedule, bytes).unwrap();
    let image = build(&board, &out);
    match board::run_with_options(&board, &image, &[input], TIMEOUT, channel) {
        Err(BoardError::Refused { board, message }) => {
            assert_eq!(board, "qemu-an386");
            assert!(message.starts_with("schedule is damaged"), "{message}");
        }
        other => panic!("expected the device to refuse the bundle, got {other:?}"),
    }
}

#[test]
fn damaged_schedule_is_refused_by_the_device() {
    let board = board::info("qemu-an386").unwrap();
    let (bundle, input) = small_model();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("bundle");
    bundle.write(&out).unwrap();
    let schedule = out.join(SCHEDULE_FILE);
    let mut bytes = std::fs::read(&schedule).unwrap();
    *bytes.last_mut().unwrap() ^= 1;
    std::fs::write(&schedule, bytes).unwrap();

    let image = build(&board, &out);
    match board::run(&board, &image, &[input], TIMEOUT) {
        Err(BoardError::Refused { board, message }) => {
            assert_eq!(board, "qemu-an386");
            assert!(message.starts_with("schedule is damaged"), "{message}");
        }
        other => panic!("expected the device to refuse the bundle, got {other:?}"),
    }
}

/// The hand-written add-relu bundle of `boards/testdata` (C kernels, two outputs, `expf`) on
/// every board that runs under QEMU: the outputs the firmware crate computed for it.
#[test]
fn test_bundle_runs_on_every_emulated_board() {
    let testdata = board::root().join("boards/testdata/add-relu");
    let input = std::fs::read(testdata.join("io/input_0.bin")).unwrap();
    let emulated: Vec<BoardInfo> = board::list().into_iter().filter(|b| b.emulated).collect();
    assert!(emulated.len() >= 5, "{emulated:?}");
    for board in &emulated {
        let image = build(board, &testdata);
        let run = board::run(board, &image, std::slice::from_ref(&input), TIMEOUT)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(run.outputs.len(), 2, "{}", board.name);
        assert_eq!(run.step_instructions.len(), 3, "{}", board.name);
        for (index, got) in run.outputs.iter().enumerate() {
            let want = std::fs::read(testdata.join(format!("io/expected_{index}.bin"))).unwrap();
            for (a, b) in floats(got).iter().zip(floats(&want)) {
                assert!(
                    (a - b).abs() <= 1e-6,
                    "{}: output {index}: {a} vs {b}",
                    board.name
                );
            }
        }
    }
}

/// A hosted board has no RTT: asked for it, the run says so and names the channel it has.
#[test]
fn a_hosted_board_refuses_rtt_and_names_its_channel() {
    let board = board::info("qemu-aarch64").unwrap();
    let testdata = board::root().join("boards/testdata/add-relu");
    let input = std::fs::read(testdata.join("io/input_0.bin")).unwrap();
    let image = build(&board, &testdata);
    let options = RunOptions { io: Io::Rtt };
    let error = board::run_with_options(&board, &image, &[input], TIMEOUT, options).unwrap_err();
    let text = error.to_string();
    assert!(matches!(error, BoardError::Unsupported { .. }), "{text}");
    assert!(
        text.contains("qemu-aarch64") && text.contains("--io channel"),
        "{text}"
    );
}

#[test]
fn other_format_version_is_refused_by_the_device() {
    let board = board::info("qemu-an386").unwrap();
    let (bundle, input) = small_model();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("bundle");
    bundle.write(&out).unwrap();
    let schedule = out.join(SCHEDULE_FILE);
    let mut bytes = std::fs::read(&schedule).unwrap();
    bytes[4] = 1;
    std::fs::write(&schedule, bytes).unwrap();

    let image = build(&board, &out);
    match board::run(&board, &image, &[input], TIMEOUT) {
        Err(BoardError::Refused { message, .. }) => {
            assert!(
                message.starts_with("schedule format version 1"),
                "{message}"
            );
        }
        other => panic!("expected the device to refuse the bundle, got {other:?}"),
    }
}

#[test]
fn too_big_for_the_microbit_is_refused_before_building() {
    let mut g = Graph::new();
    let x = g.input("x", DType::F32, &[1, 16, 32, 32]);
    let y = g.relu(&x).unwrap();
    let z = g.exp(&y).unwrap();
    let bundle = compile_graph("big", &g, &[z], &Target::c(), true, &mut |_, _| {}).unwrap();
    let microbit = board::info("qemu-microbit").unwrap();
    let error = board::check_fits(&microbit, &bundle).unwrap_err();
    let text = error.to_string();
    let arena = board::bytes_text(bundle.report.arena_bytes);
    assert!(matches!(error, BoardError::TooBig { .. }), "{text}");
    assert!(text.contains(&format!("its arena {arena}")), "{text}");
    assert!(text.contains("stack 4,096 B"), "{text}");
    assert!(text.contains("qemu-microbit has 16,384 B"), "{text}");
    let an386 = board::info("qemu-an386").unwrap();
    assert!(board::check_fits(&an386, &bundle).is_ok());
}

#[test]
fn boards_are_read_from_their_folders() {
    let boards = board::list();
    let names: Vec<&str> = boards.iter().map(|b| b.name.as_str()).collect();
    for name in [
        "qemu-an386",
        "qemu-microbit",
        "qemu-rv32",
        "nrf52840-dk",
        "rp2040-pico",
    ] {
        assert!(names.contains(&name), "{names:?}");
    }
    // The example of a user's firmware is no board of Kiln's.
    assert_eq!(board::names().len(), names.len(), "{names:?}");
    assert!(!names.contains(&"user-firmware"), "{names:?}");
    let an386 = board::info("qemu-an386").unwrap();
    assert_eq!(an386.target, "thumbv7em-none-eabihf");
    assert!(an386.emulated && !an386.code_in_ram && !an386.hosted());
    assert_eq!((an386.flash_bytes, an386.ram_bytes), (4 << 20, 4 << 20));
    let qemu = an386.qemu.unwrap();
    assert_eq!(qemu[0], "qemu-system-arm");
    assert_eq!(qemu.last().map(String::as_str), Some("-kernel"));
    let microbit = board::info("qemu-microbit").unwrap();
    assert_eq!(
        (microbit.flash_bytes, microbit.ram_bytes),
        (256 << 10, 16 << 10)
    );
    assert!(board::info("qemu-rv32").unwrap().code_in_ram);
    // A Linux program under QEMU's user-mode emulation: code and data share its memory.
    let aarch64 = board::info("qemu-aarch64").unwrap();
    assert!(aarch64.emulated && aarch64.hosted() && aarch64.code_in_ram);
    assert_eq!(aarch64.target, "aarch64-unknown-linux-gnu");
    assert_eq!(aarch64.qemu.as_ref().unwrap()[0], "qemu-aarch64");
    let pico = board::info("rp2040-pico").unwrap();
    assert!(!pico.emulated && pico.qemu.is_none());
    assert_eq!(pico.probe_chip.as_deref(), Some("RP2040"));
    assert_eq!(pico.flash_bytes, (2 << 20) - 256);
}

#[test]
fn unknown_and_real_boards_say_what_to_do() {
    let error = board::info("qemu-nope").unwrap_err().to_string();
    assert!(
        error.contains("qemu-nope") && error.contains("qemu-an386"),
        "{error}"
    );
    let nrf = board::info("nrf52840-dk").unwrap();
    let image = BuiltImage {
        board: nrf.name.clone(),
        elf: "nrf52840-dk.elf".into(),
        flash_used: 0,
        ram_used: 0,
        arena_bytes: 0,
    };
    match board::run(&nrf, &image, &[], TIMEOUT) {
        Err(e @ BoardError::NotEmulated { .. }) => {
            let text = e.to_string();
            assert!(
                text.contains("probe-rs run --chip nRF52840_xxAA nrf52840-dk.elf"),
                "{text}"
            );
        }
        other => panic!("{other:?}"),
    }
}

/// An image whose static arena is smaller than the bundle's plan (built with an arena size
/// override): the device refuses to run it, naming both sizes, with semihosting files and over
/// RTT (where the refusal is the session's `Error` message, read through the gdbstub).
#[test]
fn an_arena_too_small_for_the_bundle_is_refused_by_the_device() {
    let board = board::info("qemu-an386").unwrap();
    let (bundle, input) = small_model();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("bundle");
    bundle.write(&out).unwrap();
    let small = bundle.report.arena_bytes - 16;
    for io in [Io::Files, Io::Rtt] {
        let options = board::BuildOptions {
            arena_bytes: Some(small),
            rtt: io == Io::Rtt,
        };
        let image = board::build_with_options(&board, &out, options, &mut |_| {}).unwrap();
        assert_eq!(image.arena_bytes, small);
        let inputs = [input.clone()];
        match board::run_with_options(&board, &image, &inputs, TIMEOUT, RunOptions { io }) {
            Err(BoardError::Refused { message, .. }) => {
                let (needed, has) = (bundle.report.arena_bytes.to_string(), small.to_string());
                assert!(
                    message.contains(&needed) && message.contains(&has),
                    "{message}"
                );
            }
            other => panic!("{io:?}: expected the device to refuse the bundle, got {other:?}"),
        }
    }
}

/// A second model for batches: 2×3 matmul + tanh, its own kernels and shapes.
fn tiny_model() -> (Bundle, Vec<u8>) {
    let mut g = Graph::new();
    let x = g.input("x", DType::F32, &[2, 4]);
    let w = weight(&mut g, &[4, 3], 7);
    let y = g.matmul(&x, &w).unwrap();
    let t = g.tanh(&y).unwrap();
    let bundle = compile_graph("tiny", &g, &[t], &Target::c(), true, &mut |_, _| {}).unwrap();
    let input = (0..8)
        .flat_map(|i| (i as f32 * 0.25 - 1.0).to_le_bytes())
        .collect();
    (bundle, input)
}

/// float16 arithmetic: x → half, x·x + x in half, → float; and a double input cast to half.
/// On Arm, `_Float16` converts with the FPU or through the runtime's routines.
fn half_model() -> (Bundle, Vec<u8>) {
    let mut g = Graph::new();
    let x = g.input("x", DType::F32, &[16]);
    let h = g.cast(&x, DType::F16);
    let sq = g.binary(kiln_codegen::ops::BinaryOp::Mul, &h, &h).unwrap();
    let y = g.binary(kiln_codegen::ops::BinaryOp::Add, &sq, &h).unwrap();
    let out = g.cast(&y, DType::F32);
    let d = g.input("d", DType::F64, &[16]);
    let dh = g.cast(&d, DType::F16);
    let bundle = compile_graph("half", &g, &[out, dh], &Target::c(), true, &mut |_, _| {}).unwrap();
    let x: Vec<u8> = (0..16)
        .flat_map(|i| (i as f32 * 0.37 - 2.9).to_le_bytes())
        .collect();
    let d: Vec<u8> = (0..16)
        .flat_map(|i| (i as f64 * 0.1234567 - 0.9).to_le_bytes())
        .collect();
    (bundle, [x, d].concat())
}

/// The host's outputs of `bundle` on `input`.
fn host_outputs(bundle: &Bundle, inputs: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("bundle");
    bundle.write(&out).unwrap();
    let lib = host::build_library(&out).unwrap();
    host::run(bundle, &lib, inputs).unwrap().outputs
}

#[test]
fn many_models_run_in_one_image_and_a_bad_one_fails_alone() {
    let board = board::info("qemu-an386").unwrap();
    let (small, small_input) = small_model();
    let (tiny, tiny_input) = tiny_model();
    let (half, half_bytes) = half_model();
    let half_inputs = [half_bytes[..64].to_vec(), half_bytes[64..].to_vec()];
    let mut damaged = tiny.clone();
    let last = damaged.schedule.len() - 1;
    damaged.schedule[last] ^= 0x40;
    let small_inputs = [small_input.clone()];
    let tiny_inputs = [tiny_input.clone()];
    let cases = [
        kiln_runners::Case {
            bundle: &small,
            inputs: &small_inputs,
            invocations: 1,
        },
        kiln_runners::Case {
            bundle: &damaged,
            inputs: &tiny_inputs,
            invocations: 1,
        },
        kiln_runners::Case {
            bundle: &tiny,
            inputs: &tiny_inputs,
            invocations: 1,
        },
        kiln_runners::Case {
            bundle: &small,
            inputs: &small_inputs,
            invocations: 1,
        },
        kiln_runners::Case {
            bundle: &half,
            inputs: &half_inputs,
            invocations: 1,
        },
    ];
    let mut seen = Vec::new();
    let outcomes = board::run_batches(&board, &cases, &mut |done, all| seen.push((done, all)))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(seen.last(), Some(&(5, 5)));
    let close = |got: &[Vec<u8>], want: &[Vec<u8>]| {
        let (got, want) = (floats(&got[0]), floats(&want[0]));
        got.len() == want.len() && got.iter().zip(&want).all(|(g, w)| (g - w).abs() <= 1e-6)
    };
    let small_want = host_outputs(&small, &small_inputs);
    let tiny_want = host_outputs(&tiny, &tiny_inputs);
    assert!(
        close(outcomes[0].as_ref().unwrap(), &small_want),
        "{outcomes:?}"
    );
    let refused = outcomes[1].as_ref().unwrap_err().to_string();
    assert!(refused.contains("damaged"), "{refused}");
    assert!(
        close(outcomes[2].as_ref().unwrap(), &tiny_want),
        "{outcomes:?}"
    );
    assert!(
        close(outcomes[3].as_ref().unwrap(), &small_want),
        "{outcomes:?}"
    );
}

#[test]
fn a_float16_model_is_refused_before_building_where_c_has_no_half() {
    let rv32 = board::info("qemu-rv32").unwrap();
    let (half, _) = half_model();
    let dir = tempfile::tempdir().unwrap();
    half.write(&dir.path().join("bundle")).unwrap();
    let err = board::build(&rv32, &dir.path().join("bundle")).unwrap_err();
    assert!(matches!(err, BoardError::Unsupported { .. }), "{err}");
    assert!(err.to_string().contains("float16"), "{err}");
}
