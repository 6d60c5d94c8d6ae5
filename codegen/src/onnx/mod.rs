//! Reading ONNX models into Kiln's own plain representation, and lowering them to the lazy
//! tensor graph.
//!
//! `load` decodes the protobuf (types generated from the vendored `onnx.proto`), reads tensors
//! into dense little-endian bytes, attributes into typed values, and sorts the nodes.
//! `import` lowers the loaded model node by node with the op builders of [`ops`].

mod attr;
mod error;
pub mod import;
mod model;
pub mod narrow;
pub mod ops;
pub mod proto;
pub mod qdq;
mod shape;
mod sort;
mod tensor;

pub use attr::{AttrValue, Attributes};
pub use error::{AttrProblem, OnnxError, OPSET_RANGE};
pub use import::{import, import_bound, import_with, ImportError, Imported};
pub use model::{load, load_bytes, Dim, OnnxGraph, OnnxModel, OnnxNode, ValueInfo};
pub use qdq::Requant;
pub use shape::{parse_shape_override, pin_dims};
pub use tensor::{decode_tensor, ElemType, Narrow};

#[cfg(test)]
mod tests;
