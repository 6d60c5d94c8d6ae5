//! Kiln's host-side compiler.
//!
//! Data flows one way through the stages:
//! import → graph → schedule → kernel → linearize → render → plan → bundle.

pub mod board;
pub mod bundle;
pub mod cli;
pub mod compile;
pub mod conformance;
pub mod dtype;
pub mod gpu;
pub mod graph;
pub mod host;
pub mod kernel;
pub mod linearize;
pub mod onnx;
pub mod ops;
pub mod plan;
pub mod render;
pub mod schedule;
pub mod shape;
pub mod tensorio;
pub mod uop;
