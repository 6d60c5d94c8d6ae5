//! The primitive operations shared by the kernel AST and the UOp graph, and their exact
//! scalar semantics (used for constant folding and by the UOp interpreter).

use crate::dtype::{DType, Scalar};
use std::fmt;

/// Unary ALU operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum UnaryOp {
    Exp2,
    Log2,
    Sin,
    Sqrt,
    Neg,
    Recip,
}

/// Binary ALU operations. `Div` is true division for floats and truncating division for ints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    Max,
    Mod,
    CmpLt,
    CmpNe,
    Xor,
    And,
    Or,
    Shl,
    Shr,
}

/// Ternary ALU operations. `Where(c, a, b)`; `MulAcc(a, b, c) = a * b + c`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TernaryOp {
    Where,
    MulAcc,
}

/// Reductions over axes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ReduceOp {
    Sum,
    Max,
}

impl ReduceOp {
    /// The binary op that folds one more value into the accumulator.
    pub fn binary(self) -> BinaryOp {
        match self {
            ReduceOp::Sum => BinaryOp::Add,
            ReduceOp::Max => BinaryOp::Max,
        }
    }

    /// The accumulator's starting value for `dtype`.
    pub fn identity(self, dtype: DType) -> ConstValue {
        match self {
            ReduceOp::Sum => ConstValue::zero(dtype),
            ReduceOp::Max => ConstValue::from_f64(dtype, dtype.scalar.min_value()),
        }
    }
}

/// Any ALU operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AluOp {
    Unary(UnaryOp),
    Binary(BinaryOp),
    Ternary(TernaryOp),
}

impl AluOp {
    pub fn arity(self) -> usize {
        match self {
            AluOp::Unary(_) => 1,
            AluOp::Binary(_) => 2,
            AluOp::Ternary(_) => 3,
        }
    }

    /// Comparisons produce `bool` whatever their operands are.
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            AluOp::Binary(BinaryOp::CmpLt) | AluOp::Binary(BinaryOp::CmpNe)
        )
    }
}

impl fmt::Display for AluOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AluOp::Unary(o) => write!(f, "{o:?}"),
            AluOp::Binary(o) => write!(f, "{o:?}"),
            AluOp::Ternary(o) => write!(f, "{o:?}"),
        }
    }
}

/// A constant of some dtype: ints and bools as `i64` (bit pattern for `u64`), floats as the
/// bits of an `f64` so that constants can be hashed and compared exactly.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ConstValue {
    Int(i64),
    Float(u64),
}

impl ConstValue {
    pub fn zero(dtype: DType) -> Self {
        Self::from_f64(dtype, 0.0)
    }

    /// Converts `v` to `dtype` with C cast semantics (truncation, wrapping to the width).
    pub fn from_f64(dtype: DType, v: f64) -> Self {
        let s = dtype.scalar;
        if s.is_float() {
            ConstValue::Float(round_float(s, v).to_bits())
        } else if s == Scalar::Bool {
            ConstValue::Int((v != 0.0) as i64)
        } else if v.is_nan() {
            ConstValue::Int(0)
        } else if s == Scalar::U64 && v >= i64::MAX as f64 {
            ConstValue::Int((v as u64) as i64)
        } else {
            ConstValue::Int(wrap_int(s, v as i64))
        }
    }

    pub fn from_i64(dtype: DType, v: i64) -> Self {
        let s = dtype.scalar;
        if s.is_float() {
            ConstValue::Float(round_float(s, v as f64).to_bits())
        } else if s == Scalar::Bool {
            ConstValue::Int((v != 0) as i64)
        } else {
            ConstValue::Int(wrap_int(s, v))
        }
    }

    pub fn as_f64(self) -> f64 {
        match self {
            ConstValue::Int(i) => i as f64,
            ConstValue::Float(b) => f64::from_bits(b),
        }
    }

    pub fn as_i64(self) -> i64 {
        match self {
            ConstValue::Int(i) => i,
            ConstValue::Float(b) => f64::from_bits(b) as i64,
        }
    }

    /// Whether the value is zero (or false).
    pub fn is_zero(self) -> bool {
        self.as_f64() == 0.0
    }

    /// `self`, held as another element type's value, read as `dtype` (as a load reads a
    /// buffer's element).
    pub fn read_as(self, dtype: DType) -> Self {
        match self {
            ConstValue::Int(i) => Self::from_i64(dtype, i),
            ConstValue::Float(_) => Self::from_f64(dtype, self.as_f64()),
        }
    }

