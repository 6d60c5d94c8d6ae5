//! Data types of kernel values: scalars and short vectors of them.

use std::fmt;

/// A scalar element type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scalar {
    Bool,
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
    F16,
    F32,
    F64,
}

impl Scalar {
    /// All scalar types, in promotion order.
    pub const ALL: [Scalar; 12] = [
        Scalar::Bool,
        Scalar::I8,
        Scalar::U8,
        Scalar::I16,
        Scalar::U16,
        Scalar::I32,
        Scalar::U32,
        Scalar::I64,
        Scalar::U64,
        Scalar::F16,
        Scalar::F32,
        Scalar::F64,
    ];

    /// Size of one element in bytes.
    pub const fn size(self) -> usize {
        match self {
            Scalar::Bool | Scalar::I8 | Scalar::U8 => 1,
            Scalar::I16 | Scalar::U16 | Scalar::F16 => 2,
            Scalar::I32 | Scalar::U32 | Scalar::F32 => 4,
            Scalar::I64 | Scalar::U64 | Scalar::F64 => 8,
        }
    }

    pub const fn is_float(self) -> bool {
        matches!(self, Scalar::F16 | Scalar::F32 | Scalar::F64)
    }

    pub const fn is_int(self) -> bool {
        !self.is_float() && !matches!(self, Scalar::Bool)
    }

    pub const fn is_unsigned(self) -> bool {
        matches!(self, Scalar::U8 | Scalar::U16 | Scalar::U32 | Scalar::U64)
    }

    /// Short name used in kernel names and reports (`f32`, `i8`, …).
    pub const fn name(self) -> &'static str {
        match self {
            Scalar::Bool => "bool",
            Scalar::I8 => "i8",
            Scalar::U8 => "u8",
            Scalar::I16 => "i16",
            Scalar::U16 => "u16",
            Scalar::I32 => "i32",
            Scalar::U32 => "u32",
            Scalar::I64 => "i64",
            Scalar::U64 => "u64",
            Scalar::F16 => "f16",
            Scalar::F32 => "f32",
            Scalar::F64 => "f64",
        }
    }

    /// The smallest value of the type (−∞ for floats): the identity of MAX.
    pub fn min_value(self) -> f64 {
        match self {
            Scalar::Bool => 0.0,
            Scalar::I8 => i8::MIN as f64,
            Scalar::U8 | Scalar::U16 | Scalar::U32 | Scalar::U64 => 0.0,
            Scalar::I16 => i16::MIN as f64,
            Scalar::I32 => i32::MIN as f64,
            Scalar::I64 => i64::MIN as f64,
            Scalar::F16 | Scalar::F32 | Scalar::F64 => f64::NEG_INFINITY,
        }
    }

    /// A vector of `count` lanes of this scalar.
    pub const fn vec(self, count: u8) -> DType {
        DType {
            scalar: self,
            count,
        }
    }
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A value type: a scalar, or a vector of `count` (2, 4, 8 or 16) lanes of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DType {
    pub scalar: Scalar,
    pub count: u8,
}

impl DType {
    pub const BOOL: DType = Scalar::Bool.vec(1);
    pub const I8: DType = Scalar::I8.vec(1);
    pub const U8: DType = Scalar::U8.vec(1);
    pub const I16: DType = Scalar::I16.vec(1);
    pub const U16: DType = Scalar::U16.vec(1);
    pub const I32: DType = Scalar::I32.vec(1);
    pub const U32: DType = Scalar::U32.vec(1);
    pub const I64: DType = Scalar::I64.vec(1);
    pub const U64: DType = Scalar::U64.vec(1);
    pub const F16: DType = Scalar::F16.vec(1);
    pub const F32: DType = Scalar::F32.vec(1);
    pub const F64: DType = Scalar::F64.vec(1);

    /// The lane type of a vector (the type itself for a scalar).
    pub const fn scalar(self) -> DType {
        self.scalar.vec(1)
    }

    pub const fn vec(self, count: u8) -> DType {
        self.scalar.vec(count)
    }

    pub const fn is_vector(self) -> bool {
        self.count > 1
    }

    /// Size in bytes of one value of this type.
    pub const fn size(self) -> usize {
        self.scalar.size() * self.count as usize
    }

    pub const fn is_float(self) -> bool {
        self.scalar.is_float()
    }

    pub const fn is_int(self) -> bool {
        self.scalar.is_int()
    }
}

impl From<Scalar> for DType {
    fn from(s: Scalar) -> Self {
        s.vec(1)
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.count == 1 {
            write!(f, "{}", self.scalar)
        } else {
            write!(f, "{}x{}", self.scalar, self.count)
        }
    }
}

/// Decodes IEEE half-precision bits.
pub fn f16_to_f64(h: u16) -> f64 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = ((h >> 10) & 0x1f) as i32;
    let frac = (h & 0x3ff) as f64;
    let mag = match exp {
        0 => frac * 2f64.powi(-24),
        31 if frac == 0.0 => f64::INFINITY,
        31 => f64::NAN,
        e => (1.0 + frac / 1024.0) * 2f64.powi(e - 15),
    };
    sign * mag
}

/// Encodes to IEEE half-precision bits, rounding to nearest even.
pub fn f64_to_f16(v: f64) -> u16 {
    let f = v as f32;
    let bits = f.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    if f.is_nan() {
        return sign | 0x7e00;
    }
    let a = f.abs();
    if a >= 65520.0 {
        return sign | 0x7c00;
    }
    if a < 2f32.powi(-25) {
        return sign;
    }
    let (e, m) = if a < 2f32.powi(-14) {
        (0u16, (a / 2f32.powi(-24)).round_ties_even() as u16)
    } else {
        let e = a.log2().floor() as i32;
        let m = (a / 2f32.powi(e) - 1.0) * 1024.0;
        let m = m.round_ties_even() as u32;
        if m == 1024 {
            ((e + 16) as u16, 0)
        } else {
            ((e + 15) as u16, m as u16)
        }
    };
    sign | (e << 10) | m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vector_sizes_and_names() {
        assert_eq!(DType::F32.vec(4).size(), 16);
        assert_eq!(DType::F32.vec(4).scalar(), DType::F32);
        assert_eq!(DType::I8.vec(4).to_string(), "i8x4");
        assert!(DType::F64.is_float() && !DType::BOOL.is_int() && DType::U8.is_int());
        assert_eq!(Scalar::I8.min_value(), -128.0);
    }

    #[test]
    fn half_round_trips() {
        for v in [
            0.0,
            1.0,
            -2.5,
            65504.0,
            6.103515625e-5,
            5.960464477539063e-8,
            0.333251953125,
        ] {
            assert_eq!(f16_to_f64(f64_to_f16(v)), v, "{v}");
        }
        assert_eq!(f64_to_f16(1.0), 0x3c00);
        assert!(f16_to_f64(f64_to_f16(1e9)).is_infinite());
    }
}
