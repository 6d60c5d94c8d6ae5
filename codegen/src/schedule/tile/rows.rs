//! Row tiles, for `--memory min`: a run of consecutive kernels, each reading the output of the
//! one before it and nothing reading those outputs elsewhere, computed a band of rows of the
//! last kernel's output at a time. For each band, every kernel of the run computes the rows of
//! its output that the next one reads for that band into a buffer that holds one band of them:
//! the tensors between the kernels never exist whole. The rows two bands share are either
//! computed again (the halo recomputed) or kept in the buffer (line buffers).
//!
//! The rows of a buffer are its outermost axis (an int8 model's `[1, H, W, C]` images, or a
//! float model's once stored channels-last), so the rows a kernel reads follow from the first
//! and last element each of its views reads. Bands that differ only in where they read and
//! write (the bands clear of the padded borders) run as one loop, with windows that move a
//! band at each iteration; the others run as loops of one iteration of their own. Each band
//! evaluates the kernels' ASTs on a range of their rows: the operations, and their order per
//! output, are those of the untiled kernels.

use super::{accesses, single};
use crate::schedule::ast::LazyOp;
use crate::schedule::{BufId, BufKind, BufferInfo, Schedule, ScheduleItem, ScheduleLoop};
use crate::shape::{Node, ShapeTracker, View};
use std::ops::Range;

/// The rows of a kernel's output: the axis of the kernel's shape that walks them, how many
/// there are, and how many elements apart they lie (the buffer's outermost axis).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Rows {
    axis: usize,
    count: usize,
    stride: i64,
}

/// A run of kernels to tile: per kernel, the buffer it writes and that buffer's rows.
struct Run {
    start: usize,
    layers: Vec<(BufId, Rows)>,
}

/// One kernel on one band: its AST cut to the band's rows, each view of an argument moved to
/// start at that argument's base, and per argument the base (`None` for a buffer between two
/// kernels of the run, which becomes a band buffer) and the elements its views span from it.
#[derive(Clone, Debug)]
struct Cut {
    ast: LazyOp,
    bases: Vec<Option<i64>>,
    extents: Vec<usize>,
}

/// `s` with the kernels of `run` computed `band` rows of the last one's output at a time
/// (see the module), the rows two bands share kept from one to the next where `keep`, or
/// `None` where row tiles do not apply to them.
pub fn tile_rows(s: &Schedule, run: Range<usize>, band: usize, keep: bool) -> Option<Schedule> {
    let r = Run::of(s, run.clone())?;
    let bands = r.bands(s, band, keep)?;
    let cuts: Vec<Vec<Cut>> = (bands.iter())
        .map(|b| (0..r.layers.len()).map(|k| r.cut(s, k, b)).collect())
        .collect();
    r.emit(s, &bands, &cuts, keep)
}

/// The operations a kernel performs, as row tiles count them: the elements of its largest
/// view (a reduce's, whose shape holds the reduced axes: its multiply-accumulates).
pub fn kernel_ops(item: &ScheduleItem) -> usize {
    (accesses(&item.ast[0]).iter())
        .map(|(_, st)| st.shape().iter().product::<usize>())
        .max()
        .unwrap_or(0)
}

/// The operations ([`kernel_ops`]) that `run`'s kernels tiled in bands of `band` rows (rows
/// kept where `keep`) perform beyond those of the untiled kernels (the recomputed halo), or
/// `None` where row tiles do not apply.
pub fn row_tile_extra_ops(
    s: &Schedule,
    run: Range<usize>,
    band: usize,
    keep: bool,
) -> Option<usize> {
    let r = Run::of(s, run.clone())?;
    let per_row: Vec<usize> = (0..r.layers.len())
        .map(|k| kernel_ops(&s.items[r.start + k]) / r.layers[k].1.count)
        .collect();
    let tiled: usize = (r.bands(s, band, keep)?.iter())
        .flat_map(|b| b.computed.iter().zip(&per_row))
        .map(|(&(lo, hi), ops)| (hi - lo) * ops)
        .sum();
    let whole: usize = (r.layers.iter().zip(&per_row))
        .map(|((_, rows), ops)| rows.count * ops)
        .sum();
    Some(tiled.saturating_sub(whole))
}

