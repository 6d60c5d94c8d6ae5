//! More tensor-level ops for importers: comparisons, rounding, `erf`, `pow`, concatenation and
//! the reductions the graph lacks (min, product), all built from the graph's primitives.

use super::tensor::{broadcast_shape, broadcast_to};
use super::{GOp, Graph, GraphError, Lazy};
use crate::dtype::{DType, Scalar};
use crate::ops::{AluOp, BinaryOp, ConstValue, ReduceOp, UnaryOp};
use crate::tensor::Tensor;

/// Abramowitz & Stegun 7.1.26: `erf(x) ≈ 1 - t·P(t)·exp(-x²)`, `t = 1 / (1 + p·x)`, x ≥ 0;
/// absolute error below 1.5e-7.
const ERF_P: f64 = 0.327_591_1;
const ERF_A: [f64; 5] = [
    0.254_829_592,
    -0.284_496_736,
    1.421_413_741,
    -1.453_152_027,
    1.061_405_429,
];

impl Graph {
    /// The exact constant `v` (of `dtype`) broadcast to `shape`.
    pub fn const_exact(&mut self, v: ConstValue, dtype: DType, shape: &[usize]) -> Lazy {
        let base = self.push(GOp::Const(v), dtype, vec![], vec![]);
        let ones = vec![1; shape.len()];
        let st = base
            .st
            .reshape(&ones)
            .and_then(|s| s.expand(shape))
            .expect("a scalar broadcasts to any shape");
        Lazy { st, ..base }
    }

    /// `0, 1, …, n - 1` as a weight of `dtype`.
    pub fn arange(&mut self, n: usize, dtype: DType) -> Lazy {
        let values: Vec<f64> = (0..n).map(|i| i as f64).collect();
        self.weight(
            &format!("arange_{n}"),
            Tensor::vector(dtype.scalar, &values),
        )
    }

    /// `a == b` with broadcasting (bool).
    pub fn eq(&mut self, a: &Lazy, b: &Lazy) -> Result<Lazy, GraphError> {
        let ne = self.binary(BinaryOp::CmpNe, a, b)?;
        self.not(&ne)
    }

    /// `a < b` with broadcasting (bool).
    pub fn lt(&mut self, a: &Lazy, b: &Lazy) -> Result<Lazy, GraphError> {
        self.binary(BinaryOp::CmpLt, a, b)
    }

    /// `a <= b` with broadcasting (bool).
    pub fn le(&mut self, a: &Lazy, b: &Lazy) -> Result<Lazy, GraphError> {
        let gt = self.binary(BinaryOp::CmpLt, b, a)?;
        self.not(&gt)
    }

    /// Logical not of a bool tensor (any other type is first compared with zero).
    pub fn not(&mut self, x: &Lazy) -> Result<Lazy, GraphError> {
        let x = self.to_bool(x)?;
        let t = self.const_exact(ConstValue::Int(1), DType::BOOL, x.shape());
        self.alu(AluOp::Binary(BinaryOp::CmpNe), &[x, t])
    }

    /// `x != 0` as bool; bools pass through.
    pub fn to_bool(&mut self, x: &Lazy) -> Result<Lazy, GraphError> {
        if x.dtype == DType::BOOL {
            return Ok(x.clone());
        }
        let z = self.constant(0.0, x.dtype, x.shape());
        self.alu(AluOp::Binary(BinaryOp::CmpNe), &[x.clone(), z])
    }

    pub fn abs(&mut self, x: &Lazy) -> Result<Lazy, GraphError> {
        let n = self.neg(x)?;
        self.binary(BinaryOp::Max, x, &n)
    }

    /// -1, 0 or 1 by the sign of `x`.
    pub fn sign(&mut self, x: &Lazy) -> Result<Lazy, GraphError> {
        let zero = self.scalar_like(x, 0.0);
        let pos = self.lt(&zero, x)?;
        let neg = self.lt(x, &zero)?;
        let one = self.scalar_like(x, 1.0);
        let minus = self.scalar_like(x, -1.0);
        let s = self.where_(&neg, &minus, &zero)?;
        self.where_(&pos, &one, &s)
    }

    /// The largest magnitude below which a float of `x`'s type may have a fraction.
    fn exact_int_limit(x: &Lazy) -> f64 {
        match x.dtype.scalar {
            Scalar::F16 => 1024.0,
            Scalar::F64 => 4_503_599_627_370_496.0,
            _ => 8_388_608.0,
        }
    }

