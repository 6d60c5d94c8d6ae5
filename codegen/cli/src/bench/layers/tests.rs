use super::*;
use crate::bench::kiln::{BoardNumbers, KilnNumbers};
use crate::bench::models::{models, Kind};

/// Kiln's kernels of vww_96_int8 for c-dsp, in schedule order, as its report lists them.
const VWW_KERNELS: [&str; 48] = [
    "E_97_97_3",
    "r_6_48_8_3_9_4_2",
    "E_50_50_4_2",
    "r_6_48_8_3_4_2_3",
    "r_1152_8_2_2_4_2",
    "E_49_49_4_4",
    "r_3_24_16_3_4_2_3",
    "r_288_16_4_2_2_4",
    "E_26_26_2_4_4",
    "r_3_24_32_3_4_2_3",
    "r_288_16_8_2_2_4",
    "E_25_25_2_4_4",
    "r_3_6_32_3_4_2_3",
    "r_72_32_8_2_2_4",
    "E_14_14_4_4_4",
    "r_3_6_64_3_4_2_3",
    "r_72_32_16_2_2_4",
    "E_13_13_4_4_4",
    "r_6_64_3_3_2_3",
    "r_18_64_16_2_2_4",
    "E_8_8_8_4_4",
    "r_6_128_3_3_2_3",
    "r_18_64_32_2_2_4",
    "E_8_8_8_4_4",
    "r_6_128_3_3_2_3",
    "r_18_64_32_2_2_4",
    "E_8_8_8_4_4",
    "r_6_128_3_3_2_3",
    "r_18_64_32_2_2_4",
    "E_8_8_8_4_4",
    "r_6_128_3_3_2_3",
    "r_18_64_32_2_2_4",
    "E_8_8_8_4_4",
    "r_6_128_3_3_2_3",
    "r_18_64_32_2_2_4",
    "E_7_7_8_4_4",
    "r_3_64_3_3_2_3",
    "r_9_64_32_2_2_4",
    "E_5_5_16_4_4",
    "r_3_128_3_3_2_3",
    "r_9_64_64_2_2_4",
    "r_32_9_4_2",
    "r_64_2_4",
    "r_2",
    "r_2",
    "E_",
    "E_",
    "E_2",
];

fn op(name: &str) -> Operator {
    Operator {
        name: name.into(),
        output: vec![1, 4],
        macs: None,
    }
}

fn vww_tflite() -> std::path::PathBuf {
    let dir = super::super::models::repo_root().join("tests/models/mlperf-tiny");
    let all = models(&dir);
    let vww = all.iter().find(|m| m.name == MODEL).expect("vww_int8");
    vww.tflite.clone().expect("its .tflite")
}

#[test]
fn reads_vww_s_operators_with_their_shapes_and_macs() {
    let ops = operators(&vww_tflite()).unwrap();
    assert_eq!(ops.len(), 31);
    assert_eq!(ops[0].name, "CONV_2D");
    assert_eq!(ops[0].output, [1, 48, 48, 8]);
    // 48×48×8 outputs, each a 3×3×3 window.
    assert_eq!(ops[0].macs, Some(48 * 48 * 8 * 27));
    assert_eq!(ops[1].name, "DEPTHWISE_CONV_2D");
    assert_eq!(ops[1].macs, Some(48 * 48 * 8 * 9));
    let names: Vec<&str> = ops[27..].iter().map(|o| o.name.as_str()).collect();
    assert_eq!(
        names,
        ["AVERAGE_POOL_2D", "RESHAPE", "FULLY_CONNECTED", "SOFTMAX"]
    );
    assert_eq!((ops[29].macs, ops[27].macs), (Some(2 * 256), None));
}

#[test]
fn each_reducing_operator_takes_its_reduce_kernels_and_those_just_before() {
    let ops = operators(&vww_tflite()).unwrap();
    let spans = assign(&ops, &VWW_KERNELS).unwrap();
    // The first convolution: its padding kernel and its reduce; then a depthwise convolution
    // with its padding, and a pointwise one alone.
    assert_eq!(spans[..3], [0..2, 2..4, 4..5]);
    // The pool, the reshape (fused: nothing), the dense layer, and the softmax with its two
    // reductions and the three elementwise kernels after them.
    assert_eq!(spans[27..], [41..42, 42..42, 42..43, 43..48]);
    // Every kernel once, in order.
    let all: Vec<usize> = spans.iter().flat_map(Clone::clone).collect();
    assert_eq!(all, (0..48).collect::<Vec<_>>());
}

