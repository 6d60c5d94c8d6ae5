//! Evaluating a graph on the host, node by node: what constant folding computes at compile
//! time, in the importer and in the scheduler.
//!
//! Each node's values are those its kernel would compute: every element follows the primitive
//! ops' semantics ([`crate::ops`]: C casts, wrapping integers, results rounded to their type),
//! sources are read through their views (padding reads 0), and a reduce folds its values into
//! the op's identity in row-major order of the reduced axes, as a kernel's loops do.

use super::{GOp, Graph, Lazy, NodeId};
use crate::ops::{eval_alu, ConstValue};
use crate::tensor::{Tensor, TensorError};

/// Why a graph could not be evaluated.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// The value depends on a model input that was not given (at compile time, none is), or
    /// was given with another number of elements.
    #[error("node {node} reads model input {input}, which is not known")]
    Input { node: u32, input: usize },
    /// An element has no defined value (an integer division by zero).
    #[error("node {node}: {op} is undefined at element {element}")]
    Undefined {
        node: u32,
        op: String,
        element: usize,
    },
    #[error(transparent)]
    Tensor(#[from] TensorError),
}

/// The values of `outputs`, each as a tensor of its shape, given the model's `inputs` (constant
/// folding gives none: then a value that reads an input is an error).
pub fn evaluate(g: &Graph, outputs: &[Lazy], inputs: &[Tensor]) -> Result<Vec<Tensor>, EvalError> {
    let mut values: Vec<Option<Vec<ConstValue>>> = vec![None; g.nodes.len()];
    for id in g.toposort(outputs) {
        let v = node_values(g, id, &values, inputs)?;
        values[id.0 as usize] = Some(v);
    }
    outputs
        .iter()
        .map(|o| {
            let read = read_through(o, values[o.base.0 as usize].as_deref().unwrap_or(&[]));
            let elements = Odometer::new(o.shape()).map(|idx| read(&idx));
            let v: Vec<ConstValue> = elements.collect();
            Ok(Tensor::from_values(
                o.dtype.scalar,
                o.shape().to_vec(),
                v.into_iter(),
            )?)
        })
        .collect()
}

/// The row-major values of node `id`, whose sources are all in `values`.
fn node_values(
    g: &Graph,
    id: NodeId,
    values: &[Option<Vec<ConstValue>>],
    inputs: &[Tensor],
) -> Result<Vec<ConstValue>, EvalError> {
    let node = g.node(id);
    let src = |i: usize| -> &[ConstValue] {
        let base = node.src[i].base.0 as usize;
        values[base]
            .as_deref()
            .expect("sources come first in a toposort")
    };
    let undefined = |op: String, element: usize| EvalError::Undefined {
        node: id.0,
        op,
        element,
    };
    match &node.op {
        GOp::Input(input) => match inputs.get(*input) {
            Some(t) if t.numel() == node.shape.iter().product::<usize>() => {
                Ok(t.values().collect())
            }
            _ => Err(EvalError::Input {
                node: id.0,
                input: *input,
            }),
        },
        // A state holds its initial value in the first run.
        GOp::State(n) => Ok(match &g.states[*n].init {
            Some(t) => t.values().collect(),
            None => vec![ConstValue::zero(node.dtype); node.shape.iter().product()],
        }),
        GOp::Weight(w) => Ok(g.weights[w.0 as usize].tensor.values().collect()),
        GOp::Const(c) => Ok(vec![*c; node.shape.iter().product()]),
        GOp::Alu(op) => {
            let reads: Vec<_> = (0..node.src.len())
                .map(|i| read_through(&node.src[i], src(i)))
                .collect();
            // The operand type is the last source's: a comparison's inputs, `Where`'s values.
            let operand = node.src.last().map_or(node.dtype, |l| l.dtype);
            Odometer::new(&node.shape)
                .enumerate()
                .map(|(element, idx)| {
                    let args: Vec<ConstValue> = reads.iter().map(|r| r(&idx)).collect();
                    eval_alu(*op, operand, &args).ok_or_else(|| undefined(op.to_string(), element))
                })
                .collect()
        }
        GOp::Cast | GOp::Bitcast | GOp::Contiguous => {
            let from = node.src[0].dtype;
            let read = read_through(&node.src[0], src(0));
            let convert = |v: ConstValue| match node.op {
                GOp::Cast => v.cast(from, node.dtype),
                GOp::Bitcast => v.bitcast(from, node.dtype),
                _ => v,
            };
            Ok(Odometer::new(&node.shape)
                .map(|idx| convert(read(&idx)))
                .collect())
        }
        GOp::Loop(body) => {
            // The values of every result, one after the other.
            let mut operands = Vec::with_capacity(node.src.len());
            for (i, s) in node.src.iter().enumerate() {
                let read = read_through(s, src(i));
                let values: Vec<ConstValue> =
                    Odometer::new(s.shape()).map(|idx| read(&idx)).collect();
                operands.push(Tensor::from_values(
                    s.dtype.scalar,
                    s.shape().to_vec(),
                    values.into_iter(),
                )?);
            }
            let results = super::loops::evaluate_loop(body, &operands)?;
            Ok(results.iter().flat_map(|t| t.values()).collect())
        }
        GOp::LoopResult(k) => {
            let GOp::Loop(body) = &g.node(node.src[0].base).op else {
                unreachable!("a loop result's source is its loop")
            };
            let numel = |i: usize| -> usize {
                let id = NodeId(node.src[0].base.0 + 1 + i as u32);
                g.node(id).shape.iter().product()
            };
            let start: usize = (0..*k).map(numel).sum();
            debug_assert!(*k < body.results.len());
            Ok(src(0)[start..start + numel(*k)].to_vec())
        }
        GOp::Reduce(op, axes) => {
            let input = &node.src[0];
            let read = read_through(input, src(0));
            let reduced: Vec<usize> = axes.iter().map(|&a| input.shape()[a]).collect();
            let fold = crate::ops::AluOp::Binary(op.binary());
            Odometer::new(&node.shape)
                .enumerate()
                .map(|(element, out)| {
                    let mut acc = op.identity(node.dtype);
                    let mut idx = out.clone();
                    for within in Odometer::new(&reduced) {
                        for (&a, &i) in axes.iter().zip(&within) {
                            idx[a] = i;
                        }
                        acc = eval_alu(fold, input.dtype, &[acc, read(&idx)])
                            .ok_or_else(|| undefined(fold.to_string(), element))?;
                    }
                    Ok(acc)
                })
                .collect()
        }
    }
}

