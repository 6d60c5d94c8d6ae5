//! Shared support for the GPU tests: driver caches in the target folder, device discovery that
//! skips (or fails, with `KILN_REQUIRE_ALL=1`) where no driver is installed, the host C run as
//! the reference, and the comparison.
#![allow(dead_code)]

use kiln_codegen::compile::compile_graph;
use kiln_codegen::gpu::{Api, GpuBundle};
use kiln_codegen::graph::{Graph, Lazy};
use kiln_codegen::target::{DeviceLimits, Target};
use kiln_runners::gpu::GpuRun;
use kiln_runners::host;
use std::sync::Once;

/// Points the drivers' caches (PoCL's kernels, Mesa's shaders) into the target folder. Every
/// test calls this before touching a driver, so no other thread reads the environment while
/// it is written.
pub fn env() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
        for (var, sub) in [
            ("POCL_CACHE_DIR", "pocl-cache"),
            ("MESA_SHADER_CACHE_DIR", "mesa-cache"),
        ] {
            if std::env::var_os(var).is_none() {
                let p = dir.join(sub);
                let _ = std::fs::create_dir_all(&p);
                std::env::set_var(var, p);
            }
        }
    });
}

/// The device limits of `api`, or `None` (with a note) where no driver is installed. With
/// `KILN_REQUIRE_ALL=1` a missing device fails the test instead.
pub fn limits(api: Api) -> Option<DeviceLimits> {
    env();
    match kiln_runners::gpu::device_limits(api) {
        Ok(l) => Some(l),
        Err(e) => {
            let why = format!("{e} (run scripts/setup-gpu.sh)");
            kiln_tests::available(&format!("the test on {}", api.name()), Err(why));
            None
        }
    }
}

/// Runs a GPU bundle `runs` times on its interface's device (step times: the fastest).
pub fn run(gb: &GpuBundle, inputs: &[Vec<u8>], runs: usize) -> GpuRun {
    kiln_runners::gpu::run(gb, inputs, runs)
        .unwrap_or_else(|e| panic!("{} run: {e}", gb.api.name()))
}

/// The model's outputs computed by the host C kernels.
pub fn host_outputs(name: &str, g: &Graph, outs: &[Lazy], inputs: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let bundle =
        compile_graph(name, g, outs, &Target::c(), false, &mut |_, _| {}).expect("C bundle");
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("bundle");
    bundle.write(&path).expect("write bundle");
    let lib = host::build_library(&path).expect("host C compiles");
    host::run(&bundle, &lib, inputs).expect("host run").outputs
}

pub fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

pub fn bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Deterministic values in [-1, 1).
pub fn data(n: usize, seed: u64) -> Vec<f32> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ((x >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// The largest absolute and relative differences; panics when an element is outside
/// `|got - want| <= atol + rtol * |want|`.
pub fn assert_close(what: &str, got: &[f32], want: &[f32], rtol: f32, atol: f32) -> (f32, f32) {
    assert_eq!(got.len(), want.len(), "{what}: output length");
    let (mut abs, mut rel) = (0f32, 0f32);
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let d = (g - w).abs();
        assert!(
            d <= atol + rtol * w.abs() || (g.is_nan() && w.is_nan()),
            "{what}: element {i}: got {g}, want {w}"
        );
        abs = abs.max(d);
        rel = rel.max(d / w.abs().max(f32::MIN_POSITIVE));
    }
    (abs, rel)
}

pub fn weight(g: &mut Graph, name: &str, shape: &[usize], seed: u64) -> Lazy {
    let n: usize = shape.iter().product();
    let t = kiln_codegen::tensor::Tensor::from_f32(shape.to_vec(), &data(n, seed))
        .expect("values fill the shape");
    g.weight(name, t)
}
