//! Random views of a buffer that end at a wanted shape, applied both to a ShapeTracker and to
//! an explicit index table (the naive model: for each element, the base index or padding).

use super::rng::Rng;
use kiln_codegen::shape::ShapeTracker;

#[derive(Clone, Debug)]
pub enum Mov {
    Reshape(Vec<usize>),
    Permute(Vec<usize>),
    Expand(Vec<usize>),
    Pad(Vec<(usize, usize)>),
    Shrink(Vec<(usize, usize)>),
    Stride(Vec<i64>),
}

/// A buffer of `base` elements seen through `movs`.
#[derive(Clone, Debug)]
pub struct ViewSpec {
    pub base: Vec<usize>,
    pub movs: Vec<Mov>,
}

/// An explicit view: shape and, per element (row-major), the base index or `None`.
#[derive(Clone, Debug)]
pub struct Table {
    pub shape: Vec<usize>,
    pub idx: Vec<Option<usize>>,
}

fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

pub fn unravel(mut flat: usize, shape: &[usize]) -> Vec<usize> {
    let mut out = vec![0; shape.len()];
    for i in (0..shape.len()).rev() {
        out[i] = flat % shape[i];
        flat /= shape[i];
    }
    out
}

pub fn ravel(idx: &[usize], shape: &[usize]) -> usize {
    idx.iter().zip(strides(shape)).map(|(i, s)| i * s).sum()
}

impl Table {
    pub fn contiguous(shape: &[usize]) -> Table {
        Table {
            shape: shape.to_vec(),
            idx: (0..shape.iter().product()).map(Some).collect(),
        }
    }

    fn remap(&self, shape: Vec<usize>, f: impl Fn(&[usize]) -> Option<Vec<usize>>) -> Table {
        let n: usize = shape.iter().product();
        let idx = (0..n)
            .map(|k| f(&unravel(k, &shape)).and_then(|src| self.idx[ravel(&src, &self.shape)]))
            .collect();
        Table { shape, idx }
    }

    pub fn apply(&self, m: &Mov) -> Table {
        match m {
            Mov::Reshape(s) => Table {
                shape: s.clone(),
                idx: self.idx.clone(),
            },
            Mov::Permute(p) => {
                let shape: Vec<usize> = p.iter().map(|&a| self.shape[a]).collect();
                self.remap(shape, |i| {
                    let mut src = vec![0; i.len()];
                    for (k, &a) in p.iter().enumerate() {
                        src[a] = i[k];
                    }
                    Some(src)
                })
            }
            Mov::Expand(s) => self.remap(s.clone(), |i| {
                Some(
                    i.iter()
                        .zip(&self.shape)
                        .map(|(&x, &d)| if d == 1 { 0 } else { x })
                        .collect(),
                )
            }),
            Mov::Pad(arg) => {
                let shape: Vec<usize> = self
                    .shape
                    .iter()
                    .zip(arg)
                    .map(|(s, (a, b))| s + a + b)
                    .collect();
                self.remap(shape, |i| {
                    let mut src = Vec::with_capacity(i.len());
                    for ((&x, &(a, _)), &s) in i.iter().zip(arg).zip(&self.shape) {
                        if x < a || x >= a + s {
                            return None;
                        }
                        src.push(x - a);
                    }
                    Some(src)
                })
            }
            Mov::Shrink(arg) => {
                let shape: Vec<usize> = arg.iter().map(|(a, b)| b - a).collect();
                self.remap(shape, |i| {
                    Some(i.iter().zip(arg).map(|(&x, &(a, _))| x + a).collect())
                })
            }
            Mov::Stride(m) => {
                let shape: Vec<usize> = self
                    .shape
                    .iter()
                    .zip(m)
                    .map(|(&s, &k)| s.div_ceil(k.unsigned_abs() as usize))
                    .collect();
                self.remap(shape, |i| {
                    Some(
                        i.iter()
                            .zip(m)
                            .zip(&self.shape)
                            .map(|((&x, &k), &s)| {
                                let step = k.unsigned_abs() as usize;
                                if k > 0 {
                                    x * step
                                } else {
                                    s - 1 - x * step
                                }
                            })
                            .collect(),
                    )
                })
            }
        }
    }
}

