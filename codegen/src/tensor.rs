//! A tensor on the host: its scalar type, its shape, and its elements as dense little-endian
//! bytes in C order. Weights, ONNX initializers and test vectors are all this one value.
//!
//! Elements convert from numbers with C cast semantics ([`ConstValue::from_f64`]: floats round
//! to the type's precision, integers truncate and wrap to its width, booleans are 0 or 1), the
//! semantics of constant folding and of the UOp interpreter, which reads and writes bytes
//! through [`decode_element`] and [`encode_element`] too.

use crate::dtype::{f16_to_f64, f64_to_f16, Scalar};
use crate::ops::ConstValue;

/// A dense tensor: `bytes` holds exactly the elements of `shape`, little-endian, in C order.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    dtype: Scalar,
    shape: Vec<usize>,
    bytes: Vec<u8>,
}

/// Why data does not make a tensor of a type and shape.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TensorError {
    #[error("{dtype} tensor of shape {shape:?}: {got} bytes, the shape needs {want}")]
    ByteLength {
        dtype: Scalar,
        shape: Vec<usize>,
        got: usize,
        want: usize,
    },
    #[error("{dtype} tensor of shape {shape:?}: {got} values, the shape has {want} elements")]
    ValueCount {
        dtype: Scalar,
        shape: Vec<usize>,
        got: usize,
        want: usize,
    },
    #[error("{dtype} tensor of shape {shape:?}: more bytes than memory can address")]
    TooLarge { dtype: Scalar, shape: Vec<usize> },
}

/// The number of elements of `shape` and the bytes they take as `dtype`.
fn extent(dtype: Scalar, shape: &[usize]) -> Result<(usize, usize), TensorError> {
    let count = shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
    let bytes = count.and_then(|n| n.checked_mul(dtype.size()));
    match (count, bytes) {
        (Some(count), Some(bytes)) => Ok((count, bytes)),
        _ => Err(TensorError::TooLarge {
            dtype,
            shape: shape.to_vec(),
        }),
    }
}

/// Checks that `got` values fill `shape`.
fn check_count(dtype: Scalar, shape: &[usize], got: usize) -> Result<(), TensorError> {
    let (want, _) = extent(dtype, shape)?;
    if got != want {
        let shape = shape.to_vec();
        return Err(TensorError::ValueCount {
            dtype,
            shape,
            got,
            want,
        });
    }
    Ok(())
}

impl Tensor {
    /// The tensor of `dtype` and `shape` whose elements are `bytes`.
    pub fn new(dtype: Scalar, shape: Vec<usize>, bytes: Vec<u8>) -> Result<Tensor, TensorError> {
        let (_, want) = extent(dtype, &shape)?;
        if bytes.len() != want {
            let got = bytes.len();
            return Err(TensorError::ByteLength {
                dtype,
                shape,
                got,
                want,
            });
        }
        Ok(Tensor {
            dtype,
            shape,
            bytes,
        })
    }

    /// `values` converted to `dtype` (C cast semantics), one per element of `shape`.
    pub fn from_f64(
        dtype: Scalar,
        shape: Vec<usize>,
        values: &[f64],
    ) -> Result<Tensor, TensorError> {
        let cast = values
            .iter()
            .map(|&v| ConstValue::from_f64(dtype.into(), v));
        Tensor::from_values(dtype, shape, cast)
    }

    /// The vector (rank 1) of `values` converted to `dtype` (C cast semantics).
    pub fn vector(dtype: Scalar, values: &[f64]) -> Tensor {
        let cast = values
            .iter()
            .map(|&v| ConstValue::from_f64(dtype.into(), v));
        Tensor {
            dtype,
            shape: vec![values.len()],
            bytes: encode_all(dtype, cast),
        }
    }

    /// `values` converted to `dtype` (C cast semantics), one per element of `shape`.
    pub fn from_i64(
        dtype: Scalar,
        shape: Vec<usize>,
        values: &[i64],
    ) -> Result<Tensor, TensorError> {
        let cast = values
            .iter()
            .map(|&v| ConstValue::from_i64(dtype.into(), v));
        Tensor::from_values(dtype, shape, cast)
    }

