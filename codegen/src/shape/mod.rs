//! Shapes and index arithmetic of the kernel IR: symbolic index expressions, and the
//! `ShapeTracker` that turns movement ops into them without copying data.
//!
//! Semantics follow tinygrad 0.9.1.

mod symbolic;
mod tracker;
mod view;

pub use symbolic::{render_to, Node, NodeKind, NodeRenderer};
pub use tracker::{ShapeError, ShapeTracker};
pub use view::{strides_for_shape, View};

#[cfg(test)]
mod tests;
