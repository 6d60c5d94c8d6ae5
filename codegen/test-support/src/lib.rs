//! What the compiler's and the runners' tests share, as one crate instead of files included
//! by path:
//! - independent references: TensorFlow Lite Micro's integer arithmetic ([`tflm`]), a naive
//!   evaluator of kernels ([`naive`]), the ONNX recurrent layers' equations ([`rnn`]);
//! - what the tests are made of: random kernels and views ([`gen`], [`views`], [`rng`]),
//!   one-op TFLite models ([`int8`]), deterministic weights ([`weights`]);
//! - a driver that compiles rendered kernels with the system C compiler and runs them
//!   ([`cdriver`]).

pub mod cdriver;
pub mod gen;
pub mod int8;
pub mod naive;
pub mod rng;
pub mod rnn;
pub mod tflm;
pub mod views;
pub mod weights;
