//! A user's own bare-metal firmware with three Kiln models in it. `build.rs` compiles keyword
//! spotting (`kws`, float ONNX), a small residual network (`residual`) and MLPerf Tiny's int8
//! keyword spotter as TFLite ships it (`kws_int8`) into typed modules; this runs each on a
//! reference input, compares with onnxruntime's outputs (TFLM's, exactly, for the int8 one),
//! and reports each kernel's cost through the run hook: kernel calls under QEMU, DWT cycles on
//! a real Cortex-M4F.
#![no_std]
#![no_main]

#[cfg(all(feature = "qemu-an386", feature = "nrf52840-dk"))]
compile_error!(
    "pick one board: `--no-default-features --features nrf52840-dk` for the nRF52840-DK"
);

mod board;

// The critical-section implementation (single core) that semihosting and RTT use.
use cortex_m as _;

kiln_firmware::include_model!(kws);
kiln_firmware::include_model!(residual);
kiln_firmware::include_model!(kws_int8);

/// Largest difference allowed from onnxruntime's outputs.
const TOLERANCE: f32 = 1e-4;

// The arenas: `static`s in a section of our choosing (any RAM region `memory.x` names would
// do), sized at compile time by the generated `ARENA_BYTES`.
#[link_section = ".bss.kiln_arenas"]
static mut KWS_ARENA: kws::Arena = kws::Arena::zeroed();
#[link_section = ".bss.kiln_arenas"]
static mut RESIDUAL_ARENA: residual::Arena = residual::Arena::zeroed();
#[link_section = ".bss.kiln_arenas"]
static mut KWS_INT8_ARENA: kws_int8::Arena = kws_int8::Arena::zeroed();

#[cortex_m_rt::entry]
fn main() -> ! {
    let mut clock = board::start();
    // SAFETY: `main` runs once: these are the only references to the arenas.
    let (kws_arena, residual_arena, kws_int8_arena) = unsafe {
        (
            &mut *core::ptr::addr_of_mut!(KWS_ARENA),
            &mut *core::ptr::addr_of_mut!(RESIDUAL_ARENA),
            &mut *core::ptr::addr_of_mut!(KWS_INT8_ARENA),
        )
    };
    let kws_ok = run_kws(kws_arena, &mut clock);
    let residual_ok = run_residual(residual_arena, &mut clock);
    let kws_int8_ok = run_kws_int8(kws_int8_arena, &mut clock);
    board::exit(kws_ok && residual_ok && kws_int8_ok)
}

fn run_kws(arena: &mut kws::Arena, clock: &mut board::Clock) -> bool {
    let input: [f32; 490] = floats(include_bytes!(concat!(env!("OUT_DIR"), "/kws_input_0.bin")));
    let want: [f32; 12] = floats(include_bytes!(concat!(
        env!("OUT_DIR"),
        "/kws_output_0.bin"
    )));
    let mut model = match kws::Model::new(arena) {
        Ok(model) => model,
        Err(e) => return board::failed("kws", e),
    };
    let mut total = 0u32;
    let mut started = 0u32;
    let result = model.run_with(&input, &mut |event| match event {
        kws::KernelEvent::Before { .. } => started = clock.now(),
        kws::KernelEvent::After { step, kernel } => {
            let cost = clock.now().wrapping_sub(started);
            total = total.wrapping_add(cost);
            board::kernel_cost(step, kws::KERNEL_NAMES[usize::from(kernel.0)], cost);
        }
    });
    match result {
        Ok(out) => report("kws", out.dense, &want, total),
        Err(e) => board::failed("kws", e),
    }
}

fn run_residual(arena: &mut residual::Arena, clock: &mut board::Clock) -> bool {
    let input = floats(include_bytes!(concat!(
        env!("OUT_DIR"),
        "/residual_input_0.bin"
    )));
    let want = floats(include_bytes!(concat!(
        env!("OUT_DIR"),
        "/residual_output_0.bin"
    )));
    let mut model = match residual::Model::new(arena) {
        Ok(model) => model,
        Err(e) => return board::failed("residual", e),
    };
    let started = clock.now();
    match model.run(&input) {
        Ok(out) => report("residual", out.y, &want, clock.now().wrapping_sub(started)),
        Err(e) => board::failed("residual", e),
    }
}

fn run_kws_int8(arena: &mut kws_int8::Arena, clock: &mut board::Clock) -> bool {
    let input: &[u8; 490] = include_bytes!(concat!(env!("OUT_DIR"), "/kws_int8_input_0.bin"));
    let want: &[u8; 12] = include_bytes!(concat!(env!("OUT_DIR"), "/kws_int8_output_0.bin"));
    let mut model = match kws_int8::Model::new(arena) {
        Ok(model) => model,
        Err(e) => return board::failed("kws_int8", e),
    };
    let started = clock.now();
    let result = model.run(&input.map(|b| b as i8));
    let cost = clock.now().wrapping_sub(started);
    match result {
        Ok(out) => {
            // Integer outputs compare exactly: the largest difference in steps, 0 to pass.
            let diff = out.identity.iter().zip(want).fold(0u8, |worst, (&g, &w)| {
                worst.max((i16::from(g) - i16::from(w as i8)).unsigned_abs() as u8)
            });
            board::result("kws_int8", f32::from(diff), 0.0, cost);
            diff == 0
        }
        Err(e) => board::failed("kws_int8", e),
    }
}

/// Compares with the reference and says so; true when within [`TOLERANCE`].
fn report<const N: usize>(model: &str, got: &[f32; N], want: &[f32; N], cost: u32) -> bool {
    let diff = max_abs_diff(got, want);
    board::result(model, diff, TOLERANCE, cost);
    diff <= TOLERANCE
}

/// The largest absolute difference; NaN if any value is NaN.
fn max_abs_diff(got: &[f32], want: &[f32]) -> f32 {
    got.iter().zip(want).fold(0.0, |worst, (g, w)| {
        let d = if g > w { g - w } else { w - g };
        if d > worst || d.is_nan() || worst.is_nan() {
            if worst.is_nan() {
                worst
            } else {
                d
            }
        } else {
            worst
        }
    })
}

/// Little-endian `f32`s, as `build.rs` wrote them.
fn floats<const N: usize>(bytes: &[u8]) -> [f32; N] {
    assert_eq!(bytes.len(), N * 4, "reference vector length");
    core::array::from_fn(|i| {
        f32::from_le_bytes([
            bytes[4 * i],
            bytes[4 * i + 1],
            bytes[4 * i + 2],
            bytes[4 * i + 3],
        ])
    })
}
