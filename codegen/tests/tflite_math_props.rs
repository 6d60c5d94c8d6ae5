//! Kiln's int8 math and activation builtins against a naive transcription of TensorFlow Lite
//! Micro's reference kernels (on top of `kiln_test_support::tflm`): every int8 input value for the
//! unary ops, random pairs for the binary ones, random scales and zero points. Each op is built
//! as the TFLite importer builds it and evaluated by the graph's evaluator.

use kiln_test_support::tflm;

use kiln_codegen::dtype::Scalar;
use kiln_codegen::graph::eval::evaluate;
use kiln_codegen::tensor::Tensor;
use kiln_codegen::tflite::schema::{BuiltinOperator, BuiltinOptions, LeakyReluOptions};
use kiln_codegen::tflite::{self, Quant, TfTensor, TfliteModel};
use proptest::prelude::*;
use tflm::{
    multiply_by_quantized_multiplier as mbqm, quantize_multiplier,
    saturating_rounding_doubling_high_mul as srdhm, saturating_rounding_multiply_by_pot,
};

fn i8_tensor(shape: &[usize], v: &[i8]) -> Tensor {
    Tensor::new(
        Scalar::I8,
        shape.to_vec(),
        v.iter().map(|&b| b as u8).collect(),
    )
    .unwrap()
}

fn tensor(name: &str, shape: &[usize], scale: f32, zp: i32, data: Option<Tensor>) -> TfTensor {
    TfTensor {
        name: name.into(),
        dtype: Scalar::I8,
        shape: shape.to_vec(),
        quant: Some(Quant {
            scale: vec![scale],
            zero_point: vec![i64::from(zp)],
            axis: 0,
        }),
        data,
    }
}

/// A one-operator model over `inputs` model inputs (the first tensors), the last tensor its
/// output.
fn model(
    code: BuiltinOperator,
    options: Option<BuiltinOptions>,
    tensors: Vec<TfTensor>,
    inputs: u32,
) -> TfliteModel {
    TfliteModel::single_op(code, options, tensors, inputs as usize)
}

fn run(model: &TfliteModel, xs: Vec<Tensor>) -> Vec<i8> {
    let imported = tflite::import(model).unwrap();
    let out = evaluate(&imported.graph, &imported.outputs, &xs).unwrap();
    out[0].bytes().iter().map(|&b| b as i8).collect()
}

fn all_int8() -> Vec<i8> {
    (-128i32..=127).map(|v| v as i8).collect()
}

/// TFLM's `GetInvSqrtQuantizedMultiplierExp(v, −1)`.
fn inv_sqrt(mut v: i32) -> (i32, i32) {
    if v <= 1 {
        return (i32::MAX, 0);
    }
    let mut shift = 11;
    while v >= 1 << 29 {
        v /= 4;
        shift += 1;
    }
    let pairs = ((v as u32).leading_zeros() as i32 - 1) / 2 - 1;
    shift -= pairs;
    v <<= 2 * pairs;
    let input = v >> 1;
    let half_input = tflm::rounding_divide_by_pot(input, 1);
    let half_three = (1 << 28) + (1 << 27);
    let mut x = 1 << 28;
    for _ in 0..5 {
        let x3 = saturating_rounding_multiply_by_pot(srdhm(srdhm(x, x), x), 6);
        let d = srdhm(half_three, x).wrapping_sub(srdhm(half_input, x3));
        x = saturating_rounding_multiply_by_pot(d, 3);
    }
    x = srdhm(x, 1_518_500_250);
    if shift < 0 {
        x <<= -shift;
        shift = 0;
    }
    (x, -shift)
}

fn rsqrt_ref(v: i8, si: f32, zpi: i32, so: f32, zpo: i32) -> i8 {
    let value = i32::from(v) - zpi;
    if value == 0 {
        return 127;
    }
    let (m, s) = quantize_multiplier(1.0 / f64::from(si.sqrt() * so));
    let (inv, inv_shift) = inv_sqrt(value);
    let data = mbqm(1, inv, inv_shift + 20);
    (mbqm(data, m, s - 20) + zpo).clamp(-128, 127) as i8
}

fn leaky_ref(v: i8, alpha: f32, si: f32, zpi: i32, so: f32, zpo: i32) -> i8 {
    let (ma, sa) = quantize_multiplier(f64::from(si * alpha / so));
    let (mi, s_id) = quantize_multiplier(f64::from(si / so));
    let x = i32::from(v) - zpi;
    let y = if x >= 0 {
        mbqm(x, mi, s_id)
    } else if ma < 0 {
        -mbqm(x, -ma, sa)
    } else {
        mbqm(x, ma, sa)
    };
    (y + zpo).clamp(-128, 127) as i8
}

fn srdhm16(a: i32, b: i32) -> i32 {
    let p = a * b;
    let nudge = if p >= 0 { 1 << 14 } else { 1 - (1 << 14) };
    (p + nudge) / (1 << 15)
}

fn down16(m: i32) -> i32 {
    if m >= i32::MAX - (1 << 15) {
        32767
    } else {
        (m + (1 << 15)) >> 16
    }
}

