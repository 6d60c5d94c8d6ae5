//! A deliberately naive, scalar model of TensorFlow Lite Micro's integer arithmetic, used as the
//! oracle of property tests.
//!
//! Everything here follows TFLM's reference kernels (`tensorflow/lite/kernels/internal/reference`)
//! and their set-up code (`tensorflow/lite/micro/kernels/*_common.cc`,
//! `tensorflow/lite/kernels/kernel_util.cc`, `quantization_util.cc`) at tflite-micro commit
//! 90b983c2, built as TFLM builds it: double rounding (no `TFLITE_SINGLE_ROUNDING`), no
//! `TFLITE_EMULATE_FLOAT`. The fixed-point exp / logistic / tanh follow gemmlowp's
//! `fixedpoint/fixedpoint.h` (the 719139ce that TFLM pins).
//!
//! The code is plain loops over flat NHWC slices, written from the semantics and shared with no
//! other implementation. Where TFLM would fail a `TF_LITE_ENSURE` / `TFLITE_CHECK` (and refuse
//! the model), these functions panic. Where C++ leaves signed overflow undefined, the arithmetic
//! here wraps, as the host build of TFLM does in practice.

mod activation;
mod conv;
mod elementwise;
mod fixed;
mod quant;
mod setup;
#[cfg(test)]
mod tests;

pub use activation::*;
pub use conv::*;
pub use elementwise::*;
pub use fixed::*;
pub use quant::*;
pub use setup::*;
