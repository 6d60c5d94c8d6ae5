//! Element types and tensor data, decoded from `TensorProto` into plain little-endian bytes.

use std::fmt;

use prost::Message;

use super::error::OnnxError;
use super::proto::tensor_proto::DataLocation;
use super::proto::TensorProto;
use crate::dtype::Scalar;

/// The element type of an ONNX tensor (`TensorProto.DataType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ElemType {
    F32,
    F64,
    F16,
    BF16,
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
    /// Any other `DataType` code (complex, float8, int4, …, or undefined).
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
            16 => ElemType::BF16,
            other => ElemType::Other(other),
        }
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
            ElemType::BF16 => 16,
            ElemType::Other(code) => code,
        }
    }

    /// Bytes per element, or `None` for strings and types Kiln does not know.
    pub fn size(self) -> Option<usize> {
        match self {
            ElemType::BF16 => Some(2),
            ElemType::String | ElemType::Other(_) => None,
            known => known.scalar().map(Scalar::size),
        }
    }

    /// Kiln's scalar type for this element type; `tensor` names the value in the error.
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
            ElemType::BF16 | ElemType::String | ElemType::Other(_) => return None,
        })
    }
}

impl From<Scalar> for ElemType {
    fn from(scalar: Scalar) -> ElemType {
        match scalar {
            Scalar::Bool => ElemType::Bool,
            Scalar::I8 => ElemType::I8,
            Scalar::U8 => ElemType::U8,
            Scalar::I16 => ElemType::I16,
            Scalar::U16 => ElemType::U16,
            Scalar::I32 => ElemType::I32,
            Scalar::U32 => ElemType::U32,
            Scalar::I64 => ElemType::I64,
            Scalar::U64 => ElemType::U64,
            Scalar::F16 => ElemType::F16,
            Scalar::F32 => ElemType::F32,
            Scalar::F64 => ElemType::F64,
        }
    }
}

impl fmt::Display for ElemType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ElemType::BF16 => f.write_str("bf16"),
            ElemType::String => f.write_str("string"),
            ElemType::Other(code) => write!(f, "onnx type {code}"),
            known => f.write_str(known.scalar().map_or("?", Scalar::name)),
        }
    }
}

/// A dense tensor: `bytes` holds the elements little-endian, in C order, densely packed.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorData {
    pub elem: ElemType,
    pub dims: Vec<usize>,
    pub bytes: Vec<u8>,
}

impl TensorData {
    /// An `f32` tensor. Panics if `values` does not fill `dims`.
    pub fn from_f32(dims: Vec<usize>, values: &[f32]) -> TensorData {
        assert_eq!(
            dims.iter().product::<usize>(),
            values.len(),
            "values do not fill dims"
        );
        let bytes = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        TensorData {
            elem: ElemType::F32,
            dims,
            bytes,
        }
    }

    /// Number of elements (1 for a scalar).
    pub fn elem_count(&self) -> usize {
        self.dims.iter().product()
    }

    /// The elements of an `f32` tensor; `None` for any other type.
    pub fn to_f32(&self) -> Option<Vec<f32>> {
        let values = le::<4>(&self.bytes).map(f32::from_le_bytes);
        (self.elem == ElemType::F32).then(|| values.collect())
    }

    /// The elements of an integer or bool tensor as `i64` (`u64` values wrap); `None` otherwise.
    pub fn to_i64(&self) -> Option<Vec<i64>> {
        let b = &self.bytes;
        Some(match self.elem {
            ElemType::Bool | ElemType::U8 => b.iter().map(|&v| i64::from(v)).collect(),
            ElemType::I8 => b.iter().map(|&v| i64::from(v as i8)).collect(),
            ElemType::I16 => le::<2>(b)
                .map(|c| i64::from(i16::from_le_bytes(c)))
                .collect(),
            ElemType::U16 => le::<2>(b)
                .map(|c| i64::from(u16::from_le_bytes(c)))
                .collect(),
            ElemType::I32 => le::<4>(b)
                .map(|c| i64::from(i32::from_le_bytes(c)))
                .collect(),
            ElemType::U32 => le::<4>(b)
                .map(|c| i64::from(u32::from_le_bytes(c)))
                .collect(),
            ElemType::I64 => le::<8>(b).map(i64::from_le_bytes).collect(),
            ElemType::U64 => le::<8>(b).map(|c| u64::from_le_bytes(c) as i64).collect(),
            _ => return None,
        })
    }