impl ViewSpec {
    pub fn tracker(&self) -> ShapeTracker {
        let mut st = ShapeTracker::from_shape(&self.base);
        for m in &self.movs {
            st = match m {
                Mov::Reshape(s) => st.reshape(s),
                Mov::Permute(p) => st.permute(p),
                Mov::Expand(s) => st.expand(s),
                Mov::Pad(a) => st.pad(a),
                Mov::Shrink(a) => st.shrink(a),
                Mov::Stride(k) => st.stride(k),
            }
            .unwrap_or_else(|e| panic!("generated movement op {m:?} is illegal: {e}"));
        }
        st
    }

    pub fn table(&self) -> Table {
        self.movs
            .iter()
            .fold(Table::contiguous(&self.base), |t, m| t.apply(m))
    }

    pub fn base_len(&self) -> usize {
        self.base.iter().product()
    }
}

/// A random view whose final shape is `target`, built backwards from it with up to `depth`
/// movement ops.
pub fn random_view(rng: &mut Rng, target: &[usize], depth: usize) -> ViewSpec {
    if depth == 0 || rng.below(4) == 0 {
        return ViewSpec {
            base: target.to_vec(),
            movs: vec![],
        };
    }
    let n = target.len();
    let (pre, m): (Vec<usize>, Mov) = match rng.below(6) {
        0 if n > 1 => {
            let p = rng.permutation(n);
            let mut pre = vec![0; n];
            for (k, &a) in p.iter().enumerate() {
                pre[a] = target[k];
            }
            (pre, Mov::Permute(p))
        }
        1 if target.iter().any(|&d| d > 1) => {
            let pre: Vec<usize> = target
                .iter()
                .map(|&d| if d > 1 && rng.below(2) == 0 { 1 } else { d })
                .collect();
            (pre, Mov::Expand(target.to_vec()))
        }
        2 if target.iter().any(|&d| d > 1) => {
            let arg: Vec<(usize, usize)> = target
                .iter()
                .map(|&d| {
                    if d < 2 {
                        return (0, 0);
                    }
                    let a = rng.below(d.min(3));
                    let b = rng.below((d - a).min(3));
                    if a + b >= d {
                        (0, 0)
                    } else {
                        (a, b)
                    }
                })
                .collect();
            let pre = target
                .iter()
                .zip(&arg)
                .map(|(d, (a, b))| d - a - b)
                .collect();
            (pre, Mov::Pad(arg))
        }
        3 => {
            let arg: Vec<(usize, usize)> = target
                .iter()
                .map(|&d| {
                    let a = rng.below(3);
                    (a, a + d)
                })
                .collect();
            let pre = arg.iter().map(|&(_, b)| b + rng.below(3)).collect();
            (pre, Mov::Shrink(arg))
        }
        4 => {
            let k: Vec<i64> = target
                .iter()
                .map(|_| match rng.below(4) {
                    0 => -1,
                    1 => 2,
                    2 => -2,
                    _ => 1,
                })
                .collect();
            let pre = target
                .iter()
                .zip(&k)
                .map(|(&d, &k)| {
                    if k.abs() == 1 {
                        d
                    } else {
                        d * 2 - rng.below(2).min(d.saturating_sub(1))
                    }
                })
                .collect();
            (pre, Mov::Stride(k))
        }
        _ => {
            let pre = reshape_source(rng, target);
            (pre, Mov::Reshape(target.to_vec()))
        }
    };
    let mut v = random_view(rng, &pre, depth - 1);
    v.movs.push(m);
    v
}

/// A different shape with the same number of elements (merge, split or flatten).
fn reshape_source(rng: &mut Rng, target: &[usize]) -> Vec<usize> {
    let total: usize = target.iter().product();
    match rng.below(3) {
        0 => vec![total],
        1 if target.len() > 1 => {
            let i = rng.below(target.len() - 1);
            let mut v = target[..i].to_vec();
            v.push(target[i] * target[i + 1]);
            v.extend_from_slice(&target[i + 2..]);
            v
        }
        _ => {
            let mut v = target.to_vec();
            if let Some(i) = (0..v.len()).find(|&i| v[i].is_multiple_of(2) && v[i] > 2) {
                let d = v[i];
                v[i] = 2;
                v.insert(i + 1, d / 2);
            } else {
                v.push(1);
            }
            v
        }
    }
}
