//! The `ShapeTracker`: movement ops as a stack of views, turned into index expressions.

use super::view::merge;
use super::{Node, NodeKind, View};

/// A movement op that does not fit the shape it is applied to.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum ShapeError {
    #[error("{op}: {got} arguments for the {} axes of shape {shape:?}", .shape.len())]
    Rank {
        op: &'static str,
        shape: Vec<usize>,
        got: usize,
    },
    #[error("permute: axis {axis} is out of range for rank {rank}")]
    PermuteAxis { axis: usize, rank: usize },
    #[error("permute: axis {axis} appears more than once in {axes:?}")]
    PermuteRepeat { axis: usize, axes: Vec<usize> },
    #[error("reshape: shape {from:?} has {from_size} elements, {to:?} has {to_size}")]
    ReshapeSize {
        from: Vec<usize>,
        to: Vec<usize>,
        from_size: usize,
        to_size: usize,
    },
    #[error("expand: axis {axis} has size {from}, which cannot grow to {to} (only size 1 can)")]
    Expand { axis: usize, from: usize, to: usize },
    #[error("shrink: range {begin}..{end} does not fit axis {axis} of size {size}")]
    Shrink {
        axis: usize,
        begin: usize,
        end: usize,
        size: usize,
    },
    #[error("stride: axis {axis} has stride 0")]
    ZeroStride { axis: usize },
}

/// A tensor's shape over a flat buffer, as a stack of views: each view's elements are the
/// row-major positions of the view below it, and the first view addresses the buffer.
/// Movement ops change the last view and never copy data. `views` is never empty.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ShapeTracker {
    pub views: Vec<View>,
}

impl ShapeTracker {
    /// A contiguous buffer of `shape`.
    pub fn from_shape(shape: &[usize]) -> Self {
        ShapeTracker {
            views: vec![View::new(shape, None, 0, None)],
        }
    }

    fn last(&self) -> &View {
        self.views
            .last()
            .expect("a shape tracker has at least one view")
    }

    fn with_last(&self, view: View) -> Self {
        let mut views = self.views.clone();
        *views
            .last_mut()
            .expect("a shape tracker has at least one view") = view;
        ShapeTracker { views }
    }

    pub fn shape(&self) -> &[usize] {
        &self.last().shape
    }

    /// The number of elements of the shape.
    pub fn size(&self) -> usize {
        self.last().size()
    }

    /// Whether the tracker reads the buffer in order: one contiguous view.
    pub fn contiguous(&self) -> bool {
        self.views.len() == 1 && self.last().contiguous
    }

    /// Whether the tracker reaches each element of a buffer of its size exactly once: one
    /// unmasked view whose strides order its axes into a row-major layout (a contiguous view,
    /// or one with its axes permuted, as a channels-last layout is).
    pub fn is_permutation(&self) -> bool {
        let [v] = self.views.as_slice() else {
            return false;
        };
        if v.mask.is_some() || v.offset != 0 {
            return false;
        }
        let mut axes: Vec<(i64, usize)> = (v.shape.iter().zip(&v.strides))
            .filter(|(&n, _)| n > 1)
            .map(|(&n, &s)| (s, n))
            .collect();
        axes.sort_unstable();
        let mut step = 1i64;
        for (stride, n) in axes {
            if stride != step {
                return false;
            }
            step *= n as i64;
        }
        true
    }

    fn check_rank(&self, op: &'static str, got: usize) -> Result<(), ShapeError> {
        if got == self.shape().len() {
            return Ok(());
        }
        let shape = self.shape().to_vec();
        Err(ShapeError::Rank { op, shape, got })
    }

    /// `self` seen through `outer` (a view over `self`'s shape).
    pub fn compose(&self, outer: &ShapeTracker) -> ShapeTracker {
        let mut views = self.views.clone();
        views.extend(outer.views.iter().cloned());
        ShapeTracker { views }.simplify()
    }