/// Reads `l`'s element at a multi-index from its base's row-major values: 0 in padding, and
/// the value as `l`'s type.
fn read_through<'a>(l: &'a Lazy, base: &'a [ConstValue]) -> impl Fn(&[usize]) -> ConstValue + 'a {
    move |idx| match l.st.index_of(idx).and_then(|i| base.get(i)) {
        Some(&v) => v.read_as(l.dtype),
        None => ConstValue::zero(l.dtype),
    }
}

/// The multi-indices of a shape in row-major order (one empty index for shape `[]`).
struct Odometer {
    shape: Vec<usize>,
    next: Option<Vec<usize>>,
}

impl Odometer {
    fn new(shape: &[usize]) -> Self {
        let empty = shape.contains(&0);
        Odometer {
            shape: shape.to_vec(),
            next: (!empty).then(|| vec![0; shape.len()]),
        }
    }
}

impl Iterator for Odometer {
    type Item = Vec<usize>;

    fn next(&mut self) -> Option<Vec<usize>> {
        let current = self.next.take()?;
        let mut following = current.clone();
        for axis in (0..self.shape.len()).rev() {
            following[axis] += 1;
            if following[axis] < self.shape[axis] {
                self.next = Some(following);
                break;
            }
            following[axis] = 0;
        }
        Some(current)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::{DType, Scalar};
    use crate::ops::{BinaryOp, ReduceOp};

    fn weight(g: &mut Graph, shape: &[usize], v: &[f64]) -> Lazy {
        let t = Tensor::from_f64(Scalar::F32, shape.to_vec(), v).unwrap();
        g.weight("w", t)
    }

    #[test]
    fn the_odometer_walks_row_major_and_scalars_once() {
        let all: Vec<Vec<usize>> = Odometer::new(&[2, 3]).collect();
        assert_eq!(all.len(), 6);
        assert_eq!(all[1], vec![0, 1]);
        assert_eq!(all[3], vec![1, 0]);
        assert_eq!(Odometer::new(&[]).count(), 1);
        assert_eq!(Odometer::new(&[3, 0]).count(), 0);
    }

    #[test]
    fn views_pad_with_zero_and_reduces_keep_their_axes() {
        let mut g = Graph::new();
        let w = weight(&mut g, &[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        let t = w.permute(&[1, 0]).unwrap();
        let padded = t.pad(&[(0, 1), (1, 0)]).unwrap();
        let sum = g.reduce(ReduceOp::Sum, &padded, &[1]).unwrap();
        let out = evaluate(&g, &[padded.clone(), sum], &[]).unwrap();
        assert_eq!(out[0].shape(), &[4, 3]);
        assert_eq!(
            out[0].to_f64(),
            vec![0.0, 1.0, 4.0, 0.0, 2.0, 5.0, 0.0, 3.0, 6.0, 0.0, 0.0, 0.0]
        );
        assert_eq!(out[1].shape(), &[4, 1]);
        assert_eq!(out[1].to_f64(), vec![5.0, 7.0, 9.0, 0.0]);
    }

    #[test]
    fn results_round_to_their_type_and_integers_wrap() {
        let mut g = Graph::new();
        let a = g.constant(100.0, DType::I8, &[2]);
        let sum = g.binary(BinaryOp::Add, &a, &a).unwrap();
        let f = g.constant(0.1, DType::F32, &[1]);
        let third = g.binary(BinaryOp::Div, &f, &f).unwrap();
        let out = evaluate(&g, &[sum, third], &[]).unwrap();
        assert_eq!(out[0].to_i64().unwrap(), vec![-56, -56]);
        assert_eq!(out[1].to_f64(), vec![1.0]);
    }

    #[test]
    fn a_model_input_and_a_division_by_zero_are_errors() {
        let mut g = Graph::new();
        let x = g.input("x", DType::F32, &[2]);
        assert!(matches!(
            evaluate(&g, &[x], &[]),
            Err(EvalError::Input { input: 0, .. })
        ));
        let one = g.constant(1.0, DType::I32, &[1]);
        let zero = g.constant(0.0, DType::I32, &[1]);
        let q = g.binary(BinaryOp::Div, &one, &zero).unwrap();
        let e = evaluate(&g, &[q], &[]).unwrap_err();
        assert!(e.to_string().contains("undefined at element 0"), "{e}");
    }
}
