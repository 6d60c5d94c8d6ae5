//! A naive model of movement ops, and a checker of a `ShapeTracker` against it.

use crate::shape::{Node, ShapeError, ShapeTracker, View};

/// A movement op, for the model and the tracker alike.
#[derive(Clone, Debug)]
pub(super) enum Op {
    Reshape(Vec<usize>),
    Permute(Vec<usize>),
    Expand(Vec<usize>),
    Pad(Vec<(usize, usize)>),
    Shrink(Vec<(usize, usize)>),
    Stride(Vec<i64>),
    Flip(Vec<bool>),
}

impl Op {
    pub(super) fn apply(&self, st: &ShapeTracker) -> Result<ShapeTracker, ShapeError> {
        match self {
            Op::Reshape(s) => st.reshape(s),
            Op::Permute(a) => st.permute(a),
            Op::Expand(s) => st.expand(s),
            Op::Pad(a) => st.pad(a),
            Op::Shrink(a) => st.shrink(a),
            Op::Stride(m) => st.stride(m),
            Op::Flip(f) => st.flip(f),
        }
    }

    /// Like [`Op::apply`], but a reshape always stacks a new view instead of merging.
    pub(super) fn apply_stacked(&self, st: &ShapeTracker) -> ShapeTracker {
        match self {
            Op::Reshape(s) => {
                let mut views = st.views.clone();
                views.push(View::new(s, None, 0, None));
                ShapeTracker { views }
            }
            op => op.apply(st).expect("a legal op"),
        }
    }
}

/// For every element of the shape (row-major), the index it reads in the base buffer, or `None`
/// for padding.
#[derive(Clone, Debug)]
pub(super) struct Naive {
    pub shape: Vec<usize>,
    pub elems: Vec<Option<usize>>,
}

/// The row-major coordinates of `flat` in `shape`.
pub(super) fn coords(shape: &[usize], mut flat: usize) -> Vec<usize> {
    let mut out = vec![0; shape.len()];
    for (c, &s) in out.iter_mut().zip(shape).rev() {
        (*c, flat) = (flat % s, flat / s);
    }
    out
}

fn flat_of(shape: &[usize], coords: &[usize]) -> usize {
    coords
        .iter()
        .zip(shape)
        .fold(0, |acc, (&c, &s)| acc * s + c)
}

impl Naive {
    pub(super) fn new(shape: &[usize]) -> Naive {
        let size = shape.iter().product();
        Naive {
            shape: shape.to_vec(),
            elems: (0..size).map(Some).collect(),
        }
    }

    /// A model of `shape` whose element at each coordinate is this model's element at
    /// `source(coordinate)`, or padding where `source` gives `None`.
    fn remap(&self, shape: Vec<usize>, source: impl Fn(&[usize]) -> Option<Vec<usize>>) -> Naive {
        let size = shape.iter().product();
        let elem =
            |flat| source(&coords(&shape, flat)).and_then(|c| self.elems[flat_of(&self.shape, &c)]);
        let elems = (0..size).map(elem).collect();
        Naive { shape, elems }
    }

    /// A model whose coordinate `v` on axis `d` reads this model's coordinate `source(d, v)` on
    /// the same axis, or padding where that is `None`.
    fn per_axis(&self, shape: Vec<usize>, source: impl Fn(usize, usize) -> Option<usize>) -> Naive {
        self.remap(shape, |c| {
            c.iter().enumerate().map(|(d, &v)| source(d, v)).collect()
        })
    }

    pub(super) fn apply(&self, op: &Op) -> Naive {
        let old = &self.shape;
        let sized = |f: &dyn Fn(usize) -> usize| (0..old.len()).map(f).collect::<Vec<_>>();
        match op {
            Op::Reshape(s) => Naive {
                shape: s.clone(),
                elems: self.elems.clone(),
            },
            Op::Permute(axes) => self.remap(sized(&|d| old[axes[d]]), |c| {
                let mut src = vec![0; c.len()];
                axes.iter().zip(c).for_each(|(&a, &v)| src[a] = v);
                Some(src)
            }),
            Op::Expand(s) => self.per_axis(s.clone(), |d, v| Some(if old[d] == 1 { 0 } else { v })),
            Op::Pad(arg) => self.per_axis(sized(&|d| arg[d].0 + old[d] + arg[d].1), |d, v| {
                (arg[d].0..arg[d].0 + old[d])
                    .contains(&v)
                    .then(|| v - arg[d].0)
            }),
            Op::Shrink(arg) => {
                self.per_axis(sized(&|d| arg[d].1 - arg[d].0), |d, v| Some(v + arg[d].0))
            }
            Op::Stride(mul) => {
                let step = |d: usize| mul[d].unsigned_abs() as usize;
                self.per_axis(sized(&|d| old[d].div_ceil(step(d))), |d, v| {
                    Some(if mul[d] > 0 {
                        v * step(d)
                    } else {
                        old[d] - 1 - v * step(d)
                    })
                })
            }
            Op::Flip(f) => self.apply(&Op::Stride(
                f.iter().map(|&f| if f { -1 } else { 1 }).collect(),
            )),
        }
    }

