//! Protobuf types generated at build time from `proto/onnx.proto` (see `build.rs`).
#![allow(clippy::all, clippy::pedantic, missing_docs, rustdoc::all)]

include!(concat!(env!("OUT_DIR"), "/onnx.rs"));