    /// Rounds toward zero (floats only; ints pass through).
    pub fn trunc(&mut self, x: &Lazy) -> Result<Lazy, GraphError> {
        if !x.dtype.scalar.is_float() {
            return Ok(x.clone());
        }
        let i = self.cast(x, DType::I64);
        let t = self.cast(&i, x.dtype);
        let a = self.abs(x)?;
        let lim = self.scalar_like(x, Self::exact_int_limit(x));
        let small = self.lt(&a, &lim)?;
        self.where_(&small, &t, x)
    }

    pub fn floor(&mut self, x: &Lazy) -> Result<Lazy, GraphError> {
        if !x.dtype.scalar.is_float() {
            return Ok(x.clone());
        }
        let t = self.trunc(x)?;
        let above = self.lt(x, &t)?;
        let one = self.scalar_like(x, 1.0);
        let t1 = self.binary(BinaryOp::Sub, &t, &one)?;
        self.where_(&above, &t1, &t)
    }

    pub fn ceil(&mut self, x: &Lazy) -> Result<Lazy, GraphError> {
        let n = self.neg(x)?;
        let f = self.floor(&n)?;
        self.neg(&f)
    }

    /// Rounds to the nearest integer, ties to even.
    pub fn round_even(&mut self, x: &Lazy) -> Result<Lazy, GraphError> {
        if !x.dtype.scalar.is_float() {
            return Ok(x.clone());
        }
        let h = self.add_scalar(x, 0.5)?;
        let r = self.floor(&h)?;
        let tie = self.eq(&h, &r)?;
        let half = self.mul_scalar(&r, 0.5)?;
        let fh = self.floor(&half)?;
        let even = self.eq(&half, &fh)?;
        let one = self.scalar_like(x, 1.0);
        let down = self.binary(BinaryOp::Sub, &r, &one)?;
        let odd_tie = self.where_(&even, &r, &down)?;
        self.where_(&tie, &odd_tie, &r)
    }

    /// The error function (A&S 7.1.26 on |x|, made odd).
    pub fn erf(&mut self, x: &Lazy) -> Result<Lazy, GraphError> {
        let a = self.abs(x)?;
        let pa = self.mul_scalar(&a, ERF_P)?;
        let d = self.add_scalar(&pa, 1.0)?;
        let t = self.unary(UnaryOp::Recip, &d)?;
        let mut poly = self.scalar_like(x, ERF_A[4]);
        for &c in ERF_A[..4].iter().rev() {
            let m = self.binary(BinaryOp::Mul, &poly, &t)?;
            poly = self.add_scalar(&m, c)?;
        }
        let poly = self.binary(BinaryOp::Mul, &poly, &t)?;
        let sq = self.binary(BinaryOp::Mul, &a, &a)?;
        let nsq = self.neg(&sq)?;
        let e = self.exp(&nsq)?;
        let pe = self.binary(BinaryOp::Mul, &poly, &e)?;
        let npe = self.neg(&pe)?;
        let y = self.add_scalar(&npe, 1.0)?;
        let zero = self.scalar_like(x, 0.0);
        let neg = self.lt(x, &zero)?;
        let ny = self.neg(&y)?;
        self.where_(&neg, &ny, &y)
    }

    /// `x ** y` with broadcasting: `exp2(y·log2|x|)`, negated for a negative base and an odd
    /// integer exponent; `x ** 0 = 1`.
    pub fn pow(&mut self, x: &Lazy, y: &Lazy) -> Result<Lazy, GraphError> {
        let shape = broadcast_shape("pow", x.shape(), y.shape())?;
        let (x, y) = (broadcast_to(x, &shape)?, broadcast_to(y, &shape)?);
        let a = self.abs(&x)?;
        let l = self.unary(UnaryOp::Log2, &a)?;
        let yl = self.binary(BinaryOp::Mul, &y, &l)?;
        let mag = self.unary(UnaryOp::Exp2, &yl)?;
        let half = self.mul_scalar(&y, 0.5)?;
        let fh = self.floor(&half)?;
        let odd_frac = self.binary(BinaryOp::Sub, &half, &fh)?;
        let quarter = self.scalar_like(&y, 0.5);
        let odd = self.eq(&odd_frac, &quarter)?;
        let zero = self.scalar_like(&x, 0.0);
        let neg = self.lt(&x, &zero)?;
        let flip = self.binary(BinaryOp::And, &neg, &odd)?;
        let nmag = self.neg(&mag)?;
        let signed = self.where_(&flip, &nmag, &mag)?;
        let fy = self.floor(&y)?;
        let int = self.eq(&fy, &y)?;
        let frac = self.not(&int)?;
        let bad = self.binary(BinaryOp::And, &neg, &frac)?;
        let nan = self.scalar_like(&x, f64::NAN);
        let signed = self.where_(&bad, &nan, &signed)?;
        let yzero = self.scalar_like(&y, 0.0);
        let y0 = self.eq(&y, &yzero)?;
        let one = self.scalar_like(&x, 1.0);
        self.where_(&y0, &one, &signed)
    }

