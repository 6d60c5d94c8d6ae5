//! Why a `.tflite` file could not be read or imported.

use crate::graph::GraphError;
use thiserror::Error;

/// Reading or lowering a TFLite model.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum TfliteError {
    #[error("not a TFLite model: no `TFL3` file identifier at bytes 4..8")]
    NotTflite,
    #[error("malformed TFLite flatbuffer: {0}")]
    Malformed(planus::Error),
    #[error("the model has no subgraph")]
    NoSubgraph,
    #[error("tensor {tensor:?}: type {ty} is not supported")]
    TensorType { tensor: String, ty: String },
    #[error("tensor {tensor:?}: dim {dim} is not a size (pin it in the model)")]
    Dim { tensor: String, dim: i32 },
    #[error("tensor {tensor:?}: shape {shape:?} holds more than {limit} elements")]
    TensorSize {
        tensor: String,
        shape: Vec<usize>,
        limit: usize,
    },
    #[error("{what}: tensor index {index} is out of range for {count} tensors")]
    TensorIndex {
        what: String,
        index: i32,
        count: usize,
    },
    #[error("operator {op}: opcode index {index} is out of range for {count} operator codes")]
    OpcodeIndex { op: usize, index: u32, count: usize },
    #[error("operator {op}: builtin code {code} is not in the schema")]
    UnknownOp { op: usize, code: i32 },
    #[error("tensor {tensor:?}: buffer {index} is out of range for {count} buffers")]
    BufferIndex {
        tensor: String,
        index: u32,
        count: usize,
    },
    #[error("tensor {tensor:?}: buffer at {offset}+{size} lies outside the {file}-byte file")]
    BufferRange {
        tensor: String,
        offset: u64,
        size: u64,
        file: usize,
    },
    #[error("tensor {tensor:?}: buffer holds {got} bytes, its type and shape need {want}")]
    BufferSize {
        tensor: String,
        want: usize,
        got: usize,
    },
    #[error("tensor {tensor:?}: sparse data: {reason}")]
    Sparse { tensor: String, reason: String },
    /// Every operator Kiln cannot import, as `(name, version, count)`.
    #[error("{}", describe_unsupported(.ops))]
    UnsupportedOps { ops: Vec<(String, i32, usize)> },
    #[error("operator {index} ({op} v{version})")]
    Op {
        index: usize,
        op: String,
        version: i32,
        #[source]
        source: OpError,
    },
    #[error("subgraph input {name:?}: {reason}")]
    Input { name: String, reason: String },
    /// A resource variable whose assignments disagree, or that is read and never assigned.
    #[error("variable {name:?}: {reason}")]
    Variable { name: String, reason: String },
    #[error(transparent)]
    Bind(#[from] crate::bind::BindError),
}

/// Why one operator could not be lowered.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum OpError {
    #[error("not supported: {0}")]
    Unsupported(String),
    #[error("{0}")]
    Invalid(String),
    #[error("input {index} is missing")]
    MissingInput { index: usize },
    #[error("input {index} ({tensor:?}) must be a constant")]
    NotConstant { index: usize, tensor: String },
    #[error("tensor {tensor:?} has no quantization parameters")]
    NoQuant { tensor: String },
    /// An operator of a subgraph that a control-flow op lowers.
    #[error("subgraph {index}")]
    Subgraph {
        index: i32,
        #[source]
        source: Box<TfliteError>,
    },
    #[error(transparent)]
    Graph(#[from] GraphError),
}

/// `2 unsupported builtin op(s): LSTM v1 ×3, GATHER v2 ×1`.
fn describe_unsupported(ops: &[(String, i32, usize)]) -> String {
    let list: Vec<String> = ops
        .iter()
        .map(|(op, v, n)| format!("{op} v{v} ×{n}"))
        .collect();
    format!(
        "{} unsupported builtin op(s): {}",
        ops.len(),
        list.join(", ")
    )
}
