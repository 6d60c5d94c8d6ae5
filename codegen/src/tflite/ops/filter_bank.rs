//! TFLM's filter bank ops for audio front ends (its signal library), each the integer
//! arithmetic of TFLM's `signal/src` kernel, bit for bit:
//!
//! - `SignalFilterBank`: the weighted sums of a power spectrum (`u32`) over overlapping bands,
//!   in `u64`: channel `c` sums band `c + 1` with its weights and band `c` with its unweights.
//!   The band tables are constants; Kiln gathers each channel's bins as one slice of the
//!   spectrum and keeps one row of coefficients per channel in flash.
//! - `SignalFilterBankSquareRoot`: the rounded integer square root of each `u64` channel,
//!   shifted right by `scale_bits`, as `u32` (TFLM's `Sqrt64`, and `Sqrt32` below 2^32).
//! - `SignalFilterBankLog`: `log(x << input_correction_bits)` scaled by `output_scale / 2^16`,
//!   from TFLM's 129-entry table of `log2` corrections, saturated to `i16` (0 for inputs of at
//!   most 1).
//! - `SignalPCAN`: per-channel automatic gain control: the gain from the noise estimate through
//!   a piecewise-quadratic table (`WideDynamicFunction`), then `PcanShrink` of the gained value.

use super::lookup::lookup;
use super::signal::{expect_type, required_int};
use super::{Ctx, OpBuilder};
use crate::dtype::{DType, Scalar};
use crate::graph::tensor::broadcast_to;
use crate::graph::{Graph, Lazy};
use crate::ops::{BinaryOp, ReduceOp};
use crate::tensor::Tensor;
use crate::tflite::error::OpError;

pub(super) const CUSTOM: &[(&str, OpBuilder)] = &[
    ("SignalFilterBank", filter_bank),
    ("SignalFilterBankSquareRoot", square_root),
    ("SignalFilterBankLog", log),
    ("SignalPCAN", pcan),
];

type Out = Result<Vec<Lazy>, OpError>;
type R = Result<Lazy, OpError>;

/// A constant `i16` table of the operator, as integers.
fn table(ctx: &Ctx, i: usize) -> Result<Vec<i64>, OpError> {
    expect_type(ctx, i, Scalar::I16)?;
    ctx.ints(i)
}

/// The coefficients of one channel: its first bin and one weight per bin from there.
struct Row {
    start: usize,
    coeffs: Vec<i64>,
}

/// Channel `c`'s coefficients: band `c + 1`'s weights plus band `c`'s unweights.
fn rows(ctx: &Ctx, bins: usize) -> Result<Vec<Row>, OpError> {
    let channels = required_int(ctx, "num_channels")?;
    let (w, u) = (table(ctx, 1)?, table(ctx, 2)?);
    let (freq, wstart, width) = (table(ctx, 3)?, table(ctx, 4)?, table(ctx, 5)?);
    let bands = usize::try_from(channels + 1)
        .ok()
        .filter(|&b| b >= 2 && b <= freq.len() && b <= wstart.len() && b <= width.len())
        .ok_or_else(|| {
            OpError::Invalid(format!(
                "custom option \"num_channels\" is {channels}: the band tables hold {}, {} and \
                 {} entries, one more than the channels are needed",
                freq.len(),
                wstart.len(),
                width.len()
            ))
        })?;
    let band = |b: usize, coeffs: &[i64]| -> Result<Vec<(usize, i64)>, OpError> {
        let (f, s, n) = (freq[b], wstart[b], width[b]);
        if f < 0 || s < 0 || n < 0 || (f + n) as usize > bins || (s + n) as usize > coeffs.len() {
            return Err(OpError::Invalid(format!(
                "band {b} (start bin {f}, first weight {s}, width {n}) is outside the {bins} \
                 bins or the {} weights",
                coeffs.len()
            )));
        }
        Ok((0..n as usize)
            .map(|j| (f as usize + j, coeffs[s as usize + j]))
            .collect())
    };
    (0..bands - 1)
        .map(|c| {
            let mut terms = band(c + 1, &w)?;
            terms.extend(band(c, &u)?);
            let start = terms.iter().map(|t| t.0).min().unwrap_or(0);
            let end = terms.iter().map(|t| t.0 + 1).max().unwrap_or(0);
            let mut coeffs = vec![0; end.saturating_sub(start)];
            for (bin, k) in terms {
                coeffs[bin - start] += k;
            }
            Ok(Row { start, coeffs })
        })
        .collect()
}

