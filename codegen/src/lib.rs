//! Kiln's host-side compiler.
//!
//! Data flows one way through the stages:
//! import → graph → schedule → kernel → linearize → render → plan → bundle.
//!
//! A firmware crate uses it from its build script through [`Builder`] (with
//! `default-features = false`: the command line and the runners stay out).

pub mod board;
pub mod builder;
pub mod bundle;
#[cfg(feature = "cli")]
pub mod cli;
pub mod compile;
#[cfg(feature = "cli")]
pub mod conformance;
pub mod dtype;
pub mod error;
#[cfg(feature = "gpu")]
pub mod gpu;
pub mod graph;
#[cfg(feature = "host")]
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

pub use builder::{BuildError, Builder, Built, Cpu};