    /// The same elements in row-major order under `new_shape`: folded into the last view when
    /// one view can express it, else a new view on top.
    pub fn reshape(&self, new_shape: &[usize]) -> Result<Self, ShapeError> {
        let product = |s: &[usize]| s.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d));
        let (from_size, to_size) = (self.size(), product(new_shape).unwrap_or(usize::MAX));
        if from_size != to_size {
            let (from, to) = (self.shape().to_vec(), new_shape.to_vec());
            return Err(ShapeError::ReshapeSize {
                from,
                to,
                from_size,
                to_size,
            });
        }
        if let Some(view) = self.last().reshape(new_shape) {
            return Ok(self.with_last(view));
        }
        let mut views = self.views.clone();
        views.push(View::new(new_shape, None, 0, None));
        Ok(ShapeTracker { views })
    }

    /// Reorders the axes: axis `i` of the result is axis `axes[i]`.
    pub fn permute(&self, axes: &[usize]) -> Result<Self, ShapeError> {
        self.check_rank("permute", axes.len())?;
        let rank = axes.len();
        let mut seen = vec![false; rank];
        for &axis in axes {
            if axis >= rank {
                return Err(ShapeError::PermuteAxis { axis, rank });
            }
            if std::mem::replace(&mut seen[axis], true) {
                return Err(ShapeError::PermuteRepeat {
                    axis,
                    axes: axes.to_vec(),
                });
            }
        }
        Ok(self.with_last(self.last().permute(axes)))
    }

    /// Repeats axes of size 1 up to `new_shape`; every other axis keeps its size.
    pub fn expand(&self, new_shape: &[usize]) -> Result<Self, ShapeError> {
        self.check_rank("expand", new_shape.len())?;
        let mut sizes = self.shape().iter().zip(new_shape).enumerate();
        if let Some((axis, (&from, &to))) = sizes.find(|(_, (&f, &t))| f != t && f != 1) {
            return Err(ShapeError::Expand { axis, from, to });
        }
        Ok(self.with_last(self.last().expand(new_shape)))
    }

    /// Adds `(before, after)` elements of padding to every axis; they read as invalid.
    pub fn pad(&self, arg: &[(usize, usize)]) -> Result<Self, ShapeError> {
        self.check_rank("pad", arg.len())?;
        Ok(self.with_last(self.last().pad(arg)))
    }

    /// Keeps the range `begin..end` of every axis.
    pub fn shrink(&self, arg: &[(usize, usize)]) -> Result<Self, ShapeError> {
        self.check_rank("shrink", arg.len())?;
        for (axis, (&(begin, end), &size)) in arg.iter().zip(self.shape()).enumerate() {
            if begin > end || end > size {
                return Err(ShapeError::Shrink {
                    axis,
                    begin,
                    end,
                    size,
                });
            }
        }
        Ok(self.with_last(self.last().shrink(arg)))
    }

    /// Keeps every `|m|`-th element of each axis, starting from its end (a flip) when `m` is
    /// negative.
    pub fn stride(&self, mul: &[i64]) -> Result<Self, ShapeError> {
        self.check_rank("stride", mul.len())?;
        if let Some(axis) = mul.iter().position(|&m| m == 0) {
            return Err(ShapeError::ZeroStride { axis });
        }
        Ok(self.with_last(self.last().stride(mul)))
    }

    /// Reverses the axes marked `true`.
    pub fn flip(&self, axes: &[bool]) -> Result<Self, ShapeError> {
        self.check_rank("flip", axes.len())?;
        let mul: Vec<i64> = axes.iter().map(|&flip| if flip { -1 } else { 1 }).collect();
        self.stride(&mul)
    }

    /// Folds the top views into one for as long as that is exact.
    pub fn simplify(&self) -> Self {
        let mut views = self.views.clone();
        while let [.., inner, outer] = views.as_slice() {
            let Some(view) = merge(inner, outer) else {
                break;
            };
            views.truncate(views.len() - 2);
            views.push(view);
        }
        ShapeTracker { views }
    }
}

