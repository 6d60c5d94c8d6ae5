//! TFLite models compiled to C, built by the system C compiler, run by the firmware executor on
//! the host, and compared with TensorFlow Lite Micro's reference kernels: the int8 models bit for
//! bit (0 LSB), the float ones within 1e-4.
//!
//! - The MLPerf Tiny TFLite models against their TFLM vectors (`tests/models/mlperf-tiny/vectors`).
//! - The small op models of `tests/models/tflite` (`scripts/make_tflite_models.py`) against their
//!   TFLM outputs; those whose ops Kiln lacks must fail to import with an error naming the op.
//! - The int8 ones again for a DSP core (`c-dsp`: packed dot products, in plain C on the host),
//!   and with their weights widened to int16 pairs (`c-dsp-wide`), and for a Helium core
//!   (`c-mve`: sixteen-lane dot products, in plain C on the host); and with `--memory min`
//!   (outputs written over dying inputs) for the DSP core and the host.

use kiln_codegen::bundle::Bundle;
use kiln_codegen::dtype::Scalar;
use kiln_codegen::target::{Memory, Target};
use kiln_codegen::tensor::Tensor;
use kiln_codegen::tensorio::read_tensor;
use kiln_runners::host;
use kiln_tests::{compare, compile_file, compile_file_for, root, tflite_path, tflm_vectors};
use std::path::{Path, PathBuf};

