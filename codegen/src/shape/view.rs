//! One strided, offset and optionally masked view of a flat buffer.

mod merge;
mod reshape;

pub(super) use merge::merge;

/// A view of a flat buffer: the element at index `i` of `shape` lies at
/// `offset + Σ i[d] * strides[d]`, and exists only where `mask[d].0 <= i[d] < mask[d].1` for
/// every axis (elsewhere it reads as padding).
///
/// Build it with [`View::new`], which puts it in canonical form; the movement ops keep it there.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct View {
    pub shape: Vec<usize>,
    pub strides: Vec<i64>,
    pub offset: i64,
    /// Per axis, the valid range `begin..end`; `None` when everything is valid.
    pub mask: Option<Vec<(usize, usize)>>,
    /// Whether the view reads the buffer in order from 0 (row-major, no offset, no mask).
    pub contiguous: bool,
}

/// Row-major strides of `shape`, with 0 for axes of size 1.
pub fn strides_for_shape(shape: &[usize]) -> Vec<i64> {
    let mut strides = vec![0; shape.len()];
    let mut acc: i64 = 1;
    for (stride, &size) in strides.iter_mut().zip(shape).rev() {
        *stride = if size == 1 { 0 } else { acc };
        acc *= size as i64;
    }
    strides
}

/// Stride 0 on axes whose extent is 1.
fn canonical_strides(extents: &[usize], strides: &[i64]) -> Vec<i64> {
    extents
        .iter()
        .zip(strides)
        .map(|(&e, &s)| if e == 1 { 0 } else { s })
        .collect()
}

impl View {
    /// A view in canonical form: row-major strides when `strides` is `None`, stride 0 on axes of
    /// size 1, no mask when it covers everything, and an axis masked down to one element reads
    /// that element through the offset with stride 0. A mask empty on any axis masks out every
    /// axis; a view with no elements has stride 0 everywhere and counts as contiguous.
    ///
    /// # Panics
    /// If `strides` or `mask` do not have one entry per axis.
    pub fn new(
        shape: &[usize],
        strides: Option<&[i64]>,
        offset: i64,
        mask: Option<Vec<(usize, usize)>>,
    ) -> View {
        let rank = shape.len();
        assert!(
            strides.is_none_or(|s| s.len() == rank),
            "{strides:?} for shape {shape:?}"
        );
        assert!(
            mask.as_ref().is_none_or(|m| m.len() == rank),
            "{mask:?} for shape {shape:?}"
        );
        if shape.contains(&0) {
            let (shape, strides) = (shape.to_vec(), vec![0; rank]);
            return View {
                shape,
                strides,
                offset: 0,
                mask: None,
                contiguous: true,
            };
        }
        let row_major = strides_for_shape(shape);
        let mut strides =
            strides.map_or_else(|| row_major.clone(), |s| canonical_strides(shape, s));
        let mut offset = offset;
        let mut mask = mask.filter(|m| m.iter().zip(shape).any(|(&r, &s)| r != (0, s)));
        let contiguous = offset == 0 && mask.is_none() && strides == row_major;
        if let Some(m) = &mut mask {
            if m.iter().any(|(b, e)| b >= e) {
                *m = vec![(0, 0); rank];
                strides = vec![0; rank];
                offset = 0;
            }
            for ((b, e), stride) in m.iter().zip(&mut strides) {
                if b + 1 >= *e {
                    offset += *stride * *b as i64;
                    *stride = 0;
                }
            }
        }
        View {
            shape: shape.to_vec(),
            strides,
            offset,
            mask,
            contiguous,
        }
    }

    /// The number of elements.
    pub fn size(&self) -> usize {
        self.shape.iter().product()
    }