/// `(idx // acc) % size` for each axis of `shape`, row-major: the coordinates of a flat index.
fn unravel(shape: &[usize], idx: &Node) -> Vec<Node> {
    let mut acc = 1;
    let mut coords: Vec<Node> = (shape.iter().rev())
        .map(|&size| {
            let coord = idx.div_i(acc).mod_i(size as i64);
            acc *= size as i64;
            coord
        })
        .collect();
    coords.reverse();
    coords
}

/// The buffer index and validity of the element at `idxs` of `view`, with `valid` the
/// validity already required by the views above it.
fn view_expr(view: &View, idxs: &[Node], valid: Option<Node>) -> (Node, Node) {
    let mut index = vec![Node::num(view.offset)];
    let mut conds: Vec<Node> = valid.into_iter().collect();
    for (axis, idx) in idxs.iter().enumerate() {
        let (size, stride) = (view.shape[axis], view.strides[axis]);
        if size != 1 && stride != 0 {
            index.push(idx.mul_i(stride));
        }
        if let Some(&(b, e)) = view.mask.as_ref().map(|m| &m[axis]) {
            conds.push(idx.ge_i(b as i64));
            conds.push(idx.lt_i(e as i64));
        }
    }
    (Node::sum(index), Node::and(conds))
}

/// `idx0, idx1, …`, one variable per axis of `shape` (a constant 0 for an axis of size 0 or 1).
fn default_idxs(shape: &[usize]) -> Vec<Node> {
    let var = |(i, &s): (usize, &usize)| Node::var(&format!("idx{i}"), 0, (s as i64 - 1).max(0));
    shape.iter().enumerate().map(var).collect()
}

impl ShapeTracker {
    /// The buffer index of the element at `idxs` (one node per axis), and a 0/1 node that is 1
    /// where the element exists (0 in padding), through every view. When the element can never
    /// be valid the index is -1.
    ///
    /// # Panics
    /// If `idxs` does not have one node per axis.
    pub fn expr_idxs(&self, idxs: &[Node]) -> (Node, Node) {
        let rank = self.shape().len();
        assert_eq!(
            idxs.len(),
            rank,
            "expr_idxs needs one index per axis of {:?}",
            self.shape()
        );
        let (mut idx, mut valid) = view_expr(self.last(), idxs, None);
        for view in self.views.iter().rev().skip(1) {
            if valid.max() == 0 || view.size() == 0 {
                return (Node::num(-1), Node::num(0));
            }
            let view = view.minify();
            (idx, valid) = view_expr(&view, &unravel(&view.shape, &idx), Some(valid));
        }
        (idx, valid)
    }

    /// The buffer index of every valid element, in row-major order of the shape (padding
    /// left out).
    pub fn indices(&self) -> Vec<usize> {
        let shape = self.shape().to_vec();
        let total: usize = shape.iter().product();
        let mut idx = vec![0usize; shape.len()];
        let mut out = Vec::with_capacity(total);
        for _ in 0..total {
            out.extend(self.index_of(&idx));
            for axis in (0..shape.len()).rev() {
                idx[axis] += 1;
                if idx[axis] < shape[axis] {
                    break;
                }
                idx[axis] = 0;
            }
        }
        out
    }

    /// The buffer index of the element at `idx` (one coordinate per axis), through every
    /// view: what [`ShapeTracker::expr_idxs`] gives for constant indices, computed directly.
    /// `None` where the element is padding.
    ///
    /// # Panics
    /// If `idx` does not have one coordinate per axis.
    pub fn index_of(&self, idx: &[usize]) -> Option<usize> {
        assert_eq!(
            idx.len(),
            self.shape().len(),
            "index_of needs one index per axis"
        );
        let mut coords: Vec<i64> = idx.iter().map(|&i| i as i64).collect();
        for (k, view) in self.views.iter().enumerate().rev() {
            if let Some(mask) = &view.mask {
                let outside = coords
                    .iter()
                    .zip(mask)
                    .any(|(&c, &(b, e))| c < b as i64 || c >= e as i64);
                if outside {
                    return None;
                }
            }
            let flat = coords
                .iter()
                .zip(&view.strides)
                .fold(view.offset, |acc, (&c, &s)| acc + c * s);
            if k == 0 {
                return usize::try_from(flat).ok();
            }
            let below = &self.views[k - 1].shape;
            coords = vec![0; below.len()];
            let mut rest = flat;
            for (c, &size) in coords.iter_mut().zip(below).rev() {
                *c = rest.rem_euclid(size.max(1) as i64);
                rest = rest.div_euclid(size.max(1) as i64);
            }
        }
        None
    }