/// The rows of the buffer `item` writes, if it writes one through one unmasked view that
/// starts at its first element and walks its outermost axis, and every view of the kernel
/// has that axis.
fn rows_of(s: &Schedule, item: &ScheduleItem) -> Option<(BufId, Rows)> {
    let store = item.single_store()?;
    let out = item.bufs[store.idx.0 as usize];
    let v = single(&store.st)?;
    let numel = s.buffers[out.0 as usize].numel() as i64;
    let axis = (0..v.shape.len())
        .filter(|&a| v.shape[a] > 1)
        .max_by_key(|&a| v.strides[a])?;
    let (count, stride) = (v.shape[axis], v.strides[axis]);
    let inner: i64 = (0..v.shape.len())
        .filter(|&a| a != axis)
        .map(|a| v.strides[a] * (v.shape[a] as i64 - 1))
        .sum();
    let walks = v.mask.is_none()
        && v.offset == 0
        && v.strides.iter().all(|&x| x >= 0)
        && stride * count as i64 == numel
        && inner < stride;
    let every_view = accesses(&item.ast[0])
        .iter()
        .all(|(_, st)| st.shape().get(axis) == Some(&count));
    (walks && every_view).then_some((
        out,
        Rows {
            axis,
            count,
            stride,
        },
    ))
}

/// The first and last element of a buffer of `numel` elements that a view reads, `None` if
/// it reads none. Exact for one view; for several, the bounds of its index expression (where
/// a padding reads nothing, a bound may lie further out), cut to the buffer.
fn span(st: &ShapeTracker, numel: usize) -> Option<(i64, i64)> {
    if let [v] = st.views.as_slice() {
        let (mut lo, mut hi) = (v.offset, v.offset);
        for a in 0..v.shape.len() {
            let (b, e) = v.mask.as_ref().map_or((0, v.shape[a]), |m| m[a]);
            if b >= e.min(v.shape[a]) {
                return None;
            }
            let (x, y) = (v.strides[a] * b as i64, v.strides[a] * (e as i64 - 1));
            lo += x.min(y);
            hi += x.max(y);
        }
        return Some((lo, hi));
    }
    if st.shape().contains(&0) {
        return None;
    }
    let idxs: Vec<Node> = (st.shape().iter().enumerate())
        .map(|(a, &n)| Node::var(&format!("r{a}"), 0, n as i64 - 1))
        .collect();
    let (idx, valid) = st.expr_idxs(&idxs);
    let (lo, hi) = (idx.min().max(0), idx.max().min(numel as i64 - 1));
    (valid.max() != 0 && lo <= hi).then_some((lo, hi))
}

/// `st` moved `by` elements back in its buffer.
fn moved(st: &ShapeTracker, by: i64) -> ShapeTracker {
    let mut views = st.views.clone();
    if let (false, Some(v)) = (by == 0, views.first_mut()) {
        *v = View::new(&v.shape, Some(&v.strides), v.offset - by, v.mask.clone());
    }
    ShapeTracker { views }
}

impl Run {
    /// The run of kernels `run` of `s`, if row tiles apply to it: two or more kernels, in no
    /// loop, each with rows ([`rows_of`]), each but the last writing an intermediate buffer
    /// that only the next reads, the last's output touched by no other kernel of the run, and
    /// no argument a window.
    fn of(s: &Schedule, run: Range<usize>) -> Option<Run> {
        if run.len() < 2 || run.end > s.items.len() || run.clone().any(|k| s.loop_of(k).is_some()) {
            return None;
        }
        let layers: Vec<(BufId, Rows)> = (run.clone())
            .map(|k| rows_of(s, &s.items[k]))
            .collect::<Option<_>>()?;
        let users = |b: BufId| {
            (s.items.iter().enumerate())
                .filter(|(_, item)| item.bufs.contains(&b))
                .map(|(k, _)| k)
                .collect::<Vec<_>>()
        };
        let windowed = |b: BufId| {
            (s.buffers.iter()).any(|x| matches!(x.kind, BufKind::Window { of, .. } if of == b))
        };
        let between = layers[..layers.len() - 1]
            .iter()
            .enumerate()
            .all(|(k, (b, _))| {
                let at = run.start + k;
                s.buffers[b.0 as usize].kind == BufKind::Intermediate
                    && users(*b) == [at, at + 1]
                    && !windowed(*b)
                    && s.items[at + 1].bufs.iter().filter(|&&x| x == *b).count() == 1
            });
        let no_windows = (run.clone()).all(|k| {
            (s.items[k].bufs.iter())
                .all(|b| !matches!(s.buffers[b.0 as usize].kind, BufKind::Window { .. }))
        });
        // Nothing else in the run touches its output: a state read before the run writes it
        // would read the new rows of the bands before.
        let out = layers[layers.len() - 1].0;
        let written_once = (run.clone())
            .filter(|&k| s.items[k].bufs.contains(&out))
            .count()
            == 1;
        (between && no_windows && written_once).then_some(Run {
            start: run.start,
            layers,
        })
    }