    /// The value whose bits in `to` are `self`'s bits in `from` (a bitcast).
    pub fn bitcast(self, from: DType, to: DType) -> Self {
        let bits = match from.scalar {
            Scalar::F32 => (self.as_f64() as f32).to_bits() as u64,
            Scalar::F64 => self.as_f64().to_bits(),
            _ => self.as_i64() as u64,
        };
        match to.scalar {
            Scalar::F32 => Self::from_f64(to, f32::from_bits(bits as u32) as f64),
            Scalar::F64 => ConstValue::Float(bits),
            _ => Self::from_i64(to, bits as i64),
        }
    }

    /// Reinterprets `self` (of type `dtype`) in `to`, with C cast semantics.
    pub fn cast(self, from: DType, to: DType) -> Self {
        match self {
            ConstValue::Float(_) => Self::from_f64(to, self.as_f64()),
            ConstValue::Int(i) if from.scalar == Scalar::U64 && i < 0 => {
                Self::from_f64(to, (i as u64) as f64)
            }
            ConstValue::Int(i) => Self::from_i64(to, i),
        }
    }
}

/// Rounds `v` to the precision of the float scalar `s`.
pub fn round_float(s: Scalar, v: f64) -> f64 {
    match s {
        Scalar::F32 => v as f32 as f64,
        Scalar::F16 => f16_round(v),
        _ => v,
    }
}

fn f16_round(v: f64) -> f64 {
    if !v.is_finite() || v == 0.0 {
        return v;
    }
    let a = v.abs();
    if a >= 65520.0 {
        return f64::INFINITY.copysign(v);
    }
    // Spacing of representable halves near `a` (subnormals below 2^-14).
    let exp = a.log2().floor().max(-14.0);
    let quantum = 2f64.powf(exp - 10.0);
    let q = a / quantum;
    let r = q.round();
    let r = if (q - q.floor() - 0.5).abs() < f64::EPSILON && r % 2.0 != 0.0 {
        r - 1.0
    } else {
        r
    };
    (r * quantum).copysign(v)
}

/// Wraps `v` to the width and signedness of the integer scalar `s`.
pub fn wrap_int(s: Scalar, v: i64) -> i64 {
    match s {
        Scalar::I8 => v as i8 as i64,
        Scalar::U8 => v as u8 as i64,
        Scalar::I16 => v as i16 as i64,
        Scalar::U16 => v as u16 as i64,
        Scalar::I32 => v as i32 as i64,
        Scalar::U32 => v as u32 as i64,
        Scalar::Bool => (v != 0) as i64,
        _ => v,
    }
}

/// Evaluates an ALU op on constants of `dtype` (the operand type; for `Where` the type of the
/// two values). Returns `None` when the result is undefined (integer division by zero).
pub fn eval_alu(op: AluOp, dtype: DType, args: &[ConstValue]) -> Option<ConstValue> {
    let s = dtype.scalar;
    if s.is_float() {
        let a: Vec<f64> = args.iter().map(|v| v.as_f64()).collect();
        eval_float(op, dtype, &a)
    } else {
        eval_int(op, dtype, args)
    }
}

fn eval_float(op: AluOp, dtype: DType, a: &[f64]) -> Option<ConstValue> {
    let r = |v: f64| Some(ConstValue::from_f64(dtype, v));
    let b = |v: bool| Some(ConstValue::Int(v as i64));
    match op {
        AluOp::Unary(u) => r(match u {
            UnaryOp::Exp2 => a[0].exp2(),
            UnaryOp::Log2 => a[0].log2(),
            UnaryOp::Sin => a[0].sin(),
            UnaryOp::Sqrt => a[0].sqrt(),
            UnaryOp::Neg => -a[0],
            UnaryOp::Recip => 1.0 / a[0],
        }),
        AluOp::Binary(o) => match o {
            BinaryOp::Add => r(a[0] + a[1]),
            BinaryOp::Sub => r(a[0] - a[1]),
            BinaryOp::Mul => r(a[0] * a[1]),
            BinaryOp::Div => r(a[0] / a[1]),
            BinaryOp::Max => r(c_fmax(a[0], a[1])),
            BinaryOp::Mod => r(a[0] % a[1]),
            BinaryOp::CmpLt => b(a[0] < a[1]),
            BinaryOp::CmpNe => b(a[0] != a[1]),
            _ => None,
        },
        AluOp::Ternary(TernaryOp::Where) => r(if a[0] != 0.0 { a[1] } else { a[2] }),
        AluOp::Ternary(TernaryOp::MulAcc) => r(a[0] * a[1] + a[2]),
    }
}

