//! Deterministic weights for test graphs.

use kiln_codegen::graph::{Graph, Lazy};
use kiln_codegen::tensor::Tensor;

/// A float weight of `shape` named `w`, its values spread over [-1, 1) by `seed`.
pub fn weight(g: &mut Graph, shape: &[usize], seed: u32) -> Lazy {
    let n: usize = shape.iter().product();
    let v: Vec<f32> = (0..n)
        .map(|i| ((((i as u32).wrapping_mul(2654435761) ^ seed) % 1000) as f32 / 500.0) - 1.0)
        .collect();
    let t = Tensor::from_f32(shape.to_vec(), &v).expect("values fill the shape");
    g.weight("w", t)
}
