//! ONNX element types, and tensor data decoded from `TensorProto` into Kiln's host tensors:
//! where an ONNX type code becomes a [`Scalar`], or is refused.

use std::fmt;

use prost::Message;

use super::error::OnnxError;
pub use super::narrow::Narrow;
use super::proto::tensor_proto::DataLocation;
use super::proto::TensorProto;
use crate::dtype::Scalar;
use crate::tensor::{Tensor, TensorError};

/// The element type of an ONNX tensor (`TensorProto.DataType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ElemType {
    F32,
    F64,
    F16,
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
    Bool,
    String,
    /// A type narrower than Kiln computes in, carried in a wider container ([`Narrow`]).
    Narrow(Narrow),
    /// Any other `DataType` code (complex, or undefined).
    Other(i32),
}

impl ElemType {
    /// The type with ONNX `DataType` code `code`.
    pub fn from_code(code: i32) -> ElemType {
        match code {
            1 => ElemType::F32,
            2 => ElemType::U8,
            3 => ElemType::I8,
            4 => ElemType::U16,
            5 => ElemType::I16,
            6 => ElemType::I32,
            7 => ElemType::I64,
            8 => ElemType::String,
            9 => ElemType::Bool,
            10 => ElemType::F16,
            11 => ElemType::F64,
            12 => ElemType::U32,
            13 => ElemType::U64,
            other => Narrow::from_code(other).map_or(ElemType::Other(other), ElemType::Narrow),
        }
    }

    /// The type named as `TensorProto.DataType` spells it (`"FLOAT"`, `"INT64"`), as `Cast`
    /// names it before opset 6.
    pub fn from_name(name: &str) -> Option<ElemType> {
        const NAMES: [&str; 27] = [
            "UNDEFINED",
            "FLOAT",
            "UINT8",
            "INT8",
            "UINT16",
            "INT16",
            "INT32",
            "INT64",
            "STRING",
            "BOOL",
            "FLOAT16",
            "DOUBLE",
            "UINT32",
            "UINT64",
            "COMPLEX64",
            "COMPLEX128",
            "BFLOAT16",
            "FLOAT8E4M3FN",
            "FLOAT8E4M3FNUZ",
            "FLOAT8E5M2",
            "FLOAT8E5M2FNUZ",
            "UINT4",
            "INT4",
            "FLOAT4E2M1",
            "FLOAT8E8M0",
            "UINT2",
            "INT2",
        ];
        let code = NAMES.iter().position(|n| n.eq_ignore_ascii_case(name))?;
        (code > 0).then(|| ElemType::from_code(code as i32))
    }

    /// The ONNX `DataType` code.
    pub fn code(self) -> i32 {
        match self {
            ElemType::F32 => 1,
            ElemType::U8 => 2,
            ElemType::I8 => 3,
            ElemType::U16 => 4,
            ElemType::I16 => 5,
            ElemType::I32 => 6,
            ElemType::I64 => 7,
            ElemType::String => 8,
            ElemType::Bool => 9,
            ElemType::F16 => 10,
            ElemType::F64 => 11,
            ElemType::U32 => 12,
            ElemType::U64 => 13,
            ElemType::Narrow(n) => n.code(),
            ElemType::Other(code) => code,
        }
    }

    /// Bytes per element as Kiln holds it (a narrow type's container), or `None` for strings and
    /// types Kiln does not know.
    pub fn size(self) -> Option<usize> {
        self.scalar().map(Scalar::size)
    }

    /// The narrow type this is, if it is one.
    pub fn narrow(self) -> Option<Narrow> {
        match self {
            ElemType::Narrow(n) => Some(n),
            _ => None,
        }
    }

    /// Kiln's scalar type for this element type (a narrow type's container); `tensor` names the
    /// value in the error.
    pub fn to_scalar(self, tensor: &str) -> Result<Scalar, OnnxError> {
        self.scalar().ok_or_else(|| OnnxError::UnsupportedElemType {
            tensor: tensor.to_string(),
            elem: self,
        })
    }

    fn scalar(self) -> Option<Scalar> {
        Some(match self {
            ElemType::F32 => Scalar::F32,
            ElemType::F64 => Scalar::F64,
            ElemType::F16 => Scalar::F16,
            ElemType::I8 => Scalar::I8,
            ElemType::U8 => Scalar::U8,
            ElemType::I16 => Scalar::I16,
            ElemType::U16 => Scalar::U16,
            ElemType::I32 => Scalar::I32,
            ElemType::U32 => Scalar::U32,
            ElemType::I64 => Scalar::I64,
            ElemType::U64 => Scalar::U64,
            ElemType::Bool => Scalar::Bool,
            ElemType::Narrow(n) => n.container(),
            ElemType::String | ElemType::Other(_) => return None,
        })
    }
}

