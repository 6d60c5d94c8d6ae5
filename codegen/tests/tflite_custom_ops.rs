//! TFLM's custom ops (the detection post-process, the signal library) with options that are
//! missing, out of range or corrupted: an error naming the option, never a panic.

use kiln_codegen::tflite::{self, TfliteModel};
use proptest::prelude::*;

fn bytes(case: &str) -> Vec<u8> {
    let path = format!(
        "{}/../tests/tflite-suite/{case}/model.tflite",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn model(case: &str) -> TfliteModel {
    tflite::load_bytes(&bytes(case)).expect("a suite model reads")
}

fn error_chain(m: &TfliteModel) -> String {
    let e = tflite::import(m).expect_err("the import fails");
    kiln_codegen::error::chain(&e)
}

#[test]
fn a_detection_post_process_without_options_names_the_first_missing_one() {
    let mut m = model("tflite_detection_postprocess_float32");
    m.ops[0].custom_options.clear();
    let e = error_chain(&m);
    assert!(e.contains("CUSTOM:TFLite_Detection_PostProcess"), "{e}");
    assert!(
        e.contains("custom option \"max_detections\" is missing"),
        "{e}"
    );
}

#[test]
fn signal_ops_without_their_options_are_refused() {
    let mut m = model("signal_window_int16");
    m.ops[0].custom_options.clear();
    let e = error_chain(&m);
    assert!(e.contains("custom option \"shift\" is missing"), "{e}");
}

#[test]
fn a_window_of_the_wrong_type_names_the_type_tflm_takes() {
    let mut m = model("signal_window_int16");
    let x = m.ops[0].inputs[1].unwrap();
    m.tensors[x.0 as usize].dtype = kiln_codegen::dtype::Scalar::I8;
    m.tensors[x.0 as usize].data = None;
    m.inputs.push(x);
    let e = error_chain(&m);
    assert!(e.contains("(TFLM takes i16)"), "{e}");
}

/// A FlexBuffer map of integer options.
fn int_options(pairs: &[(&str, i64)]) -> Vec<u8> {
    let mut b = flexbuffers::Builder::default();
    let mut m = b.start_map();
    for &(k, v) in pairs {
        m.push(k, v);
    }
    m.end_map();
    b.view().to_vec()
}

#[test]
fn an_fft_of_odd_length_or_shorter_than_its_frames_is_refused() {
    let mut m = model("signal_rfft_int16_64");
    m.ops[0].custom_options = int_options(&[("T", 7), ("fft_length", 63)]);
    let e = error_chain(&m);
    assert!(
        e.contains("\"fft_length\" is 63, not an even length"),
        "{e}"
    );
    m.ops[0].custom_options = int_options(&[("T", 7), ("fft_length", 32)]);
    let e = error_chain(&m);
    assert!(
        e.contains("frames of 56 samples are longer than fft_length 32"),
        "{e}"
    );
    let mut m = model("signal_irfft_int16_64");
    m.ops[0].custom_options = int_options(&[("T", 7), ("fft_length", 128)]);
    let e = error_chain(&m);
    assert!(e.contains("frames of 66 values are not the 130"), "{e}");
}

#[test]
fn a_filter_bank_band_past_the_spectrum_names_the_band() {
    let mut m = model("signal_filter_bank_uint32");
    let widths = m.ops[0].inputs[5].unwrap();
    let t = m.tensors[widths.0 as usize].data.as_mut().unwrap();
    t.bytes_mut()[6..8].copy_from_slice(&900i16.to_le_bytes());
    let e = error_chain(&m);
    assert!(e.contains("band 3 (start bin"), "{e}");
    assert!(e.contains("width 900) is outside the 33 bins"), "{e}");
    let mut m = model("signal_filter_bank_uint32");
    m.ops[0].custom_options = int_options(&[("num_channels", 40)]);
    let e = error_chain(&m);
    assert!(e.contains("\"num_channels\" is 40"), "{e}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Any byte of a custom op's model changed: an error or a model, never a panic.
    #[test]
    fn corruption_never_panics(case in 0usize..7, at in 8usize..6000, value in any::<u8>()) {
        let name = [
            "tflite_detection_postprocess_float32_regular_nms",
            "signal_energy_int16",
            "signal_fft_auto_scale_int16",
            "signal_rfft_int16_40",
            "signal_filter_bank_uint32",
            "signal_filter_bank_log_uint32_0_1600",
            "signal_pcan_uint32_shift6",
        ][case];
        let mut b = bytes(name);
        let at = at % b.len();
        b[at] = value;
        if let Ok(m) = tflite::load_bytes(&b) {
            let _ = tflite::import(&m);
        }
    }
}

/// Spectral subtraction's options, all present and valid for 24 channels, with `key` set to
/// `value`.
fn spectral_options(key: &str, value: i64) -> Vec<u8> {
    let mut pairs = vec![
        ("alternate_one_minus_smoothing", 15684),
        ("alternate_smoothing", 700),
        ("min_signal_remaining", 1638),
        ("num_channels", 24),
        ("one_minus_smoothing", 14884),
        ("smoothing", 1500),
        ("smoothing_bits", 10),
        ("spectral_subtraction_bits", 14),
    ];
    pairs
        .iter_mut()
        .filter(|p| p.0 == key)
        .for_each(|p| p.1 = value);
    int_options(&pairs)
}

/// A model of `tests/models/tflite-streaming`.
fn streaming_model(name: &str) -> TfliteModel {
    let path = format!(
        "{}/../tests/models/tflite-streaming/{name}.tflite",
        env!("CARGO_MANIFEST_DIR")
    );
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    tflite::load_bytes(&bytes).unwrap()
}

#[test]
fn spectral_subtraction_names_the_option_that_is_missing_or_wrong() {
    let mut m = streaming_model("spectral_subtraction_clamped");
    tflite::import(&m).expect("the model as written imports");
    m.ops[0].custom_options.clear();
    let e = error_chain(&m);
    assert!(
        e.contains("CUSTOM:SignalFilterBankSpectralSubtraction"),
        "{e}"
    );
    assert!(
        e.contains("custom option \"num_channels\" is missing"),
        "{e}"
    );
    m.ops[0].custom_options = spectral_options("num_channels", 7);
    let e = error_chain(&m);
    assert!(
        e.contains("shape [24], custom option \"num_channels\" 7"),
        "{e}"
    );
    m.ops[0].custom_options = spectral_options("smoothing_bits", 40);
    let e = error_chain(&m);
    assert!(
        e.contains("\"smoothing_bits\" is 40, outside 0..=31"),
        "{e}"
    );
}

#[test]
fn signal_ops_with_state_name_the_option_that_does_not_fit() {
    let mut m = streaming_model("signal_framer");
    tflite::import(&m).expect("the model as written imports");
    m.ops[0].custom_options = int_options(&[("frame_size", 20), ("frame_step", 3)]);
    let e = error_chain(&m);
    assert!(e.contains("CUSTOM:SignalFramer"), "{e}");
    assert!(
        e.contains("8 samples a row are not a whole number of frame_step 3"),
        "{e}"
    );
    let mut m = streaming_model("signal_stacker");
    tflite::import(&m).expect("the model as written imports");
    let stacker = |step| {
        int_options(&[
            ("num_channels", 6),
            ("stacker_left_context", 2),
            ("stacker_right_context", 1),
            ("stacker_step", step),
        ])
    };
    m.ops[0].custom_options = stacker(5);
    let e = error_chain(&m);
    assert!(
        e.contains("stacker_step 5 is over the 4 frames stacked"),
        "{e}"
    );
    m.ops[0].custom_options = stacker(0);
    let e = error_chain(&m);
    assert!(e.contains("custom option \"stacker_step\" is 0"), "{e}");
    let mut m = streaming_model("signal_delay");
    m.ops[0].custom_options.clear();
    let e = error_chain(&m);
    assert!(
        e.contains("custom option \"delay_length\" is missing"),
        "{e}"
    );
}

#[test]
fn a_circular_buffer_that_tflm_runs_periodically_is_refused_by_name() {
    let mut m = model("circular_buffer_int8");
    tflite::import(&m).expect("cycles_max 1 imports");
    m.ops[0].custom_options = int_options(&[("cycles_max", 2)]);
    let e = error_chain(&m);
    assert!(e.contains("CUSTOM:CIRCULAR_BUFFER"), "{e}");
    assert!(e.contains("once every 2 invocations (cycles_max 2"), "{e}");
    // Without the option TFLM guesses from the shapes: 2 for a buffer of 3 slots.
    m.ops[0].custom_options.clear();
    let e = error_chain(&m);
    assert!(e.contains("cycles_max 2"), "{e}");
}

/// The suite's model with 4-bit look-up-table weights, and where its ancillary tensor (the
/// decoding's 16-byte header: encoding 0, version 1, …, table version 1, width 4) starts.
fn compressed_model() -> (Vec<u8>, usize) {
    let bytes = bytes("decode_fully_connected_int8_lut4");
    let header = [0u8, 1, 0, 0, 1, 4];
    let found: Vec<usize> = (0..bytes.len() - header.len())
        .filter(|&i| bytes[i..i + header.len()] == header)
        .collect();
    assert_eq!(found.len(), 1, "the header once in the file");
    (bytes, found[0])
}

#[test]
fn a_decode_names_the_encoding_or_field_it_cannot_read() {
    let (bytes, at) = compressed_model();
    tflite::load_bytes(&bytes).expect("the model as written reads");
    let error = |offset: usize, value: u8| {
        let mut b = bytes.clone();
        b[at + offset] = value;
        let e = tflite::load_bytes(&b).expect_err("the file is refused");
        kiln_codegen::error::chain(&e)
    };
    let e = error(0, 1);
    assert!(e.contains("CUSTOM:TFLM_DECODE"), "{e}");
    assert!(e.contains("encoding 1 (Huffman)"), "{e}");
    assert!(error(4, 2).contains("look-up table version 2, not 1"));
    assert!(error(5, 0).contains("an index width of 0 bits"));
    // A stride past the tables: a channel's index reads outside them.
    assert!(error(6, 200).contains("of a value table of"));
}
