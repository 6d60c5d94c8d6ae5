//! A model file of either format, chosen by its content: a TFLite flatbuffer carries the `TFL3`
//! identifier at bytes 4..8; anything else is read as ONNX.

pub use crate::bind::{BindError, Binding, Bindings, ConstInput, ConstSource, StateLink};

use crate::graph::Imported;
use crate::onnx::{self, ImportError, OnnxError, Requant};
use crate::tflite::{self, TfliteError};
use std::path::{Path, PathBuf};
use thiserror::Error;

/// The formats Kiln imports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Onnx,
    Tflite,
}

impl Format {
    /// The format of a model file's bytes.
    pub fn of(bytes: &[u8]) -> Format {
        if kiln_tflite_schema::is_tflite(bytes) {
            Format::Tflite
        } else {
            Format::Onnx
        }
    }
}

/// Why a model file could not be imported.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ModelError {
    #[error("reading {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Onnx(#[from] OnnxError),
    #[error(transparent)]
    OnnxImport(#[from] ImportError),
    #[error(transparent)]
    Tflite(#[from] TfliteError),
    #[error(transparent)]
    Bind(#[from] BindError),
    #[error("--shape {name}: a TFLite model's input shapes are fixed in the file")]
    TfliteShape { name: String },
}

/// How a model file is imported: one set of options for both formats, each read by the
/// format it concerns.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ImportOptions {
    /// Free ONNX input dims pinned (`--shape NAME=…`); a TFLite model's are fixed.
    pub shapes: Vec<(String, Vec<usize>)>,
    /// How quantized ONNX operators requantize (`--requant`); a TFLite model always follows
    /// TFLM.
    pub requant: Requant,
    /// A TFLite model's float16 weights behind `DEQUANTIZE` stay float16 in flash, widened
    /// where they are read (`--keep-f16`); ONNX models keep their weights' types anyway.
    pub keep_f16: bool,
    /// A TFLite model's int8 convolutions over 3 input channels (any `4k + 3`) read a fourth,
    /// zero-weighted one, so that each pixel's channels are one 32-bit word and the first layer
    /// packs its products like the others (the compiler sets it for a target with packed dot
    /// products: `compile_file`). Exact: the added products are zero.
    pub channels_in_words: bool,
    /// Inputs bound at compile time: constants (`--const`) and states (`--state`).
    pub bindings: Bindings,
}

impl ImportOptions {
    /// These options as the compiler imports with them for `target`: a target with packed int8
    /// dot products has the first layers' channels padded to words
    /// ([`ImportOptions::channels_in_words`]).
    pub fn for_target(&self, target: &crate::target::Target) -> ImportOptions {
        ImportOptions {
            channels_in_words: self.channels_in_words || target.packed_dot,
            ..self.clone()
        }
    }
}

/// Imports the model file at `path`.
pub fn import_file(path: &Path, options: &ImportOptions) -> Result<Imported, ModelError> {
    let bytes = std::fs::read(path).map_err(|source| ModelError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    import_bytes(&bytes, options)
}

/// Imports a model from its file's bytes.
pub fn import_bytes(bytes: &[u8], options: &ImportOptions) -> Result<Imported, ModelError> {
    let read = |path: &Path| crate::tensorio::read_tensor(path).map_err(|e| e.to_string());
    let bindings = options.bindings.read_files(read)?;
    match Format::of(bytes) {
        Format::Tflite => {
            if let Some((name, _)) = options.shapes.first() {
                return Err(ModelError::TfliteShape { name: name.clone() });
            }
            let model = tflite::load_bytes(bytes)?;
            let config = tflite::ImportConfig {
                keep_f16: options.keep_f16,
                channels_in_words: options.channels_in_words,
            };
            Ok(tflite::import_bound(&model, &config, &bindings)?)
        }
        Format::Onnx => {
            let model = onnx::load_bytes(bytes)?;
            let (shapes, requant) = (&options.shapes, options.requant);
            Ok(onnx::import_bound(&model, shapes, requant, &bindings)?)
        }
    }
}
