//! Element types narrower than Kiln computes in: bfloat16, the float8 and float4 formats, the
//! power-of-two scale `float8e8m0`, and 4- and 2-bit integers.
//!
//! Each is carried in a wider container, which holds its values exactly: `f32` for the float
//! formats, `i8` or `u8` for the integers. A model input or output of a narrow type is given and
//! returned in its container (a `float8e4m3fn` input as `f32` values, an `int4` one as `i8`).
//! What makes the type narrow is the conversion into it, lowered here to elementwise graph ops:
//! rounding to the format's precision (to nearest, ties to even), its range (saturating,
//! or to infinity or NaN as the format has them), wrapping for the integers.

use std::fmt;

use super::proto::TensorProto;
use crate::dtype::{DType, Scalar};
use crate::graph::{Graph, GraphError, Lazy};
use crate::ops::BinaryOp;
use crate::tensor::Tensor;

/// A narrow element type (ONNX `DataType` codes 16 to 26).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Narrow {
    Bf16,
    F8E4M3Fn,
    F8E4M3Fnuz,
    F8E5M2,
    F8E5M2Fnuz,
    F8E8M0,
    F4E2M1,
    I4,
    U4,
    I2,
    U2,
}

/// How a conversion to `float8e8m0` rounds a value between two powers of two.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScaleRounding {
    Up,
    Down,
    Nearest,
}

impl ScaleRounding {
    /// The `round_mode` attribute's value.
    pub fn from_name(name: &str) -> Option<ScaleRounding> {
        match name {
            "up" => Some(ScaleRounding::Up),
            "down" => Some(ScaleRounding::Down),
            "nearest" => Some(ScaleRounding::Nearest),
            _ => None,
        }
    }
}

/// A float format with sign, exponent and mantissa bits.
#[derive(Clone, Copy, Debug)]
struct Format {
    exponent_bits: u32,
    mantissa_bits: u32,
    bias: i32,
    /// The largest finite value.
    max: f32,
    specials: Specials,
}

/// The codes a float format sets aside.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Specials {
    /// Infinities and NaNs where the exponent is all ones, as IEEE 754 (bfloat16, `e5m2`).
    Ieee,
    /// NaN where exponent and mantissa are all ones; no infinity (`e4m3fn`).
    NanAllOnes,
    /// NaN at the code of negative zero; no infinity and no negative zero (the `fnuz` formats).
    NanNegZero,
    /// None: every code is a number (`float4e2m1`).
    None,
}

impl Format {
    /// The smallest normal exponent.
    fn emin(self) -> i32 {
        1 - self.bias
    }

    /// The value of `code`.
    fn decode(self, code: u32) -> f32 {
        let (e, m) = (self.exponent_bits, self.mantissa_bits);
        let sign: f32 = if code >> (e + m) & 1 == 1 { -1.0 } else { 1.0 };
        let exp = (code >> m) & ((1 << e) - 1);
        let man = code & ((1 << m) - 1);
        let all_ones = (1 << e) - 1;
        match self.specials {
            Specials::Ieee if exp == all_ones && man == 0 => return sign * f32::INFINITY,
            Specials::Ieee if exp == all_ones => return f32::NAN,
            Specials::NanAllOnes if exp == all_ones && man == (1 << m) - 1 => return f32::NAN,
            Specials::NanNegZero if code == 1 << (e + m) => return f32::NAN,
            _ => {}
        }
        let scale = |p: i32| 2f64.powi(p);
        let magnitude = if exp == 0 {
            f64::from(man) * scale(self.emin() - m as i32)
        } else {
            (1.0 + f64::from(man) / scale(m as i32)) * scale(exp as i32 - self.bias)
        };
        sign * magnitude as f32
    }
}

impl Narrow {
    /// The type with ONNX `DataType` code `code`, if it is a narrow one.
    pub fn from_code(code: i32) -> Option<Narrow> {
        Some(match code {
            16 => Narrow::Bf16,
            17 => Narrow::F8E4M3Fn,
            18 => Narrow::F8E4M3Fnuz,
            19 => Narrow::F8E5M2,
            20 => Narrow::F8E5M2Fnuz,
            21 => Narrow::U4,
            22 => Narrow::I4,
            23 => Narrow::F4E2M1,
            24 => Narrow::F8E8M0,
            25 => Narrow::U2,
            26 => Narrow::I2,
            _ => return None,
        })
    }

