//! Taking a known list of indices along an axis (a `Gather` of constant indices, a resize's
//! sources): the list split into runs of evenly stepping indices, each index repeated alike,
//! each run a view of the tensor, the views concatenated; a list of more than [`SLICED`] runs
//! is a one-hot sum over a table of its indices in flash instead.

use super::{Graph, GraphError, Lazy};
use crate::dtype::Scalar;
use crate::ops::ReduceOp;
use crate::tensor::Tensor;

/// Index lists of up to this many runs are concatenated views; longer ones a one-hot sum.
pub const SLICED: usize = 64;

impl Graph {
    /// `x` at the known indices `idx` (each in range) along `axis`.
    pub fn take(&mut self, x: &Lazy, axis: usize, idx: &[usize]) -> Result<Lazy, GraphError> {
        let runs = match evenly(idx) {
            Some(run) => vec![run],
            None => runs(idx),
        };
        if runs.is_empty() {
            let mut arg: Vec<(usize, usize)> = x.shape().iter().map(|&d| (0, d)).collect();
            arg[axis] = (0, 0);
            return x.shrink(&arg);
        }
        if runs.len() > SLICED {
            return self.take_one_hot(x, axis, idx);
        }
        let parts = runs
            .iter()
            .map(|r| run_view(x, axis, r))
            .collect::<Result<Vec<_>, _>>()?;
        match parts.as_slice() {
            [one] => Ok(one.clone()),
            _ => self.concat(&parts, axis),
        }
    }

    /// [`Graph::take`] by a one-hot sum, the indices a table in flash.
    fn take_one_hot(&mut self, x: &Lazy, axis: usize, idx: &[usize]) -> Result<Lazy, GraphError> {
        let values: Vec<i64> = idx.iter().map(|&i| i as i64).collect();
        let t =
            Tensor::from_i64(Scalar::I32, vec![idx.len()], &values).expect("one index per element");
        let w = self.weight("take_indices", t);
        self.take_by(x, axis, &w)
    }

    /// `Σ_j x[.., j, ..] · (idx[k] = j)` for each element `k` of the integer tensor `idx`
    /// (flattened onto `axis`; an index outside the axis selects zeros).
    pub fn take_by(&mut self, x: &Lazy, axis: usize, idx: &Lazy) -> Result<Lazy, GraphError> {
        let (d, m, rank) = (x.shape()[axis], idx.numel(), x.shape().len());
        let mut wide = x.shape().to_vec();
        wide.insert(axis, m);
        let mut xs = x.shape().to_vec();
        xs.insert(axis, 1);
        let xv = x.reshape(&xs)?.expand(&wide)?;
        let mut is = vec![1; rank + 1];
        is[axis] = m;
        let mut ars = vec![1; rank + 1];
        ars[axis + 1] = d;
        let ar = self.arange(d, idx.dtype);
        let hit = self.eq(&idx.reshape(&is)?, &ar.reshape(&ars)?)?;
        let zero = self.scalar_like(&xv, 0.0);
        let picked = self.where_(&hit, &xv, &zero)?;
        let s = self.reduce(ReduceOp::Sum, &picked, &[axis + 1])?;
        let mut out = x.shape().to_vec();
        out[axis] = m;
        s.reshape(&out)
    }
}

/// The whole list as one run, when it steps evenly (two indices always do) or repeats one index.
fn evenly(idx: &[usize]) -> Option<Run> {
    let (&first, rest) = idx.split_first()?;
    let step = rest.first().map_or(1, |&i| i as i64 - first as i64);
    if !idx.windows(2).all(|w| w[1] as i64 - w[0] as i64 == step) {
        return None;
    }
    let (count, repeat, step) = if step == 0 {
        (1, idx.len(), 1)
    } else {
        (idx.len(), 1, step)
    };
    Some(Run {
        first,
        step,
        count,
        repeat,
    })
}

/// A run of indices: `first`, `first + step`, … (`count` values), each repeated `repeat` times.
#[derive(Debug, PartialEq)]
struct Run {
    first: usize,
    step: i64,
    count: usize,
    repeat: usize,
}

