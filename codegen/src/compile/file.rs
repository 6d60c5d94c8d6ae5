//! From a model file to a compiled model: the one entry point the command line, the
//! `Builder`, conformance, process replay and the GPU path share.

use super::{compile, CompileError};
use crate::bundle::Bundle;
use crate::dtype::DType;
use crate::model::{import_file, ImportOptions, ModelError};
use crate::onnx::import::Imported;
use crate::optimize::{Optimize, SearchStats};
use crate::target::Target;
use std::path::{Path, PathBuf};

/// How a model file is compiled: its name in the bundle, how it is imported, how its kernels
/// are optimized.
pub struct FileOptions<'a> {
    /// The bundle's name (default: the file's stem).
    pub name: Option<String>,
    pub import: ImportOptions,
    pub how: Optimize<'a>,
}

impl Default for FileOptions<'_> {
    /// The file's stem, imported with the defaults, the target's heuristics.
    fn default() -> Self {
        FileOptions {
            name: None,
            import: ImportOptions::default(),
            how: Optimize::Heuristics,
        }
    }
}

/// Why a model file did not compile: the file, and the stage's error.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// The model could not be read or imported.
    #[error("importing {}", path.display())]
    Import {
        path: PathBuf,
        #[source]
        source: Box<ModelError>,
    },
    #[error("compiling {}", path.display())]
    Compile {
        path: PathBuf,
        #[source]
        source: Box<CompileError>,
    },
}

/// Imports the model at `path` (ONNX or TFLite, as its content says) and compiles it for
/// `target`; `progress` is called after each kernel with (done, total).
pub fn compile_file(
    path: &Path,
    options: FileOptions<'_>,
    target: &Target,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<(Compiled, SearchStats), FileError> {
    let import = options.import.for_target(target);
    let imported = import_file(path, &import).map_err(|e| FileError::Import {
        path: path.to_path_buf(),
        source: Box::new(e),
    })?;
    let stem = || {
        path.file_stem()
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_default()
    };
    let name = options.name.unwrap_or_else(stem);
    let (bundle, stats) = compile(
        &name,
        &imported.graph,
        &imported.outputs,
        target,
        options.how,
        progress,
    )
    .map_err(|e| FileError::Compile {
        path: path.to_path_buf(),
        source: Box::new(e),
    })?;
    Ok((io_of(&imported, bundle), stats))
}

/// A compiled model with the names, types and shapes of its inputs and outputs.
pub struct Compiled {
    pub bundle: Bundle,
    pub inputs: Vec<(String, DType, Vec<usize>)>,
    /// The bundle's outputs: the model's, then the lengths of those in `bounded`.
    pub outputs: Vec<(String, DType, Vec<usize>)>,
    pub bounded: Vec<crate::graph::Bounded>,
    /// The model file's inputs bound at compile time, and its outputs that only feed a state:
    /// (index among the file's, name).
    pub bound_inputs: Vec<crate::graph::FileTensor>,
    pub state_outputs: Vec<crate::graph::FileTensor>,
}

/// A model output of a run: name, type, shape and bytes.
pub type ModelOutput = (String, DType, Vec<usize>, Vec<u8>);

impl Compiled {
    /// The model's outputs from the `raw` outputs of a run: those of data-dependent length cut
    /// to it, their length outputs left out.
    pub fn model_outputs(&self, raw: &[Vec<u8>]) -> Result<Vec<ModelOutput>, String> {
        let shapes: Vec<(DType, Vec<usize>)> = self
            .outputs
            .iter()
            .map(|(_, d, s)| (*d, s.clone()))
            .collect();
        let cut = crate::graph::cut_bounded(&self.bounded, &shapes, raw)?;
        let kept = (0..self.outputs.len()).filter(|k| !self.bounded.iter().any(|b| b.length == *k));
        Ok(kept
            .zip(cut)
            .map(|(k, (shape, bytes))| {
                let (name, dtype, _) = &self.outputs[k];
                (name.clone(), *dtype, shape, bytes)
            })
            .collect())
    }
}

/// The bundle of an imported model, with the model's inputs and outputs.
pub fn io_of(imported: &Imported, bundle: Bundle) -> Compiled {
    let inputs = imported
        .graph
        .inputs
        .iter()
        .map(|i| (i.name.clone(), i.dtype, i.shape.clone()))
        .collect();
    let outputs = imported
        .output_names
        .iter()
        .zip(&imported.outputs)
        .map(|(n, o)| (n.clone(), o.dtype, o.shape().to_vec()))
        .collect();
    Compiled {
        bundle,
        inputs,
        outputs,
        bounded: imported.bounded.clone(),
        bound_inputs: imported.bound_inputs.clone(),
        state_outputs: imported.state_outputs.clone(),
    }
}