    pub fn code(self) -> i32 {
        match self {
            Narrow::Bf16 => 16,
            Narrow::F8E4M3Fn => 17,
            Narrow::F8E4M3Fnuz => 18,
            Narrow::F8E5M2 => 19,
            Narrow::F8E5M2Fnuz => 20,
            Narrow::U4 => 21,
            Narrow::I4 => 22,
            Narrow::F4E2M1 => 23,
            Narrow::F8E8M0 => 24,
            Narrow::U2 => 25,
            Narrow::I2 => 26,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Narrow::Bf16 => "bf16",
            Narrow::F8E4M3Fn => "float8e4m3fn",
            Narrow::F8E4M3Fnuz => "float8e4m3fnuz",
            Narrow::F8E5M2 => "float8e5m2",
            Narrow::F8E5M2Fnuz => "float8e5m2fnuz",
            Narrow::F8E8M0 => "float8e8m0",
            Narrow::F4E2M1 => "float4e2m1",
            Narrow::I4 => "int4",
            Narrow::U4 => "uint4",
            Narrow::I2 => "int2",
            Narrow::U2 => "uint2",
        }
    }

    /// The type Kiln holds its values in.
    pub const fn container(self) -> Scalar {
        match self {
            Narrow::I4 | Narrow::I2 => Scalar::I8,
            Narrow::U4 | Narrow::U2 => Scalar::U8,
            _ => Scalar::F32,
        }
    }

    /// Bits per element as ONNX stores it.
    pub fn bits(self) -> usize {
        match self {
            Narrow::Bf16 => 16,
            Narrow::I4 | Narrow::U4 | Narrow::F4E2M1 => 4,
            Narrow::I2 | Narrow::U2 => 2,
            _ => 8,
        }
    }

    /// Whether this is one of the float8 formats with a `saturate` choice on conversion.
    pub fn is_float8(self) -> bool {
        matches!(
            self,
            Narrow::F8E4M3Fn | Narrow::F8E4M3Fnuz | Narrow::F8E5M2 | Narrow::F8E5M2Fnuz
        )
    }

    /// The range of an integer type.
    pub fn int_range(self) -> Option<(i64, i64)> {
        match self {
            Narrow::I4 => Some((-8, 7)),
            Narrow::U4 => Some((0, 15)),
            Narrow::I2 => Some((-2, 1)),
            Narrow::U2 => Some((0, 3)),
            _ => None,
        }
    }

    fn format(self) -> Option<Format> {
        let f = |exponent_bits, mantissa_bits, bias, max, specials| Format {
            exponent_bits,
            mantissa_bits,
            bias,
            max,
            specials,
        };
        Some(match self {
            Narrow::Bf16 => f(8, 7, 127, f32::from_bits(0x7f7f_0000), Specials::Ieee),
            Narrow::F8E4M3Fn => f(4, 3, 7, 448.0, Specials::NanAllOnes),
            Narrow::F8E4M3Fnuz => f(4, 3, 8, 240.0, Specials::NanNegZero),
            Narrow::F8E5M2 => f(5, 2, 15, 57344.0, Specials::Ieee),
            Narrow::F8E5M2Fnuz => f(5, 2, 16, 57344.0, Specials::NanNegZero),
            Narrow::F4E2M1 => f(2, 1, 1, 6.0, Specials::None),
            _ => return None,
        })
    }

    /// The value of the stored code `code` (the low `bits()` bits).
    fn decode(self, code: u32) -> f64 {
        let sign_extend = |bits: u32| {
            let shift = 32 - bits;
            f64::from(((code << shift) as i32) >> shift)
        };
        match self {
            Narrow::I4 => sign_extend(4),
            Narrow::I2 => sign_extend(2),
            Narrow::U4 | Narrow::U2 => f64::from(code),
            Narrow::F8E8M0 if code == 0xff => f64::NAN,
            Narrow::F8E8M0 => 2f64.powi(code as i32 - 127),
            float => f64::from(float.format().expect("a float format").decode(code)),
        }
    }

