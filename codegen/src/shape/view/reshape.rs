//! Reshaping one view without a second one, when the strides and mask allow it.

use super::{canonical_strides, View};

/// A run of adjacent axes that can act as one.
#[derive(Clone, Copy, Debug)]
pub(super) struct MergedDim {
    /// The product of the sizes of the run.
    pub size: usize,
    /// The stride of the run's innermost axis.
    pub stride: i64,
    /// The part of `size` that moves through memory: 0 for a run of stride 0, and without
    /// leading axes of stride 0 whose mask keeps a single element.
    pub real: usize,
}

/// Merges adjacent axes where the outer stride is the inner one times the inner size, and an
/// axis that keeps a single element (of size 1, or masked down to one; its stride is 0) into
/// the axis after it.
pub(super) fn merge_dims(view: &View) -> Vec<MergedDim> {
    let (shape, strides) = (&view.shape, &view.strides);
    let single = |axis: usize| match &view.mask {
        Some(m) => m[axis].1 == m[axis].0 + 1,
        None => shape[axis] == 1,
    };
    let Some((&size, &stride)) = shape.first().zip(strides.first()) else {
        return Vec::new();
    };
    let real_of = |size: usize, stride: i64| if stride != 0 { size } else { 0 };
    let mut dims = vec![MergedDim {
        size,
        stride,
        real: real_of(size, stride),
    }];
    let mut merging = single(0);
    for axis in 1..shape.len() {
        let (size, stride) = (shape[axis], strides[axis]);
        if size == 1 {
            continue;
        }
        let last = dims.last_mut().expect("at least one run");
        if merging || last.stride == size as i64 * stride {
            let real = if merging { size } else { last.real * size };
            *last = MergedDim {
                size: last.size * size,
                stride,
                real: real_of(real, stride),
            };
        } else {
            dims.push(MergedDim {
                size,
                stride,
                real: real_of(size, stride),
            });
        }
        merging = single(axis);
    }
    dims
}

impl View {
    /// The view with `new_shape` (of the same size) reading the same elements, or `None` when
    /// one view cannot express it.
    pub(in crate::shape) fn reshape(&self, new_shape: &[usize]) -> Option<View> {
        if self.shape == new_shape {
            return Some(self.clone());
        }
        if self.size() == 0 {
            return Some(View::new(new_shape, None, 0, None));
        }
        let empty = |m: &Vec<(usize, usize)>| m.iter().any(|(b, e)| b == e);
        if new_shape.is_empty() && self.mask.as_ref().is_some_and(empty) {
            return None;
        }
        if self.contiguous {
            return Some(View::new(new_shape, None, 0, None));
        }
        let strides = reshape_strides(self, new_shape)?;
        let Some(mask) = &self.mask else {
            return Some(View::new(new_shape, Some(&strides), self.offset, None));
        };
        let new_mask = reshape_mask(mask, &self.shape, new_shape)?;
        let extents: Vec<usize> = new_mask.iter().map(|(b, e)| e - b).collect();
        let new_strides = canonical_strides(&extents, &strides);
        let start = |m: &[(usize, usize)], st: &[i64]| -> i64 {
            m.iter().zip(st).map(|(&(b, _), s)| b as i64 * s).sum()
        };
        let offset = self.offset + start(mask, &self.strides) - start(&new_mask, &new_strides);
        Some(View::new(
            new_shape,
            Some(&new_strides),
            offset,
            Some(new_mask),
        ))
    }
}

/// Strides for `new_shape` that follow the merged runs of `view`, or `None` when an axis of
/// `new_shape` would straddle two runs.
fn reshape_strides(view: &View, new_shape: &[usize]) -> Option<Vec<i64>> {
    let mut strides = Vec::with_capacity(new_shape.len());
    let mut new_dims = new_shape.iter().rev();
    for dim in merge_dims(view).into_iter().rev() {
        let (mut acc, mut stride) = (1, dim.stride);
        while acc < dim.size {
            let Some(&size) = new_dims.next() else { break };
            strides.push(stride);
            if size != 1 {
                acc *= size;
                stride *= if acc < dim.real { size as i64 } else { 0 };
            }
        }
        if acc != dim.size {
            return None;
        }
    }
    strides.resize(new_shape.len(), 0);
    strides.reverse();
    Some(strides)
}

/// The mask of `shape` carried over to `new_shape`, or `None` when a new axis would cut across
/// the masked range. A mask with an empty range stays empty everywhere.
fn reshape_mask(
    mask: &[(usize, usize)],
    shape: &[usize],
    new_shape: &[usize],
) -> Option<Vec<(usize, usize)>> {
    let empty = Some(vec![(0, 0); new_shape.len()]);
    let (mut old_masks, mut old_dims) = (mask.iter().rev().copied(), shape.iter().rev().copied());
    let mut new_dims = new_shape.iter().rev().copied();
    let mut new_mask = Vec::with_capacity(new_shape.len());
    let (mut stride, mut old_dim) = (1, old_dims.next().unwrap_or(1));
    let mut new_dim = new_dims.next().unwrap_or(1);
    let mut range = old_masks.next().unwrap_or((0, 1));
    if range.0 >= range.1 {
        return empty;
    }
    while new_mask.len() < new_shape.len() {
        let (b, e) = range;
        let next_stride = new_dim * stride;
        if old_dim == next_stride {
            new_mask.push((b / stride, (e - 1) / stride + 1));
            (stride, old_dim) = (1, old_dims.next().unwrap_or(1));
            new_dim = new_dims.next().unwrap_or(1);
            range = old_masks.next().unwrap_or((0, 1));
            if range.0 >= range.1 {
                return empty;
            }
        } else if old_dim > next_stride {
            let crosses = (b % next_stride != 0 || e % next_stride != 0)
                && b / next_stride != (e - 1) / next_stride;
            if crosses || old_dim % next_stride != 0 {
                return None;
            }
            new_mask.push((b % next_stride / stride, (e - 1) % next_stride / stride + 1));
            stride = next_stride;
            new_dim = new_dims.next().unwrap_or(1);
        } else {
            // The new axis spans several old ones: merge the next old axis into this one.
            let next = old_masks.next().unwrap_or((0, 1));
            if range != (0, old_dim) && next.1 != next.0 + 1 {
                return None;
            }
            range = (next.0 * old_dim + b, next.1.checked_sub(1)? * old_dim + e);
            old_dim *= old_dims.next()?;
        }
    }
    // Leftover old axes have size 1; one masked out empties the view (a hand-built view may
    // have an empty range on one axis only).
    if old_masks.any(|r| r != (0, 1)) {
        return empty;
    }
    new_mask.reverse();
    Some(new_mask)
}