fn filter_bank(ctx: &mut Ctx) -> Out {
    expect_type(ctx, 0, Scalar::U32)?;
    let x = ctx.input(0)?;
    let Some((&bins, lead)) = x.shape().split_last() else {
        return Err(OpError::Invalid("the spectrum is a scalar".into()));
    };
    let lead = lead.to_vec();
    let rows = rows(ctx, bins)?;
    let width = rows
        .iter()
        .map(|r| r.coeffs.len())
        .max()
        .unwrap_or(0)
        .max(1);
    let axis = lead.len();
    // Each channel's bins as one slice of the spectrum, padded with zeros to a common width.
    let mut pad = vec![(0, 0); axis + 1];
    pad[axis] = (0, width);
    let idx: Vec<usize> = rows.iter().flat_map(|r| r.start..r.start + width).collect();
    let coeffs: Vec<i64> = rows
        .iter()
        .flat_map(|r| (0..width).map(|j| r.coeffs.get(j).copied().unwrap_or(0)))
        .collect();
    let name = ctx.out_info(0)?.name.clone();
    let g = &mut *ctx.graph;
    let picked = g.take(&x.pad(&pad)?, axis, &idx)?;
    let mut shape = lead.clone();
    shape.extend([rows.len(), width]);
    let picked = g.cast(&picked.reshape(&shape)?, DType::I64);
    // In flash in the narrowest type that holds them.
    let fits = |lo: i64, hi: i64| coeffs.iter().all(|c| (lo..=hi).contains(c));
    let stored = if fits(i16::MIN.into(), i16::MAX.into()) {
        Scalar::I16
    } else if fits(i32::MIN.into(), i32::MAX.into()) {
        Scalar::I32
    } else {
        Scalar::I64
    };
    let k = Tensor::from_i64(stored, vec![rows.len(), width], &coeffs)
        .expect("one coefficient per element");
    let k = g.weight(&format!("{name}/coefficients"), k);
    let k = g.cast(&broadcast_to(&k, &shape)?, DType::I64);
    let p = g.binary(BinaryOp::Mul, &picked, &k)?;
    let s = g.reduce(ReduceOp::Sum, &p, &[axis + 1])?;
    let mut out = lead;
    out.push(rows.len());
    Ok(vec![g.bitcast(&s, DType::U64).reshape(&out)?])
}

/// A constant of `x`'s shape and type.
fn like(g: &mut Graph, x: &Lazy, v: i64) -> Lazy {
    g.int_const(v, x.dtype, x.shape())
}

/// `a < b` (elementwise).
fn less(g: &mut Graph, a: &Lazy, b: i64) -> R {
    let c = like(g, a, b);
    Ok(g.binary(BinaryOp::CmpLt, a, &c)?)
}

/// TFLM's `Sqrt64` of `u64` values: the integer square root by digits (from 2^62 down), then
/// one up where the remainder exceeds the root, unless the root is already `0xFFFF` (below
/// 2^32, where TFLM takes `Sqrt32`) or `0xFFFFFFFF`.
fn sqrt64(g: &mut Graph, x: &Lazy) -> R {
    let (mut num, mut res) = (x.clone(), like(g, x, 0));
    for k in 0..32 {
        let bit = like(g, x, 1 << (62 - 2 * k));
        let t = g.binary(BinaryOp::Add, &res, &bit)?;
        let below = g.binary(BinaryOp::CmpLt, &num, &t)?;
        let less_t = g.binary(BinaryOp::Sub, &num, &t)?;
        num = g.where_(&below, &num, &less_t)?;
        let half = g.int_scalar(BinaryOp::Shr, &res, 1)?;
        let up = g.binary(BinaryOp::Add, &half, &bit)?;
        res = g.where_(&below, &half, &up)?;
    }
    let small = less(g, x, 1 << 32)?;
    let (c16, c32) = (like(g, x, 0xFFFF), like(g, x, 0xFFFF_FFFF));
    let cap = g.where_(&small, &c16, &c32)?;
    let over = g.binary(BinaryOp::CmpLt, &res, &num)?;
    let capped = g.binary(BinaryOp::CmpNe, &res, &cap)?;
    let round = g.binary(BinaryOp::And, &over, &capped)?;
    let one = g.cast(&round, x.dtype);
    Ok(g.binary(BinaryOp::Add, &res, &one)?)
}