    /// `x ** y` for an integer `x` and an exponent `y` known only at run time (a float one
    /// truncated): square and multiply over the exponent's bits, in `x`'s type (wrapping as its
    /// products do). An integer exponent past 2^30 keeps its parity, a float one counts as
    /// ±2^30 (only bases 0, 1 and −1 do not overflow there). A negative exponent gives
    /// `1 / x ** n`: 0, except for bases 1 and −1.
    pub fn int_pow(&mut self, x: &Lazy, y: &Lazy) -> Result<Lazy, GraphError> {
        const BITS: i64 = 31;
        let shape = broadcast_shape("pow", x.shape(), y.shape())?;
        let (x, y) = (broadcast_to(x, &shape)?, broadcast_to(y, &shape)?);
        // In i32, which every target computes natively: a float exponent is first clamped
        // (past 2^30 a float is even), a wider integer one wraps (keeping its parity).
        let y = match y.dtype.is_float() {
            true => {
                let limit = (1u64 << (BITS - 1)) as f64;
                self.clip(&y, Some(-limit), Some(limit))?
            }
            false => y,
        };
        let e = self.cast(&y, DType::I32);
        let zero = self.int_const(0, DType::I32, &shape);
        let negative = self.lt(&e, &zero)?;
        let minus = self.neg(&e)?;
        let e = self.where_(&negative, &minus, &e)?;
        let odd = self.int_scalar(BinaryOp::And, &e, 1)?;
        let top = self.int_const(1 << (BITS - 1), DType::I32, &shape);
        let past = self.lt(&top, &e)?;
        let kept = self.binary(BinaryOp::Add, &top, &odd)?;
        let e = self.where_(&past, &kept, &e)?;
        let mut result = self.int_const(1, x.dtype, &shape);
        let mut base = x.clone();
        for k in 0..BITS {
            let bit = self.int_scalar(BinaryOp::Shr, &e, k)?;
            let bit = self.int_scalar(BinaryOp::And, &bit, 1)?;
            let set = self.binary(BinaryOp::CmpNe, &bit, &zero)?;
            let times = self.binary(BinaryOp::Mul, &result, &base)?;
            result = self.where_(&set, &times, &result)?;
            if k + 1 < BITS {
                base = self.binary(BinaryOp::Mul, &base, &base)?;
            }
        }
        // x ** -n: 1 for x = 1, ±1 by parity for x = −1, else 0 (the integer part of 1/x^n).
        let one = self.int_const(1, x.dtype, &shape);
        let is_one = self.eq(&x, &one)?;
        let minus_one = self.int_const(-1, x.dtype, &shape);
        let is_minus_one = self.eq(&x, &minus_one)?;
        let odd = self.binary(BinaryOp::CmpNe, &odd, &zero)?;
        let parity = self.where_(&odd, &minus_one, &one)?;
        let zero_x = self.int_const(0, x.dtype, &shape);
        let inverse = self.where_(&is_minus_one, &parity, &zero_x)?;
        let inverse = self.where_(&is_one, &one, &inverse)?;
        self.where_(&negative, &inverse, &result)
    }