/// `idx` split greedily into runs.
fn runs(idx: &[usize]) -> Vec<Run> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < idx.len() {
        let same = idx[i..].iter().take_while(|&&v| v == idx[i]).count();
        let block =
            |k: usize, v: usize| idx.len() >= k + same && idx[k..k + same].iter().all(|&x| x == v);
        let mut count = 1;
        let mut step = 1;
        if same == 1 && i + 1 < idx.len() {
            step = idx[i + 1] as i64 - idx[i] as i64;
            while i + count < idx.len() && idx[i + count] as i64 - idx[i + count - 1] as i64 == step
            {
                count += 1;
            }
            // Two values are no run: the second may start a run of repeats.
            if count < 3 {
                (count, step) = (1, 1);
            }
        } else {
            while block(i + count * same, idx[i] + count) {
                count += 1;
            }
        }
        out.push(Run {
            first: idx[i],
            step,
            count,
            repeat: same,
        });
        i += count * same;
    }
    out
}

/// The view of `x` that one run selects along `axis`.
fn run_view(x: &Lazy, axis: usize, r: &Run) -> Result<Lazy, GraphError> {
    let last = (r.first as i64 + r.step * (r.count as i64 - 1)) as usize;
    let (lo, hi) = (r.first.min(last), r.first.max(last));
    let mut arg: Vec<(usize, usize)> = x.shape().iter().map(|&d| (0, d)).collect();
    arg[axis] = (lo, hi + 1);
    let mut v = x.shrink(&arg)?;
    if r.count > 1 && r.step != 1 {
        let mut mul = vec![1; x.shape().len()];
        mul[axis] = r.step;
        v = v.stride(&mul)?;
    }
    if r.repeat > 1 {
        let mut split = v.shape().to_vec();
        split.insert(axis + 1, 1);
        let mut wide = split.clone();
        wide[axis + 1] = r.repeat;
        let mut shape = v.shape().to_vec();
        shape[axis] *= r.repeat;
        v = v.reshape(&split)?.expand(&wide)?.reshape(&shape)?;
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::{runs, Run};

    #[test]
    fn sources_split_into_few_runs() {
        let run = |first, step, count, repeat| Run {
            first,
            step,
            count,
            repeat,
        };
        // 2× up with half-pixel centres: the first row thrice, then pairs, then the last once.
        let mut idx = vec![0, 0, 0];
        idx.extend((1..23).flat_map(|i| [i, i]));
        idx.push(23);
        assert_eq!(
            runs(&idx),
            vec![run(0, 1, 1, 3), run(1, 1, 22, 2), run(23, 1, 1, 1)]
        );
        assert_eq!(runs(&[4, 2, 0]), vec![run(4, -2, 3, 1)]);
        // The upper sources of the same resize: the first row once, pairs, the last thrice.
        let mut upper = vec![0];
        upper.extend((1..24).flat_map(|i| [i, i]));
        upper.push(23);
        assert_eq!(
            runs(&upper),
            vec![run(0, 1, 1, 1), run(1, 1, 23, 2), run(23, 1, 1, 1)]
        );
        assert_eq!(runs(&[5]), vec![run(5, 1, 1, 1)]);
        // A whole list that steps evenly is one run, even of two indices.
        assert_eq!(super::evenly(&[6, 2]), Some(run(6, -4, 2, 1)));
        assert_eq!(super::evenly(&[3, 3, 3]), Some(run(3, 1, 1, 3)));
        assert_eq!(super::evenly(&[0, 1, 3]), None);
        // Whatever the pattern, the runs give back the indices.
        let back = |rs: &[Run]| -> Vec<usize> {
            rs.iter()
                .flat_map(|r| {
                    (0..r.count).flat_map(move |k| {
                        let v = (r.first as i64 + r.step * k as i64) as usize;
                        std::iter::repeat_n(v, r.repeat)
                    })
                })
                .collect()
        };
        for idx in [
            vec![0, 1, 2, 2, 2],
            vec![3, 3, 1, 0, 0, 0, 5],
            vec![1, 3, 5],
            vec![0, 0, 1, 1, 2, 3, 4, 4, 4, 4],
            vec![9, 7, 5, 5, 5, 0, 2, 2],
        ] {
            assert_eq!(back(&runs(&idx)), idx);
        }
    }
}