    /// Reads a `TensorProto` of this type into a tensor of its container: the codes from
    /// `raw_data` (little-endian, sub-byte types packed low bits first) or from `int32_data`
    /// (one code, or one packed byte, per entry).
    pub(super) fn read_proto(self, t: &TensorProto, dims: Vec<usize>) -> Result<Tensor, String> {
        let count = dims
            .iter()
            .try_fold(1usize, |n, &d| n.checked_mul(d))
            .ok_or_else(|| format!("dims {dims:?} are too large"))?;
        let bits = self.bits();
        let units: Vec<u32> = match &t.raw_data {
            Some(raw) if !raw.is_empty() || count == 0 => match bits {
                16 => raw
                    .chunks_exact(2)
                    .map(|c| u32::from(u16::from_le_bytes([c[0], c[1]])))
                    .collect(),
                _ => raw.iter().map(|&b| u32::from(b)).collect(),
            },
            _ => t.int32_data.iter().map(|&v| v as u32).collect(),
        };
        let per_unit = if bits >= 8 { 1 } else { 8 / bits };
        let have = units.len().saturating_mul(per_unit);
        if have < count || units.len() != count.div_ceil(per_unit) {
            return Err(format!(
                "holds {} stored units of {}, dims {dims:?} need {}",
                units.len(),
                self.name(),
                count.div_ceil(per_unit)
            ));
        }
        let mask = if bits >= 16 {
            0xffff
        } else {
            (1u32 << bits) - 1
        };
        let values = (0..count).map(|i| {
            let unit = units[i / per_unit];
            let shift = (i % per_unit) * bits.min(8);
            self.decode((unit >> shift) & mask)
        });
        let container = self.container();
        let bytes: Vec<u8> = match container {
            Scalar::F32 => values.flat_map(|v| (v as f32).to_le_bytes()).collect(),
            Scalar::I8 => values.map(|v| (v as i8) as u8).collect(),
            _ => values.map(|v| v as u8).collect(),
        };
        Tensor::new(container, dims, bytes).map_err(|e| e.to_string())
    }

    /// `x` converted to this type, as values of its container. Floats round to nearest, ties to
    /// even; with `saturate` a float8 value past the format's range becomes its largest
    /// value, else infinity or NaN as the format has them (`float4e2m1` always saturates,
    /// bfloat16 never does).
    /// Integers wrap, floats first truncating toward zero. `float8e8m0` rounds as `rounding`
    /// says.
    pub fn convert(
        self,
        g: &mut Graph,
        x: &Lazy,
        saturate: bool,
        rounding: ScaleRounding,
    ) -> Result<Lazy, GraphError> {
        if let Some((lo, hi)) = self.int_range() {
            let v = g.cast(x, DType::I32);
            let span = hi - lo + 1;
            let shifted = g.int_scalar(BinaryOp::Add, &v, -lo)?;
            let wrapped = g.int_scalar(BinaryOp::And, &shifted, span - 1)?;
            let v = g.int_scalar(BinaryOp::Add, &wrapped, lo)?;
            return Ok(g.cast(&v, DType::from(self.container())));
        }
        let x = g.cast(x, DType::F32);
        let saturate = (saturate && self.is_float8()) || self == Narrow::F4E2M1;
        match self.format() {
            Some(format) => round_to_format(g, &x, format, saturate),
            None => round_to_scale(g, &x, saturate, rounding),
        }
    }
}

impl fmt::Display for Narrow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Bits of an `f32` as an `i32` constant.
fn bits_of(v: f32) -> i64 {
    i64::from(v.to_bits() as i32)
}