impl fmt::Display for ElemType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ElemType::Narrow(n) => f.write_str(n.name()),
            ElemType::String => f.write_str("string"),
            ElemType::Other(code) => write!(f, "onnx type {code}"),
            known => f.write_str(known.scalar().map_or("?", Scalar::name)),
        }
    }
}

/// Decodes a serialized `TensorProto` (a `.pb` test-data file): its name and its data.
pub fn decode_tensor(bytes: &[u8]) -> Result<(String, Tensor), OnnxError> {
    let proto = TensorProto::decode(bytes).map_err(OnnxError::NotTensor)?;
    let name = proto.name.clone().unwrap_or_default();
    let data = tensor_from_proto(proto, "")?;
    Ok((name, data))
}

/// Reads a `TensorProto`'s data, from `raw_data` or the typed `*_data` field its type uses.
/// `label` names the tensor in errors when the proto has no name.
pub(crate) fn tensor_from_proto(t: TensorProto, label: &str) -> Result<Tensor, OnnxError> {
    let name = t.name.as_deref().filter(|n| !n.is_empty()).unwrap_or(label);
    let bad = |reason: String| OnnxError::BadTensor {
        tensor: name.to_string(),
        reason,
    };
    if t.data_location == Some(DataLocation::External as i32) || !t.external_data.is_empty() {
        return Err(OnnxError::ExternalData {
            tensor: name.to_string(),
        });
    }
    if t.segment.is_some() {
        return Err(bad("segmented tensors are not supported".to_string()));
    }
    let elem = ElemType::from_code(t.data_type.unwrap_or(0));
    let dtype = match elem {
        ElemType::Other(code) => {
            let tensor = name.to_string();
            return Err(OnnxError::UnknownElemType { tensor, code });
        }
        elem => elem.to_scalar(name)?,
    };
    let dims = t
        .dims
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| bad(format!("negative dimension {d}"))))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(narrow) = elem.narrow() {
        return narrow.read_proto(&t, dims).map_err(bad);
    }
    let count = dims.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
    let want = count
        .and_then(|n| n.checked_mul(dtype.size()))
        .ok_or_else(|| bad(format!("dims {dims:?} are too large")))?;
    let bytes = match t.raw_data {
        Some(raw) if !raw.is_empty() || want == 0 => raw,
        _ => typed_bytes(&t, dtype).map_err(bad)?,
    };
    Tensor::new(dtype, dims, bytes).map_err(|e| match e {
        TensorError::ByteLength {
            dtype,
            shape,
            got,
            want,
        } => bad(format!(
            "holds {got} bytes, dims {shape:?} of {dtype} need {want}"
        )),
        other => bad(other.to_string()),
    })
}

/// Packs the typed `*_data` field that ONNX uses for `dtype` into little-endian bytes.
fn typed_bytes(t: &TensorProto, dtype: Scalar) -> Result<Vec<u8>, String> {
    let ints = &t.int32_data;
    let packed = match dtype {
        Scalar::F32 => Some(t.float_data.iter().flat_map(|v| v.to_le_bytes()).collect()),
        Scalar::F64 => Some(t.double_data.iter().flat_map(|v| v.to_le_bytes()).collect()),
        Scalar::I64 => Some(t.int64_data.iter().flat_map(|v| v.to_le_bytes()).collect()),
        Scalar::U64 => Some(t.uint64_data.iter().flat_map(|v| v.to_le_bytes()).collect()),
        Scalar::U32 => narrow(&t.uint64_data, |v| {
            u32::try_from(v).ok().map(u32::to_le_bytes)
        }),
        Scalar::I32 => Some(ints.iter().flat_map(|v| v.to_le_bytes()).collect()),
        Scalar::I16 => narrow(ints, |v| i16::try_from(v).ok().map(i16::to_le_bytes)),
        Scalar::U16 | Scalar::F16 => narrow(ints, |v| u16::try_from(v).ok().map(u16::to_le_bytes)),
        Scalar::I8 => narrow(ints, |v| i8::try_from(v).ok().map(i8::to_le_bytes)),
        Scalar::U8 => narrow(ints, |v| u8::try_from(v).ok().map(u8::to_le_bytes)),
        Scalar::Bool => Some(ints.iter().map(|&v| u8::from(v != 0)).collect()),
    };
    packed.ok_or_else(|| format!("a value in the typed data does not fit {dtype}"))
}

/// Narrows each wide value to `N` bytes; `None` if one does not fit.
fn narrow<T: Copy, const N: usize>(
    values: &[T],
    fit: impl Fn(T) -> Option<[u8; N]>,
) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(values.len() * N);
    for &v in values {
        out.extend_from_slice(&fit(v)?);
    }
    Some(out)
}
