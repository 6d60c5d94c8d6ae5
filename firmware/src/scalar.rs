//! The scalar element types of tensors, one enum for the runtime and the host compiler: the
//! schedule names each model input's and output's type with it, and the compiler types every
//! kernel value with it.

use core::fmt;
use serde::{Deserialize, Serialize};

/// A scalar element type. The discriminant is the code on the wire (postcard writes the
/// variant index, which the discriminants follow); the order is the host compiler's promotion
/// order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)]
pub enum Scalar {
    Bool = 0,
    I8 = 1,
    U8 = 2,
    I16 = 3,
    U16 = 4,
    I32 = 5,
    U32 = 6,
    I64 = 7,
    U64 = 8,
    F16 = 9,
    F32 = 10,
    F64 = 11,
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
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::Scalar::{self, *};

    /// Each type's wire byte, size and name. The wire bytes are the schedule format: a change
    /// here is a new format version.
    const TABLE: [(Scalar, u8, usize, &str); 12] = [
        (Bool, 0, 1, "bool"),
        (I8, 1, 1, "i8"),
        (U8, 2, 1, "u8"),
        (I16, 3, 2, "i16"),
        (U16, 4, 2, "u16"),
        (I32, 5, 4, "i32"),
        (U32, 6, 4, "u32"),
        (I64, 7, 8, "i64"),
        (U64, 8, 8, "u64"),
        (F16, 9, 2, "f16"),
        (F32, 10, 4, "f32"),
        (F64, 11, 8, "f64"),
    ];

    #[test]
    fn each_type_encodes_as_its_pinned_byte() {
        for (scalar, byte, _, _) in TABLE {
            let mut buffer = [0u8; 4];
            let encoded = postcard::to_slice(&scalar, &mut buffer).unwrap();
            assert_eq!(encoded, [byte], "{scalar:?}");
            assert_eq!(scalar as u8, byte, "{scalar:?}");
            assert_eq!(postcard::from_bytes::<Scalar>(&[byte]).unwrap(), scalar);
        }
        assert!(postcard::from_bytes::<Scalar>(&[12]).is_err());
    }

    #[test]
    fn sizes_names_and_classes() {
        for (scalar, _, size, name) in TABLE {
            assert_eq!((scalar.size(), scalar.name()), (size, name), "{scalar:?}");
        }
        assert_eq!(Scalar::ALL, TABLE.map(|(s, ..)| s));
        assert!(Scalar::ALL.is_sorted(), "ALL is in promotion order");
        assert!(F16.is_float() && !Bool.is_int() && U8.is_int() && !I8.is_unsigned());
        assert_eq!((I8.min_value(), U64.min_value()), (-128.0, 0.0));
        assert_eq!(F32.min_value(), f64::NEG_INFINITY);
    }
}