/// `x` (f32) rounded into `format`: on its bits (an `i32`) the mantissa is rounded to nearest
/// even, which carries into the exponent as it should; below the format's smallest normal
/// value the step is fixed, so the value is rounded in units of it. Then the range, the sign,
/// and the codes the format sets aside.
fn round_to_format(
    g: &mut Graph,
    x: &Lazy,
    format: Format,
    saturate: bool,
) -> Result<Lazy, GraphError> {
    let bits = g.bitcast(x, DType::I32);
    let sign = g.int_scalar(BinaryOp::And, &bits, i64::from(i32::MIN))?;
    let mag = g.int_scalar(BinaryOp::And, &bits, 0x7fff_ffff)?;
    let inf = g.int_const(bits_of(f32::INFINITY), DType::I32, x.shape());
    let is_nan = g.lt(&inf, &mag)?;
    let is_inf = g.eq(&mag, &inf)?;

    // NaNs (above infinity's bits) must not overflow the sum below; they are replaced at the end.
    let mag = g.min(&mag, &inf)?;
    let drop = 23 - format.mantissa_bits as i64;
    let lsb = g.int_scalar(BinaryOp::Shr, &mag, drop)?;
    let lsb = g.int_scalar(BinaryOp::And, &lsb, 1)?;
    let biased = g.int_scalar(BinaryOp::Add, &mag, (1 << (drop - 1)) - 1)?;
    let biased = g.binary(BinaryOp::Add, &biased, &lsb)?;
    let kept = g.int_scalar(BinaryOp::Shr, &biased, drop)?;
    let mut rounded = g.int_scalar(BinaryOp::Shl, &kept, drop)?;
    let emin = format.emin();
    if emin > -126 {
        let smallest = 2f32.powi(emin);
        let step = 2f64.powi(emin - format.mantissa_bits as i32);
        let a = g.bitcast(&mag, DType::F32);
        let units = g.mul_scalar(&a, 1.0 / step)?;
        let units = g.round_even(&units)?;
        let small = g.mul_scalar(&units, step)?;
        let small = g.bitcast(&small, DType::I32);
        let limit = g.int_const(bits_of(smallest), DType::I32, x.shape());
        let below = g.lt(&mag, &limit)?;
        rounded = g.where_(&below, &small, &rounded)?;
    }

    let max = g.int_const(bits_of(format.max), DType::I32, x.shape());
    let nan = g.int_const(bits_of(f32::NAN), DType::I32, x.shape());
    let overflow = match (saturate, format.specials) {
        (true, _) => max.clone(),
        (false, Specials::Ieee) => inf.clone(),
        (false, _) => nan.clone(),
    };
    let over = g.lt(&max, &rounded)?;
    let mut out = g.where_(&over, &overflow, &rounded)?;
    out = g.where_(&is_inf, &overflow, &out)?;
    out = g.binary(BinaryOp::Or, &out, &sign)?;
    if format.specials == Specials::NanNegZero {
        let neg_zero = g.int_const(i64::from(i32::MIN), DType::I32, x.shape());
        let is_neg_zero = g.eq(&out, &neg_zero)?;
        let zero = g.int_const(0, DType::I32, x.shape());
        out = g.where_(&is_neg_zero, &zero, &out)?;
    }
    // A NaN has no code in float4e2m1: it takes the code of negative zero, as the ONNX
    // reference's conversion gives it.
    let nan_out = match format.specials {
        Specials::None => g.int_const(i64::from(i32::MIN), DType::I32, x.shape()),
        _ => nan,
    };
    out = g.where_(&is_nan, &nan_out, &out)?;
    Ok(g.bitcast(&out, DType::F32))
}