fn square_root(ctx: &mut Ctx) -> Out {
    expect_type(ctx, 0, Scalar::U64)?;
    expect_type(ctx, 1, Scalar::I32)?;
    let (x, shift) = (ctx.input(0)?, ctx.input(1)?);
    if shift.shape().iter().product::<usize>() != 1 {
        return Err(OpError::Invalid(format!(
            "scale_bits {:?} has shape {:?}, not one value",
            ctx.info(1)?.name,
            shift.shape()
        )));
    }
    let g = &mut *ctx.graph;
    let r = sqrt64(g, &x)?;
    let r = g.cast(&r, DType::U32);
    let s = g.bitcast(&shift, DType::U32).reshape(&[])?;
    let s = broadcast_to(&s, r.shape())?;
    Ok(vec![g.binary(BinaryOp::Shr, &r, &s)?])
}

/// The bit length of values below 2^32 held in `i64` (TFLM's `MostSignificantBit32`).
fn bit_length(g: &mut Graph, x: &Lazy) -> R {
    let lz = g.leading_zeros(x)?;
    let lz = g.cast(&lz, DType::I64);
    let w = like(g, &lz, 32);
    Ok(g.binary(BinaryOp::Sub, &w, &lz)?)
}

/// TFLM's `kLogLut`: `log2(1 + i/128) − i/128` in 0.16 fixed point, for `i` in `0..=128`, and
/// a 0 after it.
const LOG_LUT: [i64; 130] = [
    0, 224, 442, 654, 861, 1063, 1259, 1450, 1636, 1817, 1992, 2163, 2329, 2490, 2646, 2797, 2944,
    3087, 3224, 3358, 3487, 3611, 3732, 3848, 3960, 4068, 4172, 4272, 4368, 4460, 4549, 4633, 4714,
    4791, 4864, 4934, 5001, 5063, 5123, 5178, 5231, 5280, 5326, 5368, 5408, 5444, 5477, 5507, 5533,
    5557, 5578, 5595, 5610, 5622, 5631, 5637, 5640, 5641, 5638, 5633, 5626, 5615, 5602, 5586, 5568,
    5547, 5524, 5498, 5470, 5439, 5406, 5370, 5332, 5291, 5249, 5203, 5156, 5106, 5054, 5000, 4944,
    4885, 4825, 4762, 4697, 4630, 4561, 4490, 4416, 4341, 4264, 4184, 4103, 4020, 3935, 3848, 3759,
    3668, 3575, 3481, 3384, 3286, 3186, 3084, 2981, 2875, 2768, 2659, 2549, 2437, 2323, 2207, 2090,
    1971, 1851, 1729, 1605, 1480, 1353, 1224, 1094, 963, 830, 695, 559, 421, 282, 142, 0, 0,
];