/// `max` as the renderers emit it: `(a < b) ? b : a`.
pub fn c_fmax(a: f64, b: f64) -> f64 {
    if a < b {
        b
    } else {
        a
    }
}

fn eval_int(op: AluOp, dtype: DType, args: &[ConstValue]) -> Option<ConstValue> {
    let s = dtype.scalar;
    let a: Vec<i64> = args.iter().map(|v| v.as_i64()).collect();
    let unsigned = s.is_unsigned();
    let r = |v: i64| Some(ConstValue::from_i64(dtype, v));
    let b = |v: bool| Some(ConstValue::Int(v as i64));
    let lt = |x: i64, y: i64| {
        if unsigned {
            (x as u64) < (y as u64)
        } else {
            x < y
        }
    };
    match op {
        AluOp::Unary(UnaryOp::Neg) => r(a[0].wrapping_neg()),
        AluOp::Unary(_) => None,
        AluOp::Binary(o) => match o {
            BinaryOp::Add => r(a[0].wrapping_add(a[1])),
            BinaryOp::Sub => r(a[0].wrapping_sub(a[1])),
            BinaryOp::Mul => r(a[0].wrapping_mul(a[1])),
            BinaryOp::Div if a[1] == 0 => None,
            BinaryOp::Div if unsigned => r(((a[0] as u64) / (a[1] as u64)) as i64),
            BinaryOp::Div => r(a[0].wrapping_div(a[1])),
            BinaryOp::Mod if a[1] == 0 => None,
            BinaryOp::Mod if unsigned => r(((a[0] as u64) % (a[1] as u64)) as i64),
            BinaryOp::Mod => r(a[0].wrapping_rem(a[1])),
            BinaryOp::Max => r(if lt(a[0], a[1]) { a[1] } else { a[0] }),
            BinaryOp::CmpLt => b(lt(a[0], a[1])),
            BinaryOp::CmpNe => b(a[0] != a[1]),
            BinaryOp::Xor => r(a[0] ^ a[1]),
            BinaryOp::And => r(a[0] & a[1]),
            BinaryOp::Or => r(a[0] | a[1]),
            BinaryOp::Shl => r(a[0].wrapping_shl(a[1] as u32)),
            BinaryOp::Shr if unsigned => r(((a[0] as u64) >> (a[1] as u32 & 63)) as i64),
            BinaryOp::Shr => r(a[0].wrapping_shr(a[1] as u32)),
        },
        AluOp::Ternary(TernaryOp::Where) => r(if a[0] != 0 { a[1] } else { a[2] }),
        AluOp::Ternary(TernaryOp::MulAcc) => r(a[0].wrapping_mul(a[1]).wrapping_add(a[2])),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int_semantics_follow_c() {
        let d = AluOp::Binary(BinaryOp::Div);
        let m = AluOp::Binary(BinaryOp::Mod);
        let c = |v| ConstValue::Int(v);
        assert_eq!(eval_alu(d, DType::I32, &[c(-7), c(2)]), Some(c(-3)));
        assert_eq!(eval_alu(m, DType::I32, &[c(-7), c(2)]), Some(c(-1)));
        assert_eq!(eval_alu(d, DType::I32, &[c(1), c(0)]), None);
        let add = AluOp::Binary(BinaryOp::Add);
        assert_eq!(eval_alu(add, DType::I8, &[c(127), c(1)]), Some(c(-128)));
        assert_eq!(eval_alu(add, DType::U8, &[c(255), c(1)]), Some(c(0)));
    }

    #[test]
    fn float_consts_round_to_their_type() {
        let v = ConstValue::from_f64(DType::F32, 0.1);
        assert_eq!(v.as_f64(), 0.1f32 as f64);
        assert_eq!(
            ConstValue::from_f64(DType::F16, 1.0 / 3.0).as_f64(),
            0.333251953125
        );
        assert_eq!(ConstValue::from_f64(DType::I8, 300.0), ConstValue::Int(44));
        assert_eq!(ReduceOp::Max.identity(DType::I8), ConstValue::Int(-128));
    }
}
