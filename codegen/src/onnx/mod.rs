//! Reading ONNX models into Kiln's own plain representation.

pub mod proto;