    /// Concatenates `parts` along `axis`: each is padded to the full size and the padded
    /// parts are summed (or or-ed, for bools).
    pub fn concat(&mut self, parts: &[Lazy], axis: usize) -> Result<Lazy, GraphError> {
        let first = parts.first().ok_or(GraphError::Invalid {
            op: "concat",
            reason: "no inputs".into(),
        })?;
        let rank = first.shape().len();
        if axis >= rank {
            let axis = axis as i64;
            return Err(GraphError::Axis {
                op: "concat",
                axis,
                rank,
            });
        }
        for p in parts {
            let same = p.shape().len() == rank
                && (0..rank).all(|a| a == axis || p.shape()[a] == first.shape()[a]);
            if !same || p.dtype != first.dtype {
                let (a, b) = (first.shape().to_vec(), p.shape().to_vec());
                return Err(GraphError::Broadcast { op: "concat", a, b });
            }
        }
        let parts: Vec<&Lazy> = parts.iter().filter(|p| p.shape()[axis] > 0).collect();
        let total: usize = parts.iter().map(|p| p.shape()[axis]).sum();
        if parts.len() == 1 {
            return Ok(parts[0].clone());
        }
        let op = if first.dtype == DType::BOOL {
            BinaryOp::Or
        } else {
            BinaryOp::Add
        };
        let mut acc: Option<Lazy> = None;
        let mut offset = 0;
        for p in parts {
            let n = p.shape()[axis];
            let mut arg = vec![(0, 0); rank];
            arg[axis] = (offset, total - offset - n);
            offset += n;
            let padded = p.pad(&arg)?;
            acc = Some(match acc {
                None => padded,
                Some(a) => self.alu(AluOp::Binary(op), &[a, padded])?,
            });
        }
        Ok(acc.unwrap_or_else(|| first.clone()))
    }

    /// Minimum over `axes` (kept as size 1): the maximum of an order-reversed copy: `not` for
    /// bools, `MAX - x` for unsigned integers of up to 32 bits, `-1 - x` for signed integers
    /// (`-x` would wrap at the type's minimum), `-x` for floats.
    pub fn reduce_min(&mut self, x: &Lazy, axes: &[usize]) -> Result<Lazy, GraphError> {
        use crate::dtype::Scalar;
        if x.dtype.scalar == Scalar::Bool {
            let n = self.not(x)?;
            let m = self.reduce(ReduceOp::Max, &n, axes)?;
            return self.not(&m);
        }
        let top = match x.dtype.scalar {
            Scalar::U8 => Some(f64::from(u8::MAX)),
            Scalar::U16 => Some(f64::from(u16::MAX)),
            Scalar::U32 => Some(f64::from(u32::MAX)),
            s if s.is_int() && !matches!(s, Scalar::U64) => Some(-1.0),
            _ => None,
        };
        if let Some(top) = top {
            let c = self.scalar_like(x, top);
            let n = self.binary(BinaryOp::Sub, &c, x)?;
            let m = self.reduce(ReduceOp::Max, &n, axes)?;
            let c = self.scalar_like(&m, top);
            return self.binary(BinaryOp::Sub, &c, &m);
        }
        let n = self.neg(x)?;
        let m = self.reduce(ReduceOp::Max, &n, axes)?;
        self.neg(&m)
    }

    /// Product over `axes` (kept as size 1), by multiplying halves (exact for ints).
    pub fn reduce_prod(&mut self, x: &Lazy, axes: &[usize]) -> Result<Lazy, GraphError> {
        let mut y = x.clone();
        for &ax in axes {
            let rank = y.shape().len();
            if ax >= rank {
                let axis = ax as i64;
                return Err(GraphError::Axis {
                    op: "reduce_prod",
                    axis,
                    rank,
                });
            }
            if y.shape()[ax] == 0 {
                let mut shape = y.shape().to_vec();
                shape[ax] = 1;
                y = self.constant(1.0, y.dtype, &shape);
                continue;
            }
            while y.shape()[ax] > 1 {
                if y.shape()[ax] % 2 == 1 {
                    let mut arg = vec![(0, 0); rank];
                    arg[ax] = (0, 1);
                    y = self.pad_value(&y, &arg, 1.0)?;
                }
                let half = y.shape()[ax] / 2;
                let mut lo: Vec<(usize, usize)> = y.shape().iter().map(|&d| (0, d)).collect();
                let mut hi = lo.clone();
                lo[ax] = (0, half);
                hi[ax] = (half, 2 * half);
                y = self.binary(BinaryOp::Mul, &y.shrink(&lo)?, &y.shrink(&hi)?)?;
            }
        }
        Ok(y)
    }
}
