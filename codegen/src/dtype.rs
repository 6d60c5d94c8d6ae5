//! Data types of kernel values: scalars and short vectors of them.

use std::fmt;

/// A scalar element type: the runtime's own, so that the schedule and the compiler cannot
/// disagree on one.
pub use kiln_firmware::scalar::Scalar;

/// A value type: a scalar, or a vector of `count` (2, 4, 8, 16 or 32) lanes of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DType {
    pub scalar: Scalar,
    pub count: u8,
}

impl DType {
    /// `count` lanes of `scalar` (1 for a scalar).
    pub const fn new(scalar: Scalar, count: u8) -> DType {
        DType { scalar, count }
    }

    pub const BOOL: DType = DType::new(Scalar::Bool, 1);
    pub const I8: DType = DType::new(Scalar::I8, 1);
    pub const U8: DType = DType::new(Scalar::U8, 1);
    pub const I16: DType = DType::new(Scalar::I16, 1);
    pub const U16: DType = DType::new(Scalar::U16, 1);
    pub const I32: DType = DType::new(Scalar::I32, 1);
    pub const U32: DType = DType::new(Scalar::U32, 1);
    pub const I64: DType = DType::new(Scalar::I64, 1);
    pub const U64: DType = DType::new(Scalar::U64, 1);
    pub const F16: DType = DType::new(Scalar::F16, 1);
    pub const F32: DType = DType::new(Scalar::F32, 1);
    pub const F64: DType = DType::new(Scalar::F64, 1);

    /// The lane type of a vector (the type itself for a scalar).
    pub const fn scalar(self) -> DType {
        DType::new(self.scalar, 1)
    }

    pub const fn vec(self, count: u8) -> DType {
        DType::new(self.scalar, count)
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
        DType::new(s, 1)
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