/// Runs `bundle` on the host on each sample; returns (largest difference, in LSB for integer
/// outputs), failing on any integer difference or a float one beyond 1e-4.
fn check(name: &str, bundle: &Bundle, samples: &[(Vec<Tensor>, Vec<Tensor>)]) -> f64 {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("tflite_models")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    bundle.write(&dir).unwrap();
    let lib = host::build_library(&dir).unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut worst = 0f64;
    for (k, (inputs, want)) in samples.iter().enumerate() {
        let bytes: Vec<Vec<u8>> = inputs.iter().map(|t| t.bytes().to_vec()).collect();
        let run = host::run(bundle, &lib, &bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        let exact = want.iter().all(|t| t.dtype().is_int());
        let what = format!("{name} sample {k}");
        let (abs, _) = if exact {
            compare(&what, &run.outputs, want, 0.0, 0.0)
        } else {
            compare(&what, &run.outputs, want, 1e-4, 1e-4)
        }
        .unwrap_or_else(|e| panic!("{e:#}"));
        worst = worst.max(abs);
    }
    worst
}

/// TFLM's smallest arena for each int8 MLPerf Tiny model, measured by bisection with the
/// `tflite-micro` package (`tests/models/mlperf-tiny/README.md`).
const TFLM_ARENA: &[(&str, usize)] = &[
    ("kws_ref_model", 24_272),
    ("vww_96_int8", 103_680),
    ("pretrainedResnet_quant", 55_984),
    ("ad01_int8", 3_984),
    ("str_ww_ref_model", 16_640),
];

fn mlperf(name: &str) {
    let bundle = compile_file(name, &tflite_path(name)).unwrap_or_else(|e| panic!("{e:#}"));
    let samples: Vec<_> = tflm_vectors(name)
        .unwrap()
        .into_iter()
        .map(|(x, y)| (vec![x], vec![y]))
        .collect();
    assert_eq!(samples.len(), 5);
    let worst = check(name, &bundle, &samples);
    if is_int8(name) {
        // The host's kernels: int8 sums in int32 lanes, stored as int8 a vector at once
        // (through the helper that narrows in a few instructions); the same outputs.
        let host = compile_file_for(name, &tflite_path(name), &Target::host())
            .unwrap_or_else(|e| panic!("{e:#}"));
        assert!(
            host.kernels_c.contains("kiln_cvt_i32_signed_char"),
            "{name}: no int32 lanes narrowed to int8 on the host"
        );
        // Their products two a lane at once: dot products of int8 pairs.
        assert!(
            host.kernels_c.contains("kiln_dot2_int"),
            "{name}: no dot products of pairs in lanes on the host"
        );
        // Their requantization in lanes too: the clamp to int8 one vector selection.
        assert!(
            host.kernels_c.contains("kiln_select_int"),
            "{name}: no requantization in lanes on the host"
        );
        // A fixed multiplier (an add's or a pool's rescale) is a rounded high word of int32
        // lanes too, not a product of int64 lanes.
        assert!(
            ["long_long8)*cast", "long_long16)*cast"]
                .iter()
                .all(|p| !host.kernels_c.contains(p)),
            "{name}: a fixed multiplier in int64 lanes on the host"
        );
        let host_name = format!("{name}-host");
        assert_eq!(check(&host_name, &host, &samples), 0.0, "{host_name}");
        // The kernels of a DSP core, their packed dot products in plain C here: the same
        // outputs, so the packing pairs every product as the plain kernels do.
        let dsp = compile_file_for(name, &tflite_path(name), &Target::c_dsp())
            .unwrap_or_else(|e| panic!("{e:#}"));
        assert!(
            dsp.kernels_c.contains("kiln_dot4("),
            "{name}: no packed dot product"
        );
        // The requantization's multiply is one rounded high word, its last clamp to int8 one
        // saturation.
        assert!(
            dsp.kernels_c.contains("kiln_smmulr(") && dsp.kernels_c.contains("KILN_SSAT("),
            "{name}: no rounded high word or saturating clamp"
        );
        check(&format!("{name}-dsp"), &dsp, &samples);
        // Their weights widened to int16 pairs (`--wide-weights`), the products in plain C
        // here: the same outputs from about twice the weights' bytes.
        let wide = compile_file_for(name, &tflite_path(name), &Target::c_dsp_wide())
            .unwrap_or_else(|e| panic!("{e:#}"));
        assert!(
            wide.kernels_c.contains("kiln_dot4w("),
            "{name}: no widened weight"
        );
        let (narrow, widened) = (dsp.report.weight_bytes, wide.report.weight_bytes);
        assert!(
            widened > narrow * 3 / 2 && widened <= narrow * 2,
            "{name}: {widened} B of widened weights against {narrow} B"
        );
        check(&format!("{name}-dsp-wide"), &wide, &samples);
        // And their activations stored as int16 (`--wide-activations`), with int8 weights in
        // pair order and with widened ones: the same outputs from a larger arena.
        for (target, helper) in [
            (Target::c_dsp(), "= kiln_dot4w("),
            (Target::c_dsp_wide(), "= kiln_dot4ww("),
        ] {
            let target = target.with_wide_activations().unwrap();
            let i16 = compile_file_for(name, &tflite_path(name), &target)
                .unwrap_or_else(|e| panic!("{e:#}"));
            assert!(i16.kernels_c.contains(helper), "{name}: no {helper}");
            assert!(i16.report.arena_bytes > dsp.report.arena_bytes, "{name}");
            check(&format!("{name}-{}", target.name), &i16, &samples);
        }
        // With `--memory min`, kernels write over the inputs that die where they read them:
        // the same outputs from a smaller arena (never a larger one), for the boards' kernels
        // and the host's vectors.
        for target in [Target::c_dsp(), Target::host()] {
            let min = compile_file_for(name, &tflite_path(name), &target.with_memory(Memory::Min))
                .unwrap_or_else(|e| panic!("{e:#}"));
            let (r, speed) = (&min.report, dsp.report.arena_bytes);
            assert!(
                r.arena_bytes <= speed,
                "{name}: {} B against {speed} B",
                r.arena_bytes
            );
            assert!(r.arena_lower_bound <= r.arena_bytes, "{name}");
            // All but AD, whose largest layers are a vector each.
            if name != "ad01_int8" {
                assert!(
                    r.arena_bytes < speed,
                    "{name}: {} B, nothing overlaps",
                    r.arena_bytes
                );
            }
            // KWS's depthwise blocks run a channel at a time, each output channel over its
            // input channel: the arena holds one 25x5x64 tensor, a padded 27x7 plane and
            // 128 B of the pointwise convolutions' shifts.
            if name == "kws_ref_model" {
                assert!(r.arena_bytes <= 8_320, "{name}: {} B", r.arena_bytes);
            }
            // Row tiles: VWW's first layers run a band of rows at a time, through the
            // 48x48 and 24x24 layers, their output over the input's rows as they die; the
            // streaming wake-word model's convolutions run a few time steps at a time.
            // IC's residual blocks run as row tiles too, each block's output over its input
            // a band behind the addition that reads it, the rows two bands share kept.
            let tiled = [
                ("vww_96_int8", 32_000),
                ("str_ww_ref_model", 3_712),
                ("pretrainedResnet_quant", 22_800),
            ];
            if let Some(&(_, most)) = tiled.iter().find(|(n, _)| *n == name) {
                assert!(r.arena_bytes <= most, "{name}: {} B", r.arena_bytes);
            }
            check(&format!("{name}-{}-min", target.name), &min, &samples);
        }
        // Helium's sixteen-lane dot products (the Cortex-M55's kernels), in plain C here.
        let mve = compile_file_for(name, &tflite_path(name), &Target::c_mve())
            .unwrap_or_else(|e| panic!("{e:#}"));
        assert!(
            mve.kernels_c.contains("= kiln_ld16(data"),
            "{name}: no Helium dot product"
        );
        check(&format!("{name}-mve"), &mve, &samples);
    }
    let r = &bundle.report;
    println!(
        "{name}: 5 samples, largest difference {worst:.2e}; arena {} B (bound {} B), weights {} B",
        r.arena_bytes, r.arena_lower_bound, r.weight_bytes
    );
    // An int8 model's arena is at its liveness bound and below TFLM's: the i32 accumulators
    // stay in registers, requantized in the kernel that sums them.
    if let Some(&(_, tflm)) = TFLM_ARENA.iter().find(|(n, _)| *n == name) {
        assert_eq!(
            r.arena_bytes, r.arena_lower_bound,
            "{name}: arena above its bound"
        );
        assert!(
            r.arena_bytes < tflm,
            "{name}: arena {} B, TFLM's {tflm} B",
            r.arena_bytes
        );
        // No float on the device: a core without an FPU runs the kernels as they are.
        let c = &bundle.kernels_c;
        assert!(
            !c.contains("float") && !c.contains("double"),
            "{name}: float arithmetic in the int8 kernels"
        );
        // The weights stay int8 in flash and per-channel tables stay per channel: within 1.2×
        // the file (the requantization's four tables per layer against the file's scales).
        let file = std::fs::metadata(tflite_path(name)).unwrap().len() as usize;
        assert!(
            r.weight_bytes * 5 < file * 6,
            "{name}: {} B of weights from a {file} B file",
            r.weight_bytes
        );
    }
}

/// The source of kernel `name` in `bundle`'s C.
fn kernel_source<'a>(bundle: &'a Bundle, name: &str) -> &'a str {
    let c = &bundle.kernels_c;
    let at = c
        .find(&format!(" {name}("))
        .unwrap_or_else(|| panic!("no kernel {name}"));
    let end = c[at..].find("\n}\n").map_or(c.len(), |e| at + e);
    &c[at..end]
}

