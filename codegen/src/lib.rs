//! Kiln's compiler: the library a firmware's build script links, with no runner in it.
//!
//! Layers, each using only the ones before it:
//! - values every stage shares: [`target`] (what a target can do), [`dtype`], [`ops`] (the
//!   primitive operations and their exact semantics), [`shape`] (symbolic indices and
//!   ShapeTrackers), [`tensorio`] (tensors in `.npy` and `.pb` files);
//! - the stages, in the order data flows through them: [`onnx`] (import) → [`graph`] →
//!   [`schedule`] → [`kernel`] → [`optimize`] → [`linearize`] (into [`uop`]s) → [`render`] →
//!   [`plan`] → [`bundle`] (and [`gpu`], a bundle's form for OpenCL and Vulkan);
//! - [`compile`], the one function that chains the stages for every target, and [`builder`],
//!   the build-script API on top of it ([`Builder`]);
//! - [`interpret`], which runs a schedule's kernels in the UOp interpreter: the reference the
//!   tests check the stages against.
//!
//! The runners (`kiln-runners`: the host, boards, GPUs, each a
//! [`optimize::CostModel`] for the BEAM search) and the command line (`kiln-cli`) are crates
//! above this one.

pub mod bind;
pub mod builder;
pub mod bundle;
pub mod compile;
pub mod dtype;
pub mod error;
pub mod gpu;
pub mod graph;
pub mod interpret;
pub mod kernel;
pub mod linearize;
pub mod model;
pub mod onnx;
pub mod ops;
pub mod optimize;
pub mod plan;
pub mod render;
pub mod schedule;
pub mod shape;
pub mod target;
pub mod tensor;
pub mod tensorio;
pub mod tflite;
pub mod uop;

pub use builder::{BuildError, Builder, Built, Cpu};
pub use kiln_devices::CPU_VAR;
