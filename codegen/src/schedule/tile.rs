//! Channel tiles, for `--memory min`: an elementwise kernel and the one kernel that reads its
//! output, where each channel of the second's output needs only the same channel of the first's
//! (a padding and the depthwise convolution or pooling after it), run as a loop over the
//! channels. Each iteration computes one channel through both kernels, so the tensor between
//! them shrinks to one channel's plane, and every other buffer with a channel axis becomes a
//! window that moves one channel at each iteration. The arena planner may then write the second
//! kernel's output over the first's input, a channel at a time (TinyEngine's in-place
//! depthwise convolution).
//!
//! Each iteration evaluates the same ASTs at one index of the channel axis: the operations and
//! their order per output are those of the untiled kernels.

use super::ast::{LazyOp, Op};
use super::{BufId, BufKind, BufferInfo, Schedule, ScheduleItem, ScheduleLoop};
use crate::shape::{ShapeTracker, View};
use std::collections::HashMap;

pub mod rows;
pub use rows::{kernel_ops, row_tile_extra_ops, tile_rows};

/// `s` with each pair of consecutive kernels that channel tiles apply to (see the module) run
/// as a loop over its channels.
pub fn tile_channels(s: &Schedule) -> Schedule {
    let mut out = s.clone();
    let mut i = 0;
    while i + 1 < out.items.len() {
        match Pair::find(&out, i) {
            Some(pair) => {
                pair.apply(&mut out);
                i += 2;
            }
            None => i += 1,
        }
    }
    out.loops.sort_by_key(|l| l.items.start);
    out
}

/// Items `first` and `first + 1`: the first elementwise, storing buffer `mid` that only the
/// second reads; the channel axis of each (`axes`) has `channels` elements, and `mid` holds
/// a channel's elements `stride` apart.
struct Pair {
    first: usize,
    mid: BufId,
    axes: [usize; 2],
    channels: usize,
    stride: i64,
}

/// The one view of `st`, if it has one.
fn single(st: &ShapeTracker) -> Option<View> {
    match st.simplify().views.as_slice() {
        [v] => Some(v.clone()),
        _ => None,
    }
}

/// The stride of `st` along `axis` if every element along it is valid, and `None` otherwise.
fn axis_stride(st: &ShapeTracker, axis: usize, channels: usize) -> Option<i64> {
    let v = single(st)?;
    let unmasked = (v.mask.as_ref()).is_none_or(|m| m.get(axis) == Some(&(0, channels)));
    (v.shape.get(axis) == Some(&channels) && unmasked).then(|| v.strides[axis])
}

/// Every buffer access of a tree: argument (`None` for a constant) and view.
fn accesses(root: &LazyOp) -> Vec<(Option<u32>, ShapeTracker)> {
    (root.lazyops().iter())
        .filter_map(|op| match op.op() {
            Op::Load(m) | Op::Store(m) => Some((Some(m.idx.0), m.st.clone())),
            Op::Const(c) => Some((None, c.st.clone())),
            _ => None,
        })
        .collect()
}

impl Pair {
    fn find(s: &Schedule, first: usize) -> Option<Pair> {
        if s.loop_of(first).is_some() || s.loop_of(first + 1).is_some() {
            return None;
        }
        let (a, b) = (&s.items[first], &s.items[first + 1]);
        let (store_a, store_b) = (a.single_store()?, b.single_store()?);
        let elementwise = !(a.ast[0].lazyops().iter()).any(|op| matches!(op.op(), Op::Reduce(..)));
        let mid = a.bufs[store_a.idx.0 as usize];
        let info = &s.buffers[mid.0 as usize];
        let uses = |item: &ScheduleItem| item.bufs.iter().filter(|&&x| x == mid).count();
        let only_here = (s.items.iter().enumerate())
            .all(|(k, item)| uses(item) == usize::from(k == first || k == first + 1));
        let windowed =
            (s.buffers.iter()).any(|x| matches!(x.kind, BufKind::Window { of, .. } if of == mid));
        if !elementwise
            || info.kind != BufKind::Intermediate
            || !only_here
            || windowed
            || b.bufs[store_b.idx.0 as usize] == mid
        {
            return None;
        }
        let arg_b = b.bufs.iter().position(|&x| x == mid)? as u32;
        let numel = info.numel() as i64;
        let view_a = single(&store_a.st)?;
        (0..store_b.st.shape().len()).find_map(|axis_b| {
            let channels = store_b.st.shape()[axis_b];
            let reads = accesses(&b.ast[0]);
            let mut strides = (reads.iter()).filter(|(arg, _)| *arg == Some(arg_b));
            let stride = strides
                .next()
                .and_then(|(_, st)| axis_stride(st, axis_b, channels))?;
            let same = strides.all(|(_, st)| axis_stride(st, axis_b, channels) == Some(stride));
            let dense = stride == 1 || stride * channels as i64 == numel;
            let axis_a = (0..view_a.shape.len())
                .find(|&k| view_a.shape[k] == channels && view_a.strides[k] == stride)?;
            let pair = Pair {
                first,
                mid,
                axes: [axis_a, axis_b],
                channels,
                stride,
            };
            (channels > 1 && stride > 0 && same && dense && pair.uniform(s)).then_some(pair)
        })
    }