    /// 1 + the largest index read, 0 when nothing is.
    pub(super) fn real_size(&self) -> usize {
        self.elems.iter().flatten().max().map_or(0, |m| m + 1)
    }
}

/// Checks that `st` reads what `naive` does at every element, through `expr_idxs` and
/// `expr_node`, with sound bounds, and that its `real_size` covers every read (exactly, for one
/// view).
pub(super) fn check(st: &ShapeTracker, naive: &Naive, context: &dyn std::fmt::Debug) {
    assert_eq!(st.shape(), naive.shape.as_slice(), "{context:?}");
    assert_eq!(st.size(), naive.elems.len());
    let real = st.real_size();
    if st.views.len() == 1 {
        assert_eq!(
            real,
            naive.real_size(),
            "real_size of {st:?} after {context:?}"
        );
    } else {
        assert!(
            real >= naive.real_size(),
            "real_size of {st:?} after {context:?}"
        );
    }
    if naive.elems.is_empty() {
        return;
    }
    check_strides(st, naive, context);
    let names: Vec<String> = (0..naive.shape.len()).map(|i| format!("i{i}")).collect();
    let idxs: Vec<Node> = names
        .iter()
        .zip(&naive.shape)
        .map(|(n, &s)| Node::var(n, 0, s as i64 - 1))
        .collect();
    let (idx, valid) = st.expr_idxs(&idxs);
    let flat = Node::var("flat", 0, naive.elems.len() as i64 - 1);
    let (flat_idx, flat_valid) = st.expr_node(&flat);
    for (pos, want) in naive.elems.iter().enumerate() {
        let c = coords(&naive.shape, pos);
        let env = |name: &str| match name {
            "flat" => pos as i64,
            _ => {
                c[names
                    .iter()
                    .position(|n| n == name)
                    .expect("an index variable")] as i64
            }
        };
        for (idx, valid) in [(&idx, &valid), (&flat_idx, &flat_valid)] {
            let (i, v) = (idx.eval(&env), valid.eval(&env));
            assert!(
                valid.min() <= v && v <= valid.max(),
                "valid bounds {valid:?}"
            );
            let got = (v == 1).then_some(i);
            assert_eq!(
                got,
                want.map(|w| w as i64),
                "at {c:?}: {idx} if {valid}, {st:?} after {context:?}"
            );
            assert!(idx.min() <= i && i <= idx.max(), "index bounds {idx:?}");
        }
        assert_eq!(
            st.index_of(&c),
            *want,
            "index_of at {c:?}: {st:?} after {context:?}"
        );
    }
}

/// Checks `real_strides` and `axis_is_masked` on neighbouring elements: a stride is the
/// distance between the indices of valid neighbours, and (unless validity is ignored) says
/// the axis is unmasked, as `axis_is_masked` does.
fn check_strides(st: &ShapeTracker, naive: &Naive, context: &dyn std::fmt::Debug) {
    let shape = &naive.shape;
    for ignore_valid in [false, true] {
        let strides = st.real_strides(ignore_valid);
        assert_eq!(strides.len(), shape.len());
        for (axis, stride) in strides.iter().enumerate() {
            let masked = st.axis_is_masked(axis);
            assert!(
                !masked || ignore_valid || stride.is_none(),
                "{st:?} after {context:?}"
            );
            for (pos, elem) in naive.elems.iter().enumerate() {
                let mut next = coords(shape, pos);
                next[axis] += 1;
                if next[axis] == shape[axis] {
                    continue;
                }
                let other = naive.elems[flat_of(shape, &next)];
                let why = || format!("axis {axis} at {pos} of {st:?} after {context:?}");
                if !masked {
                    assert_eq!(elem.is_some(), other.is_some(), "validity, {}", why());
                }
                if let (&Some(s), &Some(a), Some(b)) = (stride, elem, other) {
                    assert_eq!(b as i64 - a as i64, s, "stride {strides:?}, {}", why());
                }
            }
        }
    }
}