/// `x` (f32) as a power of two, `float8e8m0`: its exponent, rounded up, down or to nearest by
/// the mantissa; the sign is dropped, zero becomes the smallest power (2^-127), and infinity,
/// NaN and (without `saturate`) a rounding past 2^127 become NaN.
fn round_to_scale(
    g: &mut Graph,
    x: &Lazy,
    saturate: bool,
    rounding: ScaleRounding,
) -> Result<Lazy, GraphError> {
    let bits = g.bitcast(x, DType::I32);
    let exp = g.int_scalar(BinaryOp::Shr, &bits, 23)?;
    let exp = g.int_scalar(BinaryOp::And, &exp, 0xff)?;
    let zero = g.int_const(0, DType::I32, x.shape());
    let one = g.int_const(1, DType::I32, x.shape());
    let nonzero = |g: &mut Graph, mask: i64| -> Result<Lazy, GraphError> {
        let m = g.int_scalar(BinaryOp::And, &bits, mask)?;
        let z = g.eq(&m, &zero)?;
        g.not(&z)
    };
    let up = match rounding {
        ScaleRounding::Down => None,
        ScaleRounding::Up => Some(nonzero(g, 0x7f_ffff)?),
        ScaleRounding::Nearest => {
            let guard = nonzero(g, 0x40_0000)?;
            let round = nonzero(g, 0x20_0000)?;
            let sticky = nonzero(g, 0x1f_ffff)?;
            let odd = g.lt(&zero, &exp)?;
            let tail = g.binary(BinaryOp::Or, &round, &sticky)?;
            let tail = g.binary(BinaryOp::Or, &tail, &odd)?;
            Some(g.binary(BinaryOp::And, &guard, &tail)?)
        }
    };
    let mut code = exp.clone();
    if let Some(mut up) = up {
        if saturate {
            let top = g.int_const(0xfe, DType::I32, x.shape());
            let at_top = g.eq(&exp, &top)?;
            let below_top = g.not(&at_top)?;
            up = g.binary(BinaryOp::And, &up, &below_top)?;
        }
        let inc = g.where_(&up, &one, &zero)?;
        code = g.binary(BinaryOp::Add, &exp, &inc)?;
    }
    let exponent_bits = g.int_scalar(BinaryOp::Shl, &code, 23)?;
    let tiny = g.int_const(0x40_0000, DType::I32, x.shape());
    let is_zero_code = g.eq(&code, &zero)?;
    let value = g.where_(&is_zero_code, &tiny, &exponent_bits)?;
    let nan = g.int_const(bits_of(f32::NAN), DType::I32, x.shape());
    let all_ones = g.int_const(0xff, DType::I32, x.shape());
    let is_nan = g.le(&all_ones, &code)?;
    let value = g.where_(&is_nan, &nan, &value)?;
    Ok(g.bitcast(&value, DType::F32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_decode_to_their_values() {
        assert_eq!(Narrow::F8E4M3Fn.decode(0x7e), 448.0);
        assert!(Narrow::F8E4M3Fn.decode(0x7f).is_nan());
        assert_eq!(Narrow::F8E4M3Fn.decode(0x01), 2f64.powi(-9));
        assert_eq!(Narrow::F8E4M3Fnuz.decode(0x7f), 240.0);
        assert!(Narrow::F8E4M3Fnuz.decode(0x80).is_nan());
        assert_eq!(Narrow::F8E5M2.decode(0x7b), 57344.0);
        assert_eq!(Narrow::F8E5M2.decode(0xfc), f64::NEG_INFINITY);
        assert_eq!(Narrow::F8E5M2Fnuz.decode(0x01), 2f64.powi(-17));
        assert_eq!(Narrow::F4E2M1.decode(0x7), 6.0);
        assert_eq!(Narrow::F4E2M1.decode(0x9), -0.5);
        assert_eq!(Narrow::F8E8M0.decode(127), 1.0);
        assert!(Narrow::F8E8M0.decode(0xff).is_nan());
        assert_eq!(Narrow::Bf16.decode(0x3f80), 1.0);
        assert_eq!(Narrow::I4.decode(0xf), -1.0);
        assert_eq!(Narrow::I2.decode(0x2), -2.0);
        assert_eq!(Narrow::U2.decode(0x3), 3.0);
    }

    /// `values` converted to `to` by the lowered graph, evaluated on the host.
    fn converted(to: Narrow, values: &[f32], saturate: bool) -> Vec<f32> {
        let mut g = Graph::new();
        let x = g.input("x", DType::F32, &[values.len()]);
        let y = to.convert(&mut g, &x, saturate, ScaleRounding::Up).unwrap();
        let y = g.cast(&y, DType::F32);
        let input = Tensor::from_f32(vec![values.len()], values).unwrap();
        let out = crate::graph::eval::evaluate(&g, &[y], &[input]).unwrap();
        out[0].to_f64().iter().map(|&v| v as f32).collect()
    }

    /// Every code of each float format converts to itself, and every midpoint between two
    /// neighbouring values to the one with the even code (the ties of round-to-nearest-even).
    #[test]
    fn float_codes_round_trip_and_ties_go_to_even() {
        for to in [
            Narrow::F8E4M3Fn,
            Narrow::F8E4M3Fnuz,
            Narrow::F8E5M2,
            Narrow::F8E5M2Fnuz,
            Narrow::F4E2M1,
        ] {
            let codes = 1u32 << to.bits();
            let positive: Vec<(u32, f32)> = (0..codes / 2)
                .map(|c| (c, to.decode(c) as f32))
                .filter(|(_, v)| v.is_finite())
                .collect();
            let values: Vec<f32> = positive.iter().map(|&(_, v)| v).collect();
            assert_eq!(converted(to, &values, false), values, "{to}");
            let mids: Vec<f32> = values.windows(2).map(|w| (w[0] + w[1]) / 2.0).collect();
            let even: Vec<f32> = positive
                .windows(2)
                .map(|w| if w[0].0 % 2 == 0 { w[0].1 } else { w[1].1 })
                .collect();
            assert_eq!(converted(to, &mids, false), even, "{to}");
        }
    }

    #[test]
    fn range_and_specials_follow_the_format() {
        let big = [1e6, f32::INFINITY, -1e6, f32::NAN, -0.0];
        let sat = converted(Narrow::F8E4M3Fn, &big, true);
        assert_eq!(sat[..3], [448.0, 448.0, -448.0]);
        assert!(sat[3].is_nan());
        let wide = converted(Narrow::F8E4M3Fn, &big, false);
        assert!(wide[..4].iter().all(|v| v.is_nan()), "{wide:?}");
        assert_eq!(wide[4].to_bits(), (-0.0f32).to_bits());
        let ieee = converted(Narrow::F8E5M2, &big, false);
        assert_eq!(ieee[..3], [f32::INFINITY, f32::INFINITY, f32::NEG_INFINITY]);
        let fnuz = converted(Narrow::F8E4M3Fnuz, &[-0.0, -1e-9], false);
        assert!(fnuz.iter().all(|v| v.to_bits() == 0), "{fnuz:?}");
        // 1 + 2^-8 is a tie between 1 and 1 + 2^-7 (odd); 1 + 3 · 2^-8 one between it and 1 + 2^-6.
        let ties = [1.0 + 2f32.powi(-8), 1.0 + 3.0 * 2f32.powi(-8)];
        let brain = converted(Narrow::Bf16, &[3.4e38, ties[0], ties[1]], true);
        assert_eq!(brain, [f32::INFINITY, 1.0, 1.015625]);
        let scale = converted(Narrow::F8E8M0, &[0.0, 0.124, 1.1, -4.0], true);
        assert_eq!(scale, [2f32.powi(-127), 0.125, 2.0, 4.0]);
        let ints = converted(Narrow::I4, &[-9.0, 8.0, 7.9, -2.5], false);
        assert_eq!(ints, [7.0, -8.0, 7.0, -2.0]);
        assert_eq!(converted(Narrow::U2, &[-3.0, 5.0], false), [1.0, 1.0]);
    }

    #[test]
    fn packed_data_unpacks_low_bits_first() {
        let t = TensorProto {
            data_type: Some(Narrow::I4.code()),
            dims: vec![3],
            raw_data: Some(vec![0x8f, 0x07]),
            ..Default::default()
        };
        let v = Narrow::I4.read_proto(&t, vec![3]).unwrap();
        assert_eq!(v.dtype(), Scalar::I8);
        assert_eq!(v.to_i64(), Some(vec![-1, -8, 7]));
        let short = TensorProto {
            raw_data: Some(vec![0x8f]),
            ..t
        };
        let err = Narrow::I4.read_proto(&short, vec![3]).unwrap_err();
        assert!(err.contains("need 2"), "{err}");
    }
}