/// TFLM's `Log32(x, scale)` of `i64` values in `2 ..= u32::MAX`.
fn log32(g: &mut Graph, name: &str, x: &Lazy, scale: u32) -> R {
    let bits = bit_length(g, x)?;
    let integer = g.int_scalar(BinaryOp::Sub, &bits, 1)?;
    let one = like(g, x, 1);
    let p = g.binary(BinaryOp::Shl, &one, &integer)?;
    let frac = g.binary(BinaryOp::Sub, x, &p)?;
    // To 16 fractional bits: shifted left below 2^16, right from there.
    let sixteen = like(g, x, 16);
    let up = g.binary(BinaryOp::Sub, &sixteen, &integer)?;
    let down = g.binary(BinaryOp::Sub, &integer, &sixteen)?;
    let (up, down) = (g.max_scalar(&up, 0.0)?, g.max_scalar(&down, 0.0)?);
    let left = g.binary(BinaryOp::Shl, &frac, &up)?;
    let frac = g.binary(BinaryOp::Shr, &left, &down)?;
    // The segment's entry and the step to the next, packed as `c0 + (c1 − c0) · 2^16`.
    let packed: Vec<i64> = (0..129)
        .map(|i| LOG_LUT[i] + (LOG_LUT[i + 1] - LOG_LUT[i]) * 65536)
        .collect();
    let seg = g.int_scalar(BinaryOp::Shr, &frac, 9)?;
    let t = Tensor::from_i64(Scalar::I32, vec![packed.len()], &packed).expect("a vector");
    let seg32 = g.cast(&seg, DType::I32);
    let entry = lookup(g, &format!("{name}/log_table"), t, &seg32)?.remove(0);
    let entry = g.cast(&entry, DType::I64);
    let c0 = g.int_scalar(BinaryOp::And, &entry, 0xFFFF)?;
    let step = g.int_scalar(BinaryOp::Shr, &entry, 16)?;
    let base = g.int_scalar(BinaryOp::Mul, &seg, 512)?;
    let into = g.binary(BinaryOp::Sub, &frac, &base)?;
    let rel = g.binary(BinaryOp::Mul, &step, &into)?;
    let rel = g.int_scalar(BinaryOp::Shr, &rel, 16)?;
    let fraction = g.binary(BinaryOp::Add, &frac, &c0)?;
    let fraction = g.binary(BinaryOp::Add, &fraction, &rel)?;
    let whole = g.int_scalar(BinaryOp::Shl, &integer, 16)?;
    let log2 = g.binary(BinaryOp::Add, &whole, &fraction)?;
    let log2 = g.int_scalar(BinaryOp::And, &log2, 0xFFFF_FFFF)?;
    // ln = log2 · ln 2 (45426 / 2^16), rounded; then the output scale, in u32 arithmetic.
    let loge = g.int_scalar(BinaryOp::Mul, &log2, 45426)?;
    let loge = g.int_scalar(BinaryOp::Add, &loge, 32768)?;
    let loge = g.int_scalar(BinaryOp::Shr, &loge, 16)?;
    let loge = g.int_scalar(BinaryOp::And, &loge, 0xFFFF_FFFF)?;
    let scaled = g.int_scalar(BinaryOp::Mul, &loge, i64::from(scale))?;
    let scaled = g.int_scalar(BinaryOp::Add, &scaled, 32768)?;
    let scaled = g.int_scalar(BinaryOp::And, &scaled, 0xFFFF_FFFF)?;
    Ok(g.int_scalar(BinaryOp::Shr, &scaled, 16)?)
}

fn log(ctx: &mut Ctx) -> Out {
    expect_type(ctx, 0, Scalar::U32)?;
    let bits = required_int(ctx, "input_correction_bits")?;
    if !(0..32).contains(&bits) {
        return Err(OpError::Invalid(format!(
            "custom option \"input_correction_bits\" is {bits}, outside 0..=31"
        )));
    }
    // TFLM reads the scale as an int32 and computes with it as a uint32.
    let scale = required_int(ctx, "output_scale")? as i32 as u32;
    let x = ctx.input(0)?;
    let name = ctx.out_info(0)?.name.clone();
    let g = &mut *ctx.graph;
    let x = g.cast(&x, DType::I64);
    let x = g.int_scalar(BinaryOp::Shl, &x, bits)?;
    let x = g.int_scalar(BinaryOp::And, &x, 0xFFFF_FFFF)?;
    let small = less(g, &x, 2)?;
    let two = like(g, &x, 2);
    let safe = g.where_(&small, &two, &x)?;
    let v = log32(g, &name, &safe, scale)?;
    let v = g.clamp_int(&v, 0, i16::MAX.into())?;
    let zero = like(g, &v, 0);
    let v = g.where_(&small, &zero, &v)?;
    Ok(vec![g.cast(&v, DType::I16)])
}

/// `lut[i]` for `i` in `i64`, 0 outside the table.
fn entry(g: &mut Graph, name: &str, lut: &[i64], i: &Lazy) -> R {
    let t = Tensor::from_i64(Scalar::I32, vec![lut.len()], lut).expect("a vector");
    let i = g.cast(i, DType::I32);
    let v = lookup(g, name, t, &i)?.remove(0);
    Ok(g.cast(&v, DType::I32))
}

