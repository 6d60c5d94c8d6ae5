//! A user's own program with three Kiln models in it: keyword spotting (`kws`), a small
//! residual network (`residual`) and a streaming GRU whose state stays in its arena (`gru`),
//! each compiled by `build.rs` into a typed module. It runs them on the reference inputs and
//! checks them against onnxruntime's outputs; the same
//! functions are its unit tests, which is how model code is tested on a PC before it goes on
//! a board.

use std::process::ExitCode;

kiln_firmware::include_model!(kws);
kiln_firmware::include_model!(residual);
kiln_firmware::include_model!(gru);

/// Largest difference allowed from onnxruntime's outputs.
const TOLERANCE: f32 = 1e-4;

fn main() -> ExitCode {
    let mut ok = true;
    let checks = [
        ("kws", check_kws()),
        ("residual", check_residual()),
        ("gru", check_gru()),
    ];
    for (name, result) in checks {
        match result {
            Ok(diff) => println!("{name}: matches the reference (max abs diff {diff:.2e})"),
            Err(e) => {
                println!("{name}: {e}");
                ok = false;
            }
        }
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Runs keyword spotting on the reference input; the largest difference from the reference.
fn check_kws() -> Result<f32, String> {
    let input: [f32; 490] =
        npy::f32_array(include_bytes!("../../../tests/data/kws_float/input_0.npy"))?;
    let want: [f32; 12] =
        npy::f32_array(include_bytes!("../../../tests/data/kws_float/output_0.npy"))?;
    // 64 KB: on the heap here, a `static` in a RAM region on a board.
    let mut arena = Box::new(kws::Arena::zeroed());
    let mut model = kws::Model::new(&mut arena).map_err(|e| e.to_string())?;
    let mut calls = 0;
    let out = model
        .run_with(&input, &mut |event| {
            if let kws::KernelEvent::After { .. } = event {
                calls += 1;
            }
        })
        .map_err(|e| e.to_string())?;
    if calls != kws::STEPS {
        return Err(format!("{calls} kernel calls, expected {}", kws::STEPS));
    }
    compare(out.dense, &want)
}

fn check_residual() -> Result<f32, String> {
    const N: usize =
        residual::X_SHAPE[0] * residual::X_SHAPE[1] * residual::X_SHAPE[2] * residual::X_SHAPE[3];
    let input: [f32; N] =
        npy::f32_array(include_bytes!("../../../tests/data/residual/input_0.npy"))?;
    let want = npy::f32_array(include_bytes!("../../../tests/data/residual/output_0.npy"))?;
    let mut arena = residual::Arena::zeroed();
    let mut model = residual::Model::new(&mut arena).map_err(|e| e.to_string())?;
    let out = model.run(&input).map_err(|e| e.to_string())?;
    compare(out.y, &want)
}

/// The GRU over its 24 recorded steps, its hidden state carried in the arena from each to the
/// next, then a reset and the first step again; the largest difference from onnxruntime fed its
/// own state back.
fn check_gru() -> Result<f32, String> {
    let steps = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/models/onnx-streaming/gru_stream/steps"
    );
    let read = |k: usize, file: &str| -> Result<Vec<u8>, String> {
        let path = format!("{steps}/{k:02}/{file}");
        std::fs::read(&path).map_err(|e| format!("{path}: {e}"))
    };
    let mut arena = gru::Arena::zeroed();
    let mut model = gru::Model::new(&mut arena).map_err(|e| e.to_string())?;
    let mut worst = 0.0f32;
    for k in (0..24).chain([0]) {
        if k == 0 {
            model.reset();
        }
        let x: [f32; 16] = npy::f32_array(&read(k, "inputs/input_0.npy")?)?;
        let want: [f32; 4] = npy::f32_array(&read(k, "expected/output_0.npy")?)?;
        let out = model.run(&x).map_err(|e| e.to_string())?;
        worst = worst.max(compare(out.scores, &want).map_err(|e| format!("step {k}: {e}"))?);
    }
    Ok(worst)
}

fn compare<const N: usize>(got: &[f32; N], want: &[f32; N]) -> Result<f32, String> {
    let diffs = got.iter().zip(want).map(|(g, w)| (g - w).abs());
    // NaN, if any value is NaN: it compares false below.
    let diff = diffs.fold(
        0.0,
        |worst: f32, d| if d.is_nan() || d > worst { d } else { worst },
    );
    match diff <= TOLERANCE {
        true => Ok(diff),
        false => Err(format!(
            "max abs diff {diff:.2e} from the reference, above {TOLERANCE:.0e}"
        )),
    }
}

/// Just enough of the `.npy` format for the reference files: little-endian `f32`, version 1.
mod npy {
    pub fn f32_array<const N: usize>(file: &[u8]) -> Result<[f32; N], String> {
        let header_len = usize::from(u16::from_le_bytes([file[8], file[9]]));
        let header = std::str::from_utf8(&file[10..10 + header_len]).map_err(|e| e.to_string())?;
        if !file.starts_with(b"\x93NUMPY\x01") || !header.contains("'<f4'") {
            return Err(format!("not a version-1 little-endian f32 .npy: {header}"));
        }
        let data = &file[10 + header_len..];
        if data.len() != N * 4 {
            return Err(format!("{} bytes of data, expected {}", data.len(), N * 4));
        }
        Ok(std::array::from_fn(|i| {
            f32::from_le_bytes(data[4 * i..4 * i + 4].try_into().unwrap())
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kws_matches_onnxruntime() {
        check_kws().unwrap();
    }

    #[test]
    fn residual_matches_onnxruntime() {
        check_residual().unwrap();
    }

    #[test]
    fn gru_streams_like_onnxruntime_fed_its_own_state() {
        assert_eq!(gru::STATE_BYTES, 128);
        check_gru().unwrap();
    }

    #[test]
    fn two_models_have_their_own_kernels() {
        assert_eq!(kws::KERNEL_NAMES.len(), 8);
        assert_ne!(kws::ARENA_BYTES, residual::ARENA_BYTES);
    }

    #[test]
    fn a_model_refuses_nothing_it_was_built_for() {
        // The arena type is sized at compile time; the model checks the rest at `new`.
        let mut arena = residual::Arena::zeroed();
        assert!(residual::Model::new(&mut arena).is_ok());
    }
}