fn hard_swish_ref(v: i8, si: f32, zpi: i32, so: f32, zpo: i32) -> i8 {
    let hires_scale = (1.0f32 / 128.0) * si;
    let (om, oe) = quantize_multiplier(f64::from(hires_scale / so));
    let (rm, re) = quantize_multiplier(f64::from(hires_scale / (3.0f32 / 32768.0)));
    let sat = |x: i32, k: i32| ((x as i64) << k).clamp(-32768, 32767) as i32;
    let hires = (i32::from(v) - zpi) * 128;
    let pre = srdhm16(hires, down16(om));
    let mut r = hires;
    if re > 0 {
        r = sat(r, re - 1);
    }
    r = srdhm16(r, down16(rm));
    if re > 0 {
        r = sat(r, 1);
    }
    if re < 0 {
        r = tflm::rounding_divide_by_pot(r, -re);
    }
    r = (r + (1 << 15)) >> 1;
    let p = (r * pre) / (1 << 15);
    (tflm::rounding_divide_by_pot(p, -oe) + zpo).clamp(-128, 127) as i8
}

/// Unary int8 op on every input value.
fn unary(code: BuiltinOperator, o: Option<BuiltinOptions>, q: (f32, i32, f32, i32)) -> Vec<i8> {
    let xs = all_int8();
    let m = model(
        code,
        o,
        vec![
            tensor("x", &[256], q.0, q.1, None),
            tensor("y", &[256], q.2, q.3, None),
        ],
        1,
    );
    run(&m, vec![i8_tensor(&[256], &xs)])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn rsqrt_matches(si in 0.002f32..0.5, zpi in -128i32..0, so in 0.002f32..0.5, zpo in -128i32..127) {
        let got = unary(BuiltinOperator::Rsqrt, None, (si, zpi, so, zpo));
        for (i, v) in all_int8().into_iter().enumerate() {
            if i32::from(v) >= zpi {
                prop_assert_eq!(got[i], rsqrt_ref(v, si, zpi, so, zpo), "x = {}", v);
            }
        }
    }

    #[test]
    fn leaky_relu_matches(alpha in -1.0f32..1.0, si in 0.002f32..0.5, zpi in -128i32..127, so in 0.002f32..0.5, zpo in -128i32..127) {
        let o = BuiltinOptions::LeakyReluOptions(Box::new(LeakyReluOptions { alpha }));
        let got = unary(BuiltinOperator::LeakyRelu, Some(o), (si, zpi, so, zpo));
        for (i, v) in all_int8().into_iter().enumerate() {
            prop_assert_eq!(got[i], leaky_ref(v, alpha, si, zpi, so, zpo), "x = {}", v);
        }
    }

    #[test]
    fn hard_swish_matches(si in 0.002f32..0.5, zpi in -128i32..127, r in 0.02f32..1.0, zpo in -128i32..127) {
        // The output scale at least the input's / 128 (TFLM requires it).
        let so = si * r;
        let got = unary(BuiltinOperator::HardSwish, None, (si, zpi, so, zpo));
        for (i, v) in all_int8().into_iter().enumerate() {
            prop_assert_eq!(got[i], hard_swish_ref(v, si, zpi, so, zpo), "x = {}", v);
        }
    }

    #[test]
    fn l2_normalization_matches(xs in prop::collection::vec(any::<i8>(), 24), zp in -128i32..127, si in 0.002f32..0.5) {
        let m = model(
            BuiltinOperator::L2Normalization,
            Some(BuiltinOptions::L2NormOptions(Box::default())),
            vec![tensor("x", &[3, 8], si, zp, None), tensor("y", &[3, 8], 1.0 / 128.0, 0, None)],
            1,
        );
        let got = run(&m, vec![i8_tensor(&[3, 8], &xs)]);
        for row in 0..3 {
            let r = &xs[row * 8..row * 8 + 8];
            let acc: i32 = r.iter().map(|&v| (i32::from(v) - zp).pow(2)).sum();
            let (inv, s) = inv_sqrt(acc);
            for c in 0..8 {
                let want = mbqm(i32::from(r[c]) - zp, inv, s + 7).clamp(-128, 127) as i8;
                prop_assert_eq!(got[row * 8 + c], want, "row {} col {}", row, c);
            }
        }
    }

    #[test]
    fn div_matches(a in prop::collection::vec(any::<i8>(), 64), b in prop::collection::vec(any::<i8>(), 64),
                   s1 in 0.01f32..0.5, z1 in -128i32..127, s2 in 0.01f32..0.5, z2 in -128i32..127,
                   so in 0.01f32..0.5, zo in -128i32..127) {
        let m = model(
            BuiltinOperator::Div,
            Some(BuiltinOptions::DivOptions(Box::default())),
            vec![tensor("a", &[64], s1, z1, None), tensor("b", &[64], s2, z2, None), tensor("y", &[64], so, zo, None)],
            2,
        );
        let got = run(&m, vec![i8_tensor(&[64], &a), i8_tensor(&[64], &b)]);
        let (om, os) = quantize_multiplier(f64::from(s1 / (s2 * so)));
        for i in 0..64 {
            let (mut x, mut y) = (i32::from(a[i]) - z1, i32::from(b[i]) - z2);
            if y == 0 {
                continue;
            }
            if y < 0 {
                x = -x;
                y = -y;
            }
            let (inv, recip_shift) = tflm::get_reciprocal(y, 31);
            let headroom = if x == 0 { 31 } else { (x ^ (x >> 31)).leading_zeros() as i32 - 1 };
            let q = srdhm(x.wrapping_mul(1i32.wrapping_shl(headroom as u32)), inv);
            let total = os - recip_shift - headroom;
            if -total > 31 {
                continue;
            }
            let want = (tflm::multiply_by_quantized_multiplier_smaller_than_one_exp(q, om, total) + zo)
                .clamp(-128, 127) as i8;
            prop_assert_eq!(got[i], want, "{} / {}", a[i], b[i]);
        }
    }
}