    /// An `f32` tensor of exactly `values` (NaN payloads included).
    pub fn from_f32(shape: Vec<usize>, values: &[f32]) -> Result<Tensor, TensorError> {
        check_count(Scalar::F32, &shape, values.len())?;
        let bytes = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        Tensor::new(Scalar::F32, shape, bytes)
    }

    /// Constants of `dtype`, one per element of `shape`, encoded as they are.
    pub fn from_values(
        dtype: Scalar,
        shape: Vec<usize>,
        values: impl ExactSizeIterator<Item = ConstValue>,
    ) -> Result<Tensor, TensorError> {
        check_count(dtype, &shape, values.len())?;
        Tensor::new(dtype, shape, encode_all(dtype, values))
    }

    pub fn dtype(&self) -> Scalar {
        self.dtype
    }

    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The elements, little-endian, in C order.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The elements, to change in place (their number and type stay).
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.bytes
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }

    /// Number of elements (1 for a scalar).
    pub fn numel(&self) -> usize {
        self.bytes.len() / self.dtype.size()
    }

    /// Each element as a constant of the type (`u64` as its bit pattern, booleans 0 or 1).
    pub fn values(&self) -> impl ExactSizeIterator<Item = ConstValue> + '_ {
        let dtype = self.dtype;
        self.bytes
            .chunks_exact(dtype.size())
            .map(move |c| decode_element(dtype, c))
    }

    /// Each element's value as an `f64` (integers beyond 2^53 round).
    pub fn to_f64(&self) -> Vec<f64> {
        self.values()
            .map(|v| match v {
                ConstValue::Int(i) if self.dtype == Scalar::U64 => i as u64 as f64,
                v => v.as_f64(),
            })
            .collect()
    }

    /// The elements of an integer or bool tensor as `i64` (`u64` values wrap); `None` for
    /// floats.
    pub fn to_i64(&self) -> Option<Vec<i64>> {
        let ints = self.values().map(ConstValue::as_i64);
        (!self.dtype.is_float()).then(|| ints.collect())
    }

    /// The elements of an `f32` tensor, exactly; `None` for any other type.
    pub fn to_f32(&self) -> Option<Vec<f32>> {
        let chunks = self.bytes.chunks_exact(4);
        let values = chunks.map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes")));
        (self.dtype == Scalar::F32).then(|| values.collect())
    }
}

/// Constants of `dtype`, encoded one after the other.
fn encode_all(dtype: Scalar, values: impl ExactSizeIterator<Item = ConstValue>) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(values.len() * dtype.size());
    for v in values {
        encode_element(dtype, v, &mut bytes);
    }
    bytes
}

/// One little-endian element of `dtype` (`dtype.size()` bytes) as a constant: booleans read as
/// 0 or 1, `u64` as its bit pattern.
pub fn decode_element(dtype: Scalar, bytes: &[u8]) -> ConstValue {
    let mut b = [0u8; 8];
    b[..bytes.len()].copy_from_slice(bytes);
    let raw = u64::from_le_bytes(b);
    let lanes = dtype.into();
    match dtype {
        Scalar::F16 => ConstValue::from_f64(lanes, f16_to_f64(raw as u16)),
        Scalar::F32 => ConstValue::from_f64(lanes, f32::from_bits(raw as u32) as f64),
        Scalar::F64 => ConstValue::Float(raw),
        Scalar::I8 => ConstValue::Int(raw as u8 as i8 as i64),
        Scalar::I16 => ConstValue::Int(raw as u16 as i16 as i64),
        Scalar::I32 => ConstValue::Int(raw as u32 as i32 as i64),
        _ => ConstValue::from_i64(lanes, raw as i64),
    }
}

/// Appends `v`, a constant of `dtype`, as one little-endian element.
pub fn encode_element(dtype: Scalar, v: ConstValue, out: &mut Vec<u8>) {
    let raw: u64 = match dtype {
        Scalar::F16 => f64_to_f16(v.as_f64()) as u64,
        Scalar::F32 => (v.as_f64() as f32).to_bits() as u64,
        Scalar::F64 => v.as_f64().to_bits(),
        _ => v.as_i64() as u64,
    };
    out.extend_from_slice(&raw.to_le_bytes()[..dtype.size()]);
}

#[cfg(test)]
mod tests;