    /// Whether each access of both items, but those of `mid`, moves by a whole, non-negative
    /// number of elements from one channel to the next, and each of `mid` reads one plane.
    fn uniform(&self, s: &Schedule) -> bool {
        (0..2).all(|k| {
            let item = &s.items[self.first + k];
            let mut steps: HashMap<u32, i64> = HashMap::new();
            accesses(&item.ast[0]).iter().all(|(arg, st)| {
                let Some(stride) = axis_stride(st, self.axes[k], self.channels) else {
                    return false;
                };
                let zero = self.at_channel_zero(st, k);
                let Some(arg) = arg else {
                    return stride == 0;
                };
                let b = item.bufs[*arg as usize];
                let reach = stride as usize * (self.channels - 1);
                *steps.entry(*arg).or_insert(stride) == stride
                    && match b == self.mid {
                        true => self.plane(&zero).is_some(),
                        false => {
                            stride >= 0
                                && reach < s.buffers[b.0 as usize].numel()
                                && single(&zero).is_some()
                        }
                    }
            })
        })
    }

    /// `st` (of item `first + k`) at channel 0 of its channel axis.
    fn at_channel_zero(&self, st: &ShapeTracker, k: usize) -> ShapeTracker {
        let arg: Vec<(usize, usize)> = (st.shape().iter().enumerate())
            .map(|(axis, &n)| if axis == self.axes[k] { (0, 1) } else { (0, n) })
            .collect();
        st.shrink(&arg)
            .expect("the channel axis has elements")
            .simplify()
    }

    /// A view of `mid` at channel 0 as a view of one channel's plane, its elements dense.
    fn plane(&self, st: &ShapeTracker) -> Option<View> {
        let channels = self.channels as i64;
        let v = single(st)?;
        if self.stride != 1 {
            // Channels outermost: a plane is `stride` elements from channel 0's.
            let plane = ShapeTracker {
                views: vec![v.clone()],
            };
            return plane
                .indices()
                .iter()
                .all(|&e| (e as i64) < self.stride)
                .then_some(v);
        }
        let divides = |x: i64| x.rem_euclid(channels) == 0;
        (v.strides.iter().all(|&x| divides(x)) && divides(v.offset)).then(|| {
            let strides: Vec<i64> = v.strides.iter().map(|x| x / channels).collect();
            View::new(
                &v.shape,
                Some(&strides),
                v.offset / channels,
                v.mask.clone(),
            )
        })
    }

    /// Rewrites the two items as a loop over the channels.
    fn apply(&self, s: &mut Schedule) {
        let info = s.buffers[self.mid.0 as usize].clone();
        let plane = BufId(s.buffers.len() as u32);
        s.buffers.push(BufferInfo {
            kind: BufKind::Intermediate,
            dtype: info.dtype,
            shape: vec![info.numel() / self.channels],
        });
        for k in 0..2 {
            let at = self.first + k;
            let item = s.items[at].clone();
            let mut bufs = item.bufs.clone();
            let mut steps: HashMap<u32, i64> = HashMap::new();
            for (arg, st) in accesses(&item.ast[0]) {
                if let (Some(arg), Some(step)) =
                    (arg, axis_stride(&st, self.axes[k], self.channels))
                {
                    steps.insert(arg, step);
                }
            }
            for (arg, b) in bufs.iter_mut().enumerate() {
                let step = steps.get(&(arg as u32)).copied().unwrap_or(0);
                *b = match *b == self.mid {
                    true => plane,
                    false if step > 0 => window(s, *b, step as usize, self.channels),
                    false => *b,
                };
            }
            let ast = item.ast[0].map_all_views(&|arg, st| {
                let zero = self.at_channel_zero(st, k);
                match arg.map(|a| item.bufs[a as usize]) {
                    Some(b) if b == self.mid => {
                        let v = self.plane(&zero).expect("checked by uniform");
                        ShapeTracker { views: vec![v] }
                    }
                    _ => zero,
                }
            });
            s.items[at] = ScheduleItem {
                ast: vec![ast],
                bufs,
            };
        }
        s.loops.push(ScheduleLoop {
            items: self.first..self.first + 2,
            count: self.channels,
        });
    }
}

/// A new window over `of` that moves `step` elements at each of `count` iterations: from the
/// buffer's start at the first, to its end at the last.
fn window(s: &mut Schedule, of: BufId, step: usize, count: usize) -> BufId {
    let extent = s.buffers[of.0 as usize].numel() - step * (count - 1);
    rows::window(s, of, (0, step as i64, extent, count)).expect("it ends at the buffer's end")
}

#[cfg(test)]
mod tests;
