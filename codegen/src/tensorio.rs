//! Tensor files on the host: NumPy `.npy` (read and write) and ONNX `TensorProto` `.pb` (read),
//! as used for test vectors (`input_0.npy`, `output_0.pb`, …), read into [`Tensor`]s. A `.pb`
//! is decoded as the ONNX loader decodes initializers ([`decode_tensor`]), so the two refuse
//! the same element types.

mod npy;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use thiserror::Error;

use crate::onnx::{decode_tensor, OnnxError};
use crate::tensor::Tensor;

#[derive(Debug, Error)]
#[non_exhaustive]
pub enum TensorIoError {
    #[error("cannot access {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: not a usable .npy file: {reason}")]
    BadNpy { path: PathBuf, reason: String },
    #[error("{path}")]
    BadPb {
        path: PathBuf,
        #[source]
        source: Box<OnnxError>,
    },
    #[error("{path}: unknown tensor file extension (expected .npy or .pb)")]
    UnknownExtension { path: PathBuf },
    #[error("{path}: a rank-{rank} shape makes a .npy header longer than 4 GiB")]
    NpyHeaderTooLong { path: PathBuf, rank: usize },
    #[error("{dir}: both {prefix}_{index}.npy and {prefix}_{index}.pb exist")]
    Ambiguous {
        dir: PathBuf,
        prefix: String,
        index: usize,
    },
    #[error("{dir}: {prefix}_{missing}.* is missing, but later {prefix}_N files exist")]
    Gap {
        dir: PathBuf,
        prefix: String,
        missing: usize,
    },
    #[error("{dir}: no {prefix}_0.npy or {prefix}_0.pb")]
    NoTensors { dir: PathBuf, prefix: String },
}

/// Reads a `.npy` or `.pb` tensor file, by its extension.
pub fn read_tensor(path: &Path) -> Result<Tensor, TensorIoError> {
    let kind = path.extension().and_then(|e| e.to_str());
    if !matches!(kind, Some("npy" | "pb")) {
        return Err(TensorIoError::UnknownExtension {
            path: path.to_path_buf(),
        });
    }
    let bytes = std::fs::read(path).map_err(|source| io_error(path, source))?;
    match kind {
        Some("npy") => npy::decode(&bytes).map_err(|reason| TensorIoError::BadNpy {
            path: path.to_path_buf(),
            reason,
        }),
        _ => match decode_tensor(&bytes) {
            Ok((_name, tensor)) => Ok(tensor),
            Err(source) => Err(TensorIoError::BadPb {
                path: path.to_path_buf(),
                source: Box::new(source),
            }),
        },
    }
}

/// Decodes the bytes of a `.npy` file (an entry of an `.npz` archive, say).
pub fn decode_npy(bytes: &[u8]) -> Result<Tensor, String> {
    npy::decode(bytes)
}

/// Writes `tensor` as a `.npy` file.
pub fn write_npy(path: &Path, tensor: &Tensor) -> Result<(), TensorIoError> {
    let bytes = npy::encode(tensor).ok_or_else(|| TensorIoError::NpyHeaderTooLong {
        path: path.to_path_buf(),
        rank: tensor.shape().len(),
    })?;
    std::fs::write(path, bytes).map_err(|source| io_error(path, source))
}

/// Reads `<prefix>_0.*`, `<prefix>_1.*`, … from `dir` in order, each a `.npy` or a `.pb` file.
pub fn read_dir_tensors(dir: &Path, prefix: &str) -> Result<Vec<Tensor>, TensorIoError> {
    let mut found: BTreeMap<usize, Vec<PathBuf>> = BTreeMap::new();
    let entries = std::fs::read_dir(dir).map_err(|source| io_error(dir, source))?;
    for entry in entries {
        let path = entry.map_err(|source| io_error(dir, source))?.path();
        if let Some(index) = file_index(&path, prefix) {
            found.entry(index).or_default().push(path);
        }
    }
    let (dir, prefix) = (dir.to_path_buf(), prefix.to_string());
    if found.is_empty() {
        return Err(TensorIoError::NoTensors { dir, prefix });
    }
    for (expected, (&index, paths)) in (0..).zip(&found) {
        if index != expected {
            let missing = expected;
            return Err(TensorIoError::Gap {
                dir,
                prefix,
                missing,
            });
        }
        if paths.len() > 1 {
            return Err(TensorIoError::Ambiguous { dir, prefix, index });
        }
    }
    found.values().map(|paths| read_tensor(&paths[0])).collect()
}

/// `N` if `path` is named `<prefix>_N.npy` or `<prefix>_N.pb` (N written without leading zeros).
fn file_index(path: &Path, prefix: &str) -> Option<usize> {
    let name = path.file_name()?.to_str()?;
    let (stem, ext) = name.rsplit_once('.')?;
    let digits = stem.strip_prefix(prefix)?.strip_prefix('_')?;
    let index: usize = digits.parse().ok()?;
    (matches!(ext, "npy" | "pb") && index.to_string() == digits).then_some(index)
}

fn io_error(path: &Path, source: std::io::Error) -> TensorIoError {
    TensorIoError::Io {
        path: path.to_path_buf(),
        source,
    }
}
