//! The op registry: one small builder per ONNX op, in tables grouped by op family.
//!
//! A builder reads its node's attributes and inputs through a [`Ctx`] and returns one
//! [`Value`] per output: lazy graph tensors, or tensors known at compile time.

mod activation;
mod attention;
mod col2im;
mod constant;
mod conv;
mod ctx;
mod dft;
mod dynamic;
mod einsum;
mod elementwise;
mod gather;
mod grid;
mod index;
mod linear_attention;
mod logic;
mod loss;
mod math;
mod nn;
mod norm;
mod optional;
mod pool;
mod quant;
mod reduce;
mod resize;
mod rnn;
mod rotary;
mod scatter;
mod shape;
mod sort;

pub use ctx::{
    checked_numel, dtype_of, invalid, materialize, norm_axis, Ctx, OpError, Value, MAX_ELEMENTS,
};

/// Builds one node: its outputs, in order.
pub type OpBuilder = fn(&mut Ctx) -> Result<Vec<Value>, OpError>;

/// Every op family's table.
const FAMILIES: [&[(&str, OpBuilder)]; 28] = [
    constant::OPS,
    elementwise::OPS,
    activation::OPS,
    logic::OPS,
    shape::OPS,
    index::OPS,
    gather::OPS,
    reduce::OPS,
    nn::OPS,
    conv::OPS,
    pool::OPS,
    quant::OPS,
    resize::OPS,
    math::OPS,
    norm::OPS,
    loss::OPS,
    attention::OPS,
    linear_attention::OPS,
    rotary::OPS,
    sort::OPS,
    grid::OPS,
    col2im::OPS,
    scatter::OPS,
    dft::OPS,
    dynamic::OPS,
    einsum::OPS,
    optional::OPS,
    rnn::OPS,
];

/// onnxruntime's contrib ops (`com.microsoft`) that Kiln imports.
const MICROSOFT: &[(&str, OpBuilder)] = quant::MICROSOFT_OPS;

/// The builder of `op_type` in `domain` (`""` or `"ai.onnx"` is the default domain).
pub fn op_builder(domain: &str, op_type: &str) -> Option<OpBuilder> {
    let table: &[&[(&str, OpBuilder)]] = match domain {
        "" | "ai.onnx" => &FAMILIES,
        "com.microsoft" => &[MICROSOFT],
        _ => return None,
    };
    table
        .iter()
        .flat_map(|f| f.iter())
        .find(|(name, _)| *name == op_type)
        .map(|&(_, b)| b)
}

/// The op types Kiln imports, sorted.
pub fn supported_ops() -> Vec<&'static str> {
    let mut ops: Vec<&str> = FAMILIES
        .iter()
        .flat_map(|f| f.iter())
        .map(|(name, _)| *name)
        .chain(crate::onnx::import::control_ops().iter().copied())
        .collect();
    ops.sort_unstable();
    ops
}