    /// The elements of any numeric or bool tensor as `f64`; `None` for strings and unknown types.
    pub fn to_f64(&self) -> Option<Vec<f64>> {
        let b = &self.bytes;
        Some(match self.elem {
            ElemType::F32 => le::<4>(b)
                .map(|c| f64::from(f32::from_le_bytes(c)))
                .collect(),
            ElemType::F64 => le::<8>(b).map(f64::from_le_bytes).collect(),
            ElemType::F16 => le::<2>(b)
                .map(|c| f16_to_f64(u16::from_le_bytes(c)))
                .collect(),
            ElemType::BF16 => le::<2>(b)
                .map(|c| f64::from(f32::from_bits(u32::from(u16::from_le_bytes(c)) << 16)))
                .collect(),
            ElemType::U64 => le::<8>(b).map(|c| u64::from_le_bytes(c) as f64).collect(),
            _ => self.to_i64()?.into_iter().map(|v| v as f64).collect(),
        })
    }
}

fn le<const N: usize>(bytes: &[u8]) -> impl Iterator<Item = [u8; N]> + '_ {
    bytes.chunks_exact(N).map(|c| c.try_into().unwrap())
}

/// IEEE half-precision bits to `f64`.
fn f16_to_f64(bits: u16) -> f64 {
    let sign = if bits & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = i32::from((bits >> 10) & 0x1f);
    let frac = f64::from(bits & 0x3ff);
    match exp {
        0 => sign * frac * 2f64.powi(-24),
        31 if frac == 0.0 => sign * f64::INFINITY,
        31 => f64::NAN,
        _ => sign * (1.0 + frac / 1024.0) * 2f64.powi(exp - 15),
    }
}

/// Decodes a serialized `TensorProto` (a `.pb` test-data file): its name and its data.
pub fn decode_tensor(bytes: &[u8]) -> Result<(String, TensorData), OnnxError> {
    let proto = TensorProto::decode(bytes).map_err(OnnxError::NotTensor)?;
    let name = proto.name.clone().unwrap_or_default();
    let data = tensor_from_proto(proto, "")?;
    Ok((name, data))
}

/// Reads a `TensorProto`'s data, from `raw_data` or the typed `*_data` field its type uses.
/// `label` names the tensor in errors when the proto has no name.
pub(crate) fn tensor_from_proto(t: TensorProto, label: &str) -> Result<TensorData, OnnxError> {
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
    let code = t.data_type.unwrap_or(0);
    let elem = ElemType::from_code(code);
    let size = match elem {
        ElemType::String => {
            let tensor = name.to_string();
            return Err(OnnxError::UnsupportedElemType { tensor, elem });
        }
        _ => elem.size().ok_or_else(|| OnnxError::UnknownElemType {
            tensor: name.to_string(),
            code,
        })?,
    };
    let dims = t
        .dims
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| bad(format!("negative dimension {d}"))))
        .collect::<Result<Vec<_>, _>>()?;
    let count = dims.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
    let want = count
        .and_then(|n| n.checked_mul(size))
        .ok_or_else(|| bad(format!("dims {dims:?} are too large")))?;
    let bytes = match t.raw_data {
        Some(raw) if !raw.is_empty() || want == 0 => raw,
        _ => typed_bytes(&t, elem).map_err(bad)?,
    };
    if bytes.len() != want {
        let reason = format!(
            "holds {} bytes, dims {dims:?} of {elem} need {want}",
            bytes.len()
        );
        return Err(bad(reason));
    }
    Ok(TensorData { elem, dims, bytes })
}

/// Packs the typed `*_data` field that ONNX uses for `elem` into little-endian bytes.
fn typed_bytes(t: &TensorProto, elem: ElemType) -> Result<Vec<u8>, String> {
    let ints = &t.int32_data;
    let packed = match elem {
        ElemType::F32 => Some(t.float_data.iter().flat_map(|v| v.to_le_bytes()).collect()),
        ElemType::F64 => Some(t.double_data.iter().flat_map(|v| v.to_le_bytes()).collect()),
        ElemType::I64 => Some(t.int64_data.iter().flat_map(|v| v.to_le_bytes()).collect()),
        ElemType::U64 => Some(t.uint64_data.iter().flat_map(|v| v.to_le_bytes()).collect()),
        ElemType::U32 => narrow(&t.uint64_data, |v| {
            u32::try_from(v).ok().map(u32::to_le_bytes)
        }),
        ElemType::I32 => Some(ints.iter().flat_map(|v| v.to_le_bytes()).collect()),
        ElemType::I16 => narrow(ints, |v| i16::try_from(v).ok().map(i16::to_le_bytes)),
        ElemType::U16 | ElemType::F16 | ElemType::BF16 => {
            narrow(ints, |v| u16::try_from(v).ok().map(u16::to_le_bytes))
        }
        ElemType::I8 => narrow(ints, |v| i8::try_from(v).ok().map(i8::to_le_bytes)),
        ElemType::U8 => narrow(ints, |v| u8::try_from(v).ok().map(u8::to_le_bytes)),
        ElemType::Bool => Some(ints.iter().map(|&v| u8::from(v != 0)).collect()),
        ElemType::String | ElemType::Other(_) => None,
    };
    packed.ok_or_else(|| format!("a value in the typed data does not fit {elem}"))
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