    /// A view of kernel `k` cut to rows `range` of its output.
    fn shrink(&self, k: usize, range: (usize, usize)) -> impl Fn(&ShapeTracker) -> ShapeTracker {
        let axis = self.layers[k].1.axis;
        move |st: &ShapeTracker| {
            let arg: Vec<(usize, usize)> = (st.shape().iter().enumerate())
                .map(|(a, &n)| if a == axis { range } else { (0, n) })
                .collect();
            st.shrink(&arg)
                .expect("every view has the rows, and the band lies within them")
                .simplify()
        }
    }

    /// Kernel `k` on `band`: its own rows those it computes, each band buffer's from the first
    /// row the band needs.
    fn cut(&self, s: &Schedule, k: usize, band: &Band) -> Cut {
        let item = &s.items[self.start + k];
        let rows = &band.needed;
        let shrink = self.shrink(k, band.computed[k]);
        let ast = item.ast[0].map_all_views(&|_, st| shrink(st));
        let views = accesses(&ast);
        let n = self.layers.len();
        let band_base = |j: usize| {
            let m = (0..n - 1).find(|&m| self.layers[m].0 == item.bufs[j])?;
            Some(rows[m].0 as i64 * self.layers[m].1.stride)
        };
        let spans = |j: usize| {
            let numel = s.buffers[item.bufs[j].0 as usize].numel();
            (views.iter())
                .filter(move |(arg, _)| *arg == Some(j as u32))
                .filter_map(move |(_, st)| span(st, numel))
        };
        let bases: Vec<Option<i64>> = (0..item.bufs.len())
            .map(|j| match band_base(j) {
                Some(_) => None,
                None => Some(spans(j).map(|x| x.0).min().unwrap_or(0)),
            })
            .collect();
        let base = |j: usize| band_base(j).or(bases[j]).unwrap_or(0);
        let extents = (0..item.bufs.len())
            .map(|j| {
                spans(j)
                    .map(|x| (x.1 - base(j) + 1) as usize)
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let ast = ast.map_all_views(&|arg, st| match arg {
            Some(j) => moved(st, base(j as usize)),
            None => st.clone(),
        });
        Cut {
            ast,
            bases,
            extents,
        }
    }

    /// The schedule with the run replaced by a loop per group of bands that differ only in
    /// their bases, each moving by the same number of elements from one band to the next.
    /// Where rows are kept, the band buffers are the run's, reached through windows (so that
    /// the planner keeps them from one iteration to the next); else each loop's own.
    fn emit(
        &self,
        s: &Schedule,
        bands: &[Band],
        cuts: &[Vec<Cut>],
        keep: bool,
    ) -> Option<Schedule> {
        let n = self.layers.len();
        let mut out = s.clone();
        let mut items = Vec::new();
        let mut loops = Vec::new();
        let shared = keep.then(|| self.band_buffers(&mut out, bands));
        for group in groups(bands, cuts) {
            let at = self.start + items.len();
            let band_bufs = match &shared {
                Some(b) => b.clone(),
                None => self.band_buffers(&mut out, &bands[group.clone()]),
            };
            for k in 0..n {
                if k + 1 < n {
                    let (buf, stride) = (band_bufs[k], self.layers[k].1.stride as usize);
                    for &copy in &bands[group.start].copies[k] {
                        items.push(copy_item(&mut out, buf, stride, copy)?);
                    }
                }
                let (lo, hi) = bands[group.start].computed[k];
                if lo < hi {
                    items.push(self.looped(&mut out, cuts, &group, k, (&band_bufs, keep))?);
                }
            }
            loops.push(ScheduleLoop {
                items: at..self.start + items.len(),
                count: group.len(),
            });
        }
        let end = self.start + n;
        let grown = items.len() - n;
        out.items.splice(self.start..end, items);
        for l in &mut out.loops {
            if l.items.start >= end {
                l.items = l.items.start + grown..l.items.end + grown;
            }
        }
        out.loops.extend(loops);
        out.loops.sort_by_key(|l| l.items.start);
        Some(out)
    }

    /// New buffers for the bands of the tensors between the run's kernels, each as large as
    /// the most rows a band of `bands` needs.
    fn band_buffers(&self, out: &mut Schedule, bands: &[Band]) -> Vec<BufId> {
        let n = self.layers.len();
        (0..n - 1)
            .map(|k| {
                let (b, rows) = self.layers[k];
                let most = (bands.iter())
                    .map(|band| band.needed[k].1 - band.needed[k].0)
                    .max()
                    .unwrap_or(0);
                let dtype = out.buffers[b.0 as usize].dtype;
                out.buffers.push(BufferInfo {
                    kind: BufKind::Intermediate,
                    dtype,
                    shape: vec![most * rows.stride as usize],
                });
                BufId(out.buffers.len() as u32 - 1)
            })
            .collect()
    }

    /// Kernel `k` of the run in the loop over the bands of `group`: its buffers between the
    /// run's kernels are `band_bufs`, the others windows that start at the group's first
    /// band's bases and move by the difference to the next band's.
    fn looped(
        &self,
        out: &mut Schedule,
        cuts: &[Vec<Cut>],
        group: &Range<usize>,
        k: usize,
        (band_bufs, keep): (&[BufId], bool),
    ) -> Option<ScheduleItem> {
        let first = &cuts[group.start][k];
        let step = |j: usize| match group.len() {
            1 => Some(0),
            _ => Some(cuts[group.start + 1][k].bases[j]? - first.bases[j]?),
        };
        let mut bufs = Vec::new();
        for (j, &b) in out.items[self.start + k].bufs.clone().iter().enumerate() {
            let band = (0..self.layers.len() - 1).find(|&m| self.layers[m].0 == b);
            bufs.push(match (band, first.bases[j]) {
                (Some(m), _) if keep => {
                    let whole = out.buffers[band_bufs[m].0 as usize].numel();
                    window(out, band_bufs[m], (0, 0, whole, 1))?
                }
                (Some(m), _) => band_bufs[m],
                (None, Some(0)) if step(j) == Some(0) => b,
                (None, Some(base)) => {
                    window(out, b, (base, step(j)?, first.extents[j], group.len()))?
                }
                (None, None) => return None,
            });
        }
        Some(ScheduleItem {
            ast: vec![first.ast.clone()],
            bufs,
        })
    }
}

/// Consecutive bands whose kernels differ only in their bases, each base moving by the same
/// number of elements from one band to the next, and whose copies are the same.
fn groups(bands: &[Band], cuts: &[Vec<Cut>]) -> Vec<Range<usize>> {
    let same = |a: &[Cut], b: &[Cut]| {
        (a.iter().zip(b)).all(|(x, y)| x.ast == y.ast && x.extents == y.extents)
    };
    let moves = |a: &[Cut], b: &[Cut]| -> Vec<Vec<Option<i64>>> {
        (a.iter().zip(b))
            .map(|(x, y)| {
                (x.bases.iter().zip(&y.bases))
                    .map(|(p, q)| Some((*q)? - (*p)?))
                    .collect()
            })
            .collect()
    };
    let mut groups: Vec<Range<usize>> = Vec::new();
    for i in 0..cuts.len() {
        let joins = groups.last().is_some_and(|g| {
            same(&cuts[g.start], &cuts[i])
                && bands[g.start].copies == bands[i].copies
                && (g.len() < 2
                    || moves(&cuts[i - 1], &cuts[i]) == moves(&cuts[g.start], &cuts[g.start + 1]))
        });
        match (joins, groups.last_mut()) {
            (true, Some(g)) => g.end = i + 1,
            _ => groups.push(i..i + 1),
        }
    }
    groups
}

/// A kernel that copies `rows` rows of `stride` elements of `buf` from row `from` to row `to`
/// (the two ranges apart).
fn copy_item(
    out: &mut Schedule,
    buf: BufId,
    stride: usize,
    (from, to, rows): (usize, usize, usize),
) -> Option<ScheduleItem> {
    let len = rows * stride;
    let dtype = out.buffers[buf.0 as usize].dtype;
    let src = window(out, buf, ((from * stride) as i64, 0, len, 1))?;
    let dst = window(out, buf, ((to * stride) as i64, 0, len, 1))?;
    let st = ShapeTracker::from_shape(&[len]);
    Some(ScheduleItem {
        ast: vec![LazyOp::store(0, st.clone(), LazyOp::load(1, dtype, st))],
        bufs: vec![dst, src],
    })
}

/// A new window over `of`, `extent` elements from `base` at the first of `count` iterations,
/// `step` further at each next one; `None` if it would leave `of`.
pub(super) fn window(
    s: &mut Schedule,
    of: BufId,
    (base, step, extent, count): (i64, i64, usize, usize),
) -> Option<BufId> {
    let numel = s.buffers[of.0 as usize].numel() as i64;
    let lastbase = base + step * (count as i64 - 1);
    if base.min(lastbase) < 0 || base.max(lastbase) + extent as i64 > numel {
        return None;
    }
    let info = s.buffers[of.0 as usize].clone();
    s.buffers.push(BufferInfo {
        kind: BufKind::Window {
            of,
            start: base as usize,
            step: step as isize,
        },
        dtype: info.dtype,
        shape: vec![extent],
    });
    Some(BufId(s.buffers.len() as u32 - 1))
}

mod bands;
use bands::Band;

#[cfg(test)]
mod tests;