    /// The same elements addressed by `arg`'s ranges of each axis, which may reach outside the
    /// shape; `mask` (in the new coordinates) is intersected with the view's own mask.
    fn resize(&self, arg: &[(i64, i64)], mask: Option<Vec<(i64, i64)>>) -> View {
        let shift: i64 = self.strides.iter().zip(arg).map(|(s, (b, _))| s * b).sum();
        let moved = self.mask.as_ref().map(|old| {
            let clamp = |v: i64, (b, e): (i64, i64)| (v - b).min(e - b).max(0);
            let ranges = old.iter().zip(arg);
            ranges
                .map(|(&(mb, me), &r)| (clamp(mb as i64, r), clamp(me as i64, r)))
                .collect()
        });
        let mask: Option<Vec<(i64, i64)>> = match (mask, moved) {
            (Some(m), Some(old)) => {
                let both = m.iter().zip(&old);
                Some(
                    both.map(|(&(b1, e1), &(b2, e2))| (b1.max(b2), e1.min(e2)))
                        .collect(),
                )
            }
            (m, old) => m.or(old),
        };
        let shape: Vec<usize> = arg.iter().map(|(b, e)| (e - b) as usize).collect();
        let mask = mask.map(|m| {
            m.into_iter()
                .map(|(b, e)| (b as usize, e.max(0) as usize))
                .collect()
        });
        View::new(&shape, Some(&self.strides), self.offset + shift, mask)
    }

    /// Pads every axis with `(before, after)` masked elements.
    pub(super) fn pad(&self, arg: &[(usize, usize)]) -> View {
        if arg.iter().all(|&p| p == (0, 0)) {
            return self.clone();
        }
        let sized = arg.iter().zip(&self.shape);
        let ranges = sized
            .clone()
            .map(|(&(b, e), &s)| (-(b as i64), (s + e) as i64))
            .collect::<Vec<_>>();
        let mask = sized
            .map(|(&(b, _), &s)| (b as i64, (s + b) as i64))
            .collect();
        self.resize(&ranges, Some(mask))
    }

    /// Keeps `begin..end` of every axis; the ranges must lie within the shape.
    pub(super) fn shrink(&self, arg: &[(usize, usize)]) -> View {
        let ranges: Vec<(i64, i64)> = arg.iter().map(|&(b, e)| (b as i64, e as i64)).collect();
        self.resize(&ranges, None)
    }

    /// Repeats axes of size 1 up to `new_shape`.
    pub(super) fn expand(&self, new_shape: &[usize]) -> View {
        if self.size() == 0 {
            return View::new(new_shape, None, 0, None);
        }
        let mask = self.mask.as_ref().map(|m| {
            let axes = m.iter().zip(&self.shape).zip(new_shape);
            axes.map(|((&r, &s), &ns)| match (s == ns, r == (0, 1)) {
                (true, _) => r,
                (false, true) => (0, ns),
                (false, false) => (0, 0),
            })
            .collect()
        });
        View::new(new_shape, Some(&self.strides), self.offset, mask)
    }

    /// Reorders the axes: axis `i` of the result is axis `axes[i]` of this view.
    pub(super) fn permute(&self, axes: &[usize]) -> View {
        let shape: Vec<usize> = axes.iter().map(|&a| self.shape[a]).collect();
        let strides: Vec<i64> = axes.iter().map(|&a| self.strides[a]).collect();
        let mask = self
            .mask
            .as_ref()
            .map(|m| axes.iter().map(|&a| m[a]).collect());
        View::new(&shape, Some(&strides), self.offset, mask)
    }

    /// Keeps every `|m|`-th element of each axis, from the end when `m` is negative.
    pub(super) fn stride(&self, mul: &[i64]) -> View {
        let axes = || self.shape.iter().zip(&self.strides).zip(mul);
        let strides: Vec<i64> = axes().map(|((_, &st), &m)| st * m).collect();
        let ceil = |v: usize, m: i64| v.div_ceil(m.unsigned_abs() as usize);
        let shape: Vec<usize> = axes().map(|((&s, _), &m)| ceil(s, m)).collect();
        let flip: i64 = axes()
            .filter(|(_, &m)| m < 0)
            .map(|((&s, &st), _)| (s as i64 - 1) * st)
            .sum();
        let mask = self.mask.as_ref().map(|mask| {
            let ranges = mask.iter().zip(&self.shape).zip(mul);
            ranges
                .map(|((&(b, e), &s), &m)| match m > 0 {
                    true => (ceil(b, m), ceil(e, m)),
                    false => (ceil(s - e, m), ceil(s - b, m)),
                })
                .collect()
        });
        View::new(&shape, Some(&strides), self.offset + flip, mask)
    }

    /// The same view with its mergeable axes merged, or itself when that is not possible.
    pub(super) fn minify(&self) -> View {
        let shape: Vec<usize> = reshape::merge_dims(self).iter().map(|d| d.size).collect();
        self.reshape(&shape).unwrap_or_else(|| self.clone())
    }
}
