//! Bad TFLite input gives an error that names the problem, never a panic: truncated and
//! corrupted files, and a file with the identifier but no model.

use kiln_codegen::model::{import_bytes, Format, ImportOptions, ModelError};
use kiln_codegen::tflite::TfliteError;
use proptest::prelude::*;

fn kws() -> Vec<u8> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/models/mlperf-tiny/tflite/kws_ref_model.tflite"
    );
    std::fs::read(path).expect("the KWS model")
}

#[test]
fn the_content_decides_the_format() {
    assert_eq!(Format::of(&kws()), Format::Tflite);
    let onnx = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/models/kws_float.onnx"
    ))
    .unwrap();
    assert_eq!(Format::of(&onnx), Format::Onnx);
}

#[test]
fn a_truncated_file_is_malformed() {
    let bytes = kws();
    for cut in [8, 64, bytes.len() / 2, bytes.len() - 1] {
        match import_bytes(&bytes[..cut], &ImportOptions::default()) {
            Err(ModelError::Tflite(e)) => println!("cut at {cut}: {e}"),
            Err(other) => panic!("cut at {cut}: not a TFLite error: {other}"),
            Ok(_) => panic!("cut at {cut}: imported"),
        }
    }
}

#[test]
fn shapes_are_refused_for_tflite() {
    let options = ImportOptions {
        shapes: vec![("input".into(), vec![1, 2])],
        ..Default::default()
    };
    let e = import_bytes(&kws(), &options).unwrap_err();
    assert!(matches!(e, ModelError::TfliteShape { .. }), "{e}");
}

#[test]
fn an_identifier_without_a_model_is_an_error() {
    let e = import_bytes(
        b"\x00\x00\x00\x00TFL3\x00\x00\x00\x00",
        &ImportOptions::default(),
    )
    .unwrap_err();
    assert!(
        matches!(e, ModelError::Tflite(TfliteError::Malformed(_))),
        "{e}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Any byte of the file changed: an error or a model, never a panic.
    #[test]
    fn corruption_never_panics(at in 8usize..30_000, value in any::<u8>()) {
        let mut bytes = kws();
        let at = at % bytes.len();
        bytes[at] = value;
        let _ = import_bytes(&bytes, &ImportOptions::default());
    }

    /// Any byte of a model with a DECODE op (its indices, its header, its tables) changed: an
    /// error or a model, never a panic.
    #[test]
    fn a_corrupted_decode_never_panics(at in 0usize..4_000, value in any::<u8>()) {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/tflite-suite/decode_fully_connected_int8_lut4/model.tflite"
        );
        let mut bytes = std::fs::read(path).unwrap();
        let at = at % bytes.len();
        bytes[at] = value;
        let _ = import_bytes(&bytes, &ImportOptions::default());
    }
}