    /// [`ShapeTracker::expr_idxs`] of the element at the flat row-major index `idx`.
    pub fn expr_node(&self, idx: &Node) -> (Node, Node) {
        if self.size() == 0 {
            return (Node::num(-1), Node::num(0));
        }
        self.expr_idxs(&unravel(self.shape(), idx))
    }

    /// How many elements the buffer needs: 1 + the largest index a valid element reads (0 when
    /// none is valid). Exact for one view; with several it comes from the index's bounds and
    /// may be larger than needed, never smaller.
    pub fn real_size(&self) -> usize {
        if self.size() == 0 {
            return 0;
        }
        let last = self.last();
        let ranges: Vec<(usize, usize)> = match &last.mask {
            Some(mask) if mask.iter().any(|(b, e)| b >= e) => return 0,
            Some(mask) => mask.clone(),
            None => last.shape.iter().map(|&s| (0, s)).collect(),
        };
        let var = |(i, &(b, e)): (usize, &(usize, usize))| {
            Node::var(&format!("idx{i}"), b as i64, e as i64 - 1)
        };
        let idxs: Vec<Node> = ranges.iter().enumerate().map(var).collect();
        let (idx, valid) = self.expr_idxs(&idxs);
        if valid.max() == 0 {
            return 0;
        }
        usize::try_from(idx.max() + 1).unwrap_or(0)
    }

    /// Per axis, the constant distance in the buffer between neighbouring elements, or `None`
    /// where it is not constant (or where the axis is masked, unless `ignore_valid`).
    pub fn real_strides(&self, ignore_valid: bool) -> Vec<Option<i64>> {
        let last = self.last();
        if self.views.len() == 1 && last.mask.is_none() {
            return last.strides.iter().map(|&s| Some(s)).collect();
        }
        let idxs = default_idxs(self.shape());
        let (idx, valid) = self.expr_idxs(&idxs);
        let mut strides = vec![None; idxs.len()];
        let mut tangled = Vec::new();
        let terms = match idx.kind() {
            NodeKind::Sum(terms) => terms.clone(),
            _ => vec![idx.clone()],
        };
        for term in &terms {
            let (base, stride) = match term.kind() {
                NodeKind::Mul(a, k) => (a, *k),
                _ => (term, 1),
            };
            match idxs.iter().position(|v| v == base) {
                Some(axis) => strides[axis] = Some(stride),
                None => tangled.extend(base.vars()),
            }
        }
        let (idx_vars, valid_vars) = (idx.vars(), valid.vars());
        for (stride, v) in strides.iter_mut().zip(&idxs) {
            if tangled.contains(v) || (!ignore_valid && valid_vars.contains(v)) {
                *stride = None;
            } else if !idx_vars.contains(v) {
                *stride = Some(0);
            }
        }
        strides
    }

    /// The axes whose real stride is 1.
    pub fn unit_stride_axes(&self, ignore_valid: bool) -> Vec<usize> {
        let strides = self.real_strides(ignore_valid);
        (0..strides.len())
            .filter(|&axis| strides[axis] == Some(1))
            .collect()
    }

    /// Whether the validity of an element depends on its index along `axis`.
    pub fn axis_is_masked(&self, axis: usize) -> bool {
        let (_, valid) = self.expr_idxs(&default_idxs(self.shape()));
        let name = format!("idx{axis}");
        valid
            .vars()
            .iter()
            .any(|v| matches!(v.kind(), NodeKind::Var { name: n, .. } if **n == *name))
    }
}