#[test]
fn an_operator_kiln_fuses_has_no_kernel_and_a_mismatch_is_said() {
    // A residual block: the ADD is in the second convolution's kernel.
    let ops = [
        op("CONV_2D"),
        op("CONV_2D"),
        op("ADD"),
        op("FULLY_CONNECTED"),
    ];
    let kernels = ["E_pad", "r_conv", "E_pad", "r_conv_add", "r_fc", "E_out"];
    assert_eq!(assign(&ops, &kernels).unwrap(), [0..2, 2..4, 4..4, 4..6]);
    let err = assign(&ops, &kernels[..4]).unwrap_err();
    assert!(
        err.contains("Kiln's 2 reduce kernels are not the 3"),
        "{err}"
    );
}

fn vww_row<'a>(m: &'a BenchModel, steps: Vec<(String, u64)>, layers: Layers) -> Row<'a> {
    let board = BoardNumbers {
        instructions: 1,
        cycles: Some(steps.iter().map(|s| s.1).sum()),
        flash: 1,
        ram: 1,
        diff: None,
        steps,
        ..BoardNumbers::default()
    };
    let k = KilnNumbers {
        board: Some(board),
        ..KilnNumbers::default()
    };
    Row {
        layers: Some(Ok(layers)),
        ..Row::of_kiln(m, k)
    }
}

#[test]
fn the_table_sets_each_operator_beside_its_kernels_and_totals_both_sides() {
    let mut m = BenchModel::named(MODEL, Kind::Int8);
    m.tflite = Some("models/vww_96_int8.tflite".into());
    let conv = Operator {
        output: vec![1, 48, 48, 8],
        macs: Some(497_664),
        ..op("CONV_2D")
    };
    let layers = Layers {
        ops: vec![conv, op("RESHAPE"), op("SOFTMAX")],
        cycles: vec![1_000_000, 300, 5_000],
    };
    let steps = [
        ("E_97_97_3", 50_000),
        ("r_conv", 550_000),
        ("r_2", 100),
        ("r_2", 900),
    ];
    let steps = steps.iter().map(|&(n, c)| (n.to_string(), c)).collect();
    let r = vww_row(&m, steps, layers);
    let md = markdown(std::slice::from_ref(&r));
    assert!(md.contains("vww_96_int8-perop.elf"), "{md}");
    assert!(md.contains(MAPPING));
    assert!(
        md.contains("| 0 | CONV_2D | 48×48×8 | 497,664 | 1,000,000 | 0–1 `E_97_97_3` `r_conv` | 600,000 | 0.60× |"),
        "{md}"
    );
    assert!(
        md.contains("| 1 | RESHAPE | 4 | — | 300 | — | — | — |"),
        "{md}"
    );
    assert!(md.contains("| 2 | SOFTMAX | 4 | — | 5,000 | 2–3 `r_2` `r_2` | 1,000 | 0.20× |"));
    assert!(md.contains("| | total | | 497,664 | 1,005,300 | 4 kernels | 601,000 | 0.60× |"));
    assert!(md.contains(
        "CONV_2D ×1: 600,000 against 1,000,000 (0.60×); RESHAPE ×1: fused against 300; \
         SOFTMAX"
    ));
    let numbers = tsv(&r);
    assert!(numbers.starts_with("vww_int8\tm4_op_00_cmsis_nn_cycles\t1000000\n"));
    assert!(
        numbers.contains("vww_int8\tm4_op_01_kiln_cycles\t0\n"),
        "{numbers}"
    );
    assert!(numbers.contains("vww_int8\tm4_op_02_kiln_cycles\t1000\n"));
}

#[test]
fn a_failed_peer_run_or_a_mismatch_is_said_instead_of_the_table() {
    let m = BenchModel::named(MODEL, Kind::Int8);
    let layers = Layers {
        ops: vec![op("CONV_2D")],
        cycles: vec![10],
    };
    let mut r = vww_row(&m, vec![("E_1".into(), 1)], layers);
    let md = markdown(std::slice::from_ref(&r));
    assert!(md.contains("Kiln's 0 reduce kernels are not the 1"), "{md}");
    assert!(!md.contains("| # |"), "{md}");
    r.layers = Some(Err("exited with exit status: 1".into()));
    assert!(markdown(std::slice::from_ref(&r)).contains("exited with exit status: 1"));
    assert_eq!(tsv(&r), "");
    r.layers = None;
    assert_eq!(markdown(&[r]), "");
}