/// TFLM's `WideDynamicFunction(noise, lut)`: the gain, an `i16` as `i32`.
fn wide_dynamic(g: &mut Graph, name: &str, lut: &[i64], noise: &Lazy) -> R {
    let n = g.cast(noise, DType::I64);
    let interval = bit_length(g, &n)?;
    let base = g.int_scalar(BinaryOp::Mul, &interval, 4)?;
    let base = g.int_scalar(BinaryOp::Sub, &base, 6)?;
    let eleven = like(g, &n, 11);
    let up = g.binary(BinaryOp::Sub, &eleven, &interval)?;
    let down = g.binary(BinaryOp::Sub, &interval, &eleven)?;
    let (up, down) = (g.max_scalar(&up, 0.0)?, g.max_scalar(&down, 0.0)?);
    let frac = g.binary(BinaryOp::Shl, &n, &up)?;
    let frac = g.binary(BinaryOp::Shr, &frac, &down)?;
    let frac = g.int_scalar(BinaryOp::And, &frac, 0x3FF)?;
    let frac = g.cast(&frac, DType::I32);
    let mut l = Vec::with_capacity(3);
    for k in 0..3 {
        let i = g.int_scalar(BinaryOp::Add, &base, k)?;
        l.push(entry(g, &format!("{name}/gain_lut"), lut, &i)?);
    }
    let r = g.binary(BinaryOp::Mul, &l[2], &frac)?;
    let r = g.int_scalar(BinaryOp::Shr, &r, 5)?;
    let l1 = g.int_scalar(BinaryOp::Shl, &l[1], 5)?;
    let r = g.binary(BinaryOp::Add, &r, &l1)?;
    let r = g.binary(BinaryOp::Mul, &r, &frac)?;
    let r = g.int_scalar(BinaryOp::Add, &r, 1 << 14)?;
    let r = g.int_scalar(BinaryOp::Shr, &r, 15)?;
    let r = g.binary(BinaryOp::Add, &r, &l[0])?;
    let r = g.cast(&r, DType::I16);
    let r = g.cast(&r, DType::I32);
    let direct = entry(g, &format!("{name}/gain_lut"), lut, &n)?;
    let small = less(g, &n, 3)?;
    Ok(g.where_(&small, &direct, &r)?)
}

fn pcan(ctx: &mut Ctx) -> Out {
    expect_type(ctx, 0, Scalar::U32)?;
    expect_type(ctx, 1, Scalar::U32)?;
    let lut = table(ctx, 2)?;
    let shift = required_int(ctx, "snr_shift")?;
    if !(0..64).contains(&shift) {
        return Err(OpError::Invalid(format!(
            "custom option \"snr_shift\" is {shift}, outside 0..=63"
        )));
    }
    let (x, noise) = (ctx.input(0)?, ctx.input(1)?);
    if x.shape() != noise.shape() {
        return Err(OpError::Invalid(format!(
            "the noise estimate {:?} has shape {:?}, the input {:?}",
            ctx.info(1)?.name,
            noise.shape(),
            x.shape()
        )));
    }
    let name = ctx.out_info(0)?.name.clone();
    let g = &mut *ctx.graph;
    let gain = wide_dynamic(g, &name, &lut, &noise)?;
    // The i16 gain as a u32 (sign-extended), times the input in u64, shifted, kept as u32.
    let gain = g.bitcast(&gain, DType::U32);
    let gain = g.cast(&gain, DType::U64);
    let x = g.cast(&x, DType::U64);
    let snr = g.binary(BinaryOp::Mul, &x, &gain)?;
    let snr = g.int_scalar(BinaryOp::Shr, &snr, shift)?;
    let snr = g.cast(&snr, DType::U32);
    // PcanShrink: x² / 4 below 2 (12 fractional bits in, 6 out), x − 1 from there.
    let sq = g.binary(BinaryOp::Mul, &snr, &snr)?;
    let sq = g.int_scalar(BinaryOp::Shr, &sq, 20)?;
    let lin = g.int_scalar(BinaryOp::Shr, &snr, 6)?;
    let lin = g.int_scalar(BinaryOp::Sub, &lin, 64)?;
    let small = less(g, &snr, 2 << 12)?;
    Ok(vec![g.where_(&small, &sq, &lin)?])
}