/// A first layer over three channels (vww's and ic's RGB images) reads a fourth, zero-weighted
/// one on a core with packed dot products, so its products pack into words; without them
/// (plain C), it keeps three. The outputs are TFLM's either way (`vww_int8`, `ic_int8`).
#[test]
fn a_first_layer_over_three_channels_packs_on_a_dsp_core() {
    for name in ["vww_96_int8", "pretrainedResnet_quant"] {
        let path = tflite_path(name);
        let dsp = compile_file_for(name, &path, &Target::c_dsp()).unwrap();
        let plain = compile_file_for(name, &path, &Target::c()).unwrap();
        let [pad, conv] = [0, 1].map(|i| dsp.report.steps[i].name.clone());
        assert!(pad.ends_with("_4") || pad.contains("_4_"), "{name}: {pad}");
        assert!(
            kernel_source(&dsp, &conv).contains("kiln_dot4("),
            "{name}: {conv} does not pack"
        );
        let plain_pad = &plain.report.steps[0].name;
        assert!(plain_pad.contains("_3"), "{name}: {plain_pad}");
        assert!(!kernel_source(&plain, &plain.report.steps[1].name).contains("kiln_dot4("));
    }
}

fn is_int8(name: &str) -> bool {
    TFLM_ARENA.iter().any(|(n, _)| *n == name)
}

