//! Errors of the ONNX reader: each variant names the file, tensor, node or input at fault.

use std::path::PathBuf;

use thiserror::Error;

use super::tensor::ElemType;

/// The lowest and highest default-domain opset Kiln reads.
pub const OPSET_RANGE: std::ops::RangeInclusive<i64> = 1..=27;

#[derive(Debug, Error)]
#[non_exhaustive]
pub enum OnnxError {
    #[error("cannot read {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("not an ONNX model: {reason}")]
    NotOnnx { reason: String },
    #[error("not an ONNX model")]
    Undecodable(#[source] prost::DecodeError),
    #[error("not an ONNX tensor")]
    NotTensor(#[source] prost::DecodeError),
    #[error("the model has no graph")]
    NoGraph,
    #[error("the model imports no opset for the default ONNX domain")]
    NoDefaultOpset,
    #[error(
        "unsupported opset {opset} for the default domain (Kiln reads {} to {})",
        OPSET_RANGE.start(),
        OPSET_RANGE.end()
    )]
    UnsupportedOpset { opset: i64 },
    #[error("the graph has a cycle through nodes {nodes:?}")]
    Cyclic { nodes: Vec<String> },
    #[error("node {node} ({op}) reads {value:?}, which no node, input or initializer defines")]
    UndefinedValue {
        node: String,
        op: String,
        value: String,
    },
    #[error("value {value:?} is defined more than once")]
    DuplicateValue { value: String },
    #[error("{value:?}: unsupported type ({what})")]
    UnsupportedValueType { value: String, what: &'static str },
    #[error("tensor {tensor:?}: unknown element type {code}")]
    UnknownElemType { tensor: String, code: i32 },
    #[error("tensor {tensor:?}: element type {elem} is not supported by Kiln")]
    UnsupportedElemType { tensor: String, elem: ElemType },
    #[error("tensor {tensor:?}: data is stored outside the model file (external data)")]
    ExternalData { tensor: String },
    #[error("tensor {tensor:?}: {reason}")]
    BadTensor { tensor: String, reason: String },
    #[error("node {node} ({op}): attribute {attr:?}: {problem}")]
    Attribute {
        node: String,
        op: String,
        attr: String,
        problem: AttrProblem,
    },
    #[error("bad --shape {flag:?}: {reason} (expected NAME=D0xD1x…, e.g. input=1x49x10x1)")]
    BadShapeFlag { flag: String, reason: String },
    #[error("--shape names {name:?}, which is not a model input (inputs: {known:?})")]
    UnknownInput { name: String, known: Vec<String> },
    #[error("--shape {input:?} is given more than once")]
    DuplicateOverride { input: String },
    #[error("--shape {input:?} has rank {given}, but the model's input has rank {expected}")]
    OverrideRank {
        input: String,
        expected: usize,
        given: usize,
    },
    #[error("--shape {input:?} sets axis {axis} to {given}, but the model fixes it to {fixed}")]
    OverrideConflict {
        input: String,
        axis: usize,
        fixed: usize,
        given: usize,
    },
    #[error(
        "input {input:?} axis {axis} is free ({}); pin it with --shape {input}=…",
        param.as_deref().unwrap_or("unnamed")
    )]
    FreeDim {
        input: String,
        axis: usize,
        param: Option<String>,
    },
}

/// What is wrong with an attribute.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum AttrProblem {
    #[error("missing")]
    Missing,
    #[error("expected {expected}, found {found}")]
    WrongKind {
        expected: &'static str,
        found: &'static str,
    },
    #[error("{0}")]
    Invalid(String),
    #[error("not supported yet: {0}")]
    Unsupported(&'static str),
}