macro_rules! mlperf_tests {
    ($($t:ident: $name:expr,)*) => { $( #[test] fn $t() { mlperf($name); } )* };
}

mlperf_tests! {
    kws_int8: "kws_ref_model",
    vww_int8: "vww_96_int8",
    ic_int8: "pretrainedResnet_quant",
    ad_int8: "ad01_int8",
    str_ww_int8: "str_ww_ref_model",
    vww_float: "vww_96_float",
    ic_float: "pretrainedResnet",
    ad_float: "ad01_fp32",
}

/// Op models whose ops (or forms of them) Kiln does not import yet, with the op the error
/// names.
const NOT_YET: &[(&str, &str)] = &[];

fn op_models() -> PathBuf {
    root().join("tests/models/tflite")
}

/// `<dir>/<prefix>_<k>_<i>.npy` for each sample `k` and index `i`.
fn op_tensors(dir: &Path, prefix: &str, k: usize) -> Vec<Tensor> {
    (0..)
        .map(|i| dir.join(format!("{prefix}_{k}_{i}.npy")))
        .take_while(|p| p.exists())
        .map(|p| read_tensor(&p).unwrap())
        .collect()
}

#[test]
fn op_models_match_tflm() {
    let mut names: Vec<String> = std::fs::read_dir(op_models())
        .unwrap()
        .filter_map(|e| {
            let p = e.unwrap().path();
            (p.extension()? == "tflite").then(|| p.file_stem().unwrap().to_string_lossy().into())
        })
        .collect();
    names.sort();
    assert!(names.len() >= 30, "the op models are missing");
    let mut report = Vec::new();
    let (mut packed, mut widened, mut helium) = (0, 0, 0);
    for name in &names {
        let path = op_models().join(format!("{name}.tflite"));
        let compiled = compile_file(name, &path);
        if let Some((_, op)) = NOT_YET.iter().find(|(n, _)| n == name) {
            let Err(e) = compiled else {
                panic!("{name} now compiles: take it off NOT_YET");
            };
            let msg = format!("{e:#}");
            assert!(
                msg.contains(op),
                "{name}: the error does not name {op}: {msg}"
            );
            report.push(format!("{name}: not yet ({msg})"));
            continue;
        }
        let bundle = compiled.unwrap_or_else(|e| panic!("{name}: {e:#}"));
        let dir = op_models().join(name);
        let samples: Vec<_> = (0..5)
            .map(|k| (op_tensors(&dir, "input", k), op_tensors(&dir, "output", k)))
            .collect();
        assert!(samples.iter().all(|(i, o)| !i.is_empty() && !o.is_empty()));
        let worst = check(name, &bundle, &samples);
        let int = samples[0].1.iter().all(|t| t.dtype() != Scalar::F32);
        if int {
            let dsp = compile_file_for(name, &path, &Target::c_dsp())
                .unwrap_or_else(|e| panic!("{name}: {e:#}"));
            check(&format!("{name}-dsp"), &dsp, &samples);
            packed += usize::from(dsp.kernels_c.contains("kiln_dot4("));
            // Its int8 activations stored as int16 where dot products read them, whatever
            // else reads them too.
            let i16 = Target::c_dsp().with_wide_activations().unwrap();
            let wide =
                compile_file_for(name, &path, &i16).unwrap_or_else(|e| panic!("{name}: {e:#}"));
            check(&format!("{name}-dsp-i16"), &wide, &samples);
            widened += usize::from(wide.kernels_c.contains("(short* restrict data0"));
            let mve = compile_file_for(name, &path, &Target::c_mve())
                .unwrap_or_else(|e| panic!("{name}: {e:#}"));
            check(&format!("{name}-mve"), &mve, &samples);
            helium += usize::from(mve.kernels_c.contains("= kiln_ld16(data"));
        }
        report.push(format!(
            "{name}: {} ({worst:.1e})",
            if int { "bit-exact" } else { "within 1e-4" }
        ));
    }
    println!("{}", report.join("\n"));
    // The int8 convolutions and dense layers of the op models take packed dot products, some
    // of them read activations stored as int16, and some take Helium's sixteen lanes.
    assert!(packed >= 4, "{packed} op models with packed dot products");
    assert!(widened >= 2, "{widened} op models with int16 activations");
    assert!(helium >= 1, "{helium} op models with Helium's dot products");
}

/// The demo's int8 input and expected output are the first TFLM vector of the KWS model.
#[test]
fn the_demo_data_is_the_first_kws_vector() {
    let (x, y) = tflm_vectors("kws_ref_model").unwrap().remove(0);
    let dir = root().join("tests/data/kws_int8");
    for (file, want) in [("input_0.npy", x), ("output_0.npy", y)] {
        let got = read_tensor(&dir.join(file)).unwrap();
        assert_eq!(got.bytes(), want.bytes(), "{file}");
        assert_eq!(got.dtype(), want.dtype(), "{file}");
    }
}

/// MobileNetV2 at width 0.35 on 144×144 RGB, int8, seeded random weights
/// (`scripts/make_mobilenet_v2.py`): the network of msf-CNN's peak-memory figures, bit for bit
/// with TFLM on the host, for the boards' kernels and the host's vectors, with `--memory speed`
/// and `min` (its paddings of 144×144 to 145×145 split by INTERIOR into boxes whose loop nests
/// run in the UOp graph's order: min once wrote a border column over rows still to be read;
/// its first stages run as row tiles).
#[test]
fn mobilenet_v2_int8() {
    let name = "mobilenet_v2_035_144_int8";
    let dir = root().join("tests/models/mobilenet-v2");
    let vectors = dir.join(name);
    let samples = vec![(
        vec![read_tensor(&vectors.join("input_0.npy")).unwrap()],
        vec![read_tensor(&vectors.join("output_0.npy")).unwrap()],
    )];
    let model = dir.join(format!("{name}.tflite"));
    for memory in [Memory::Speed, Memory::Min] {
        for target in [Target::c_dsp(), Target::host()] {
            let target = target.with_memory(memory);
            let bundle =
                compile_file_for(name, &model, &target).unwrap_or_else(|e| panic!("{e:#}"));
            let label = format!("{name}-{}-{memory:?}", target.name);
            assert_eq!(check(&label, &bundle, &samples), 0.0);
            // Row tiles through the first stages: 293,840 B layer by layer.
            if memory == Memory::Min {
                let arena = bundle.report.arena_bytes;
                assert!(arena <= 106_080, "{label}: {arena} B");
            }
        }
    }
}
