//! In-place loops: a loop over tiles ([`crate::schedule::tile`]) whose last kernel writes its
//! result, a tile at each iteration, over the input its earlier kernels read for the last time,
//! a tile behind: each byte of the result lands where the input was last read at that
//! iteration or before. Found by enumerating every element each iteration reads and writes.
//! Row tiles run a band of rows as several adjacent loops (the bands at the borders of their
//! own) whose last kernels write the same buffer: such a chain of loops is one loop here, its
//! iterations those of its loops one after the other.

use super::{lifetimes, InPlace, Slack, ALIGN};
use crate::schedule::ast::Op;
use crate::schedule::{BufId, BufKind, Schedule, ScheduleLoop};
use crate::shape::ShapeTracker;

/// The most bytes checked per loop and source while trying shifts, fewest bytes first: a
/// shift that fails, fails at its first byte written too early, so most cost little.
const BUDGET: usize = 1 << 22;

/// Each chain of loops (see the module) whose last kernels may write their result over a
/// buffer that dies in the chain: the shift of the fewest bytes for the two.
pub fn loop_pairs(s: &Schedule) -> Vec<InPlace> {
    let spans = lifetimes(s);
    let mut pairs = Vec::new();
    for chain in chains(s) {
        let Some(access) = Access::of(s, chain) else {
            continue;
        };
        let (start, end) = (chain[0].items.start, chain[chain.len() - 1].items.end);
        if !spans
            .iter()
            .any(|p| p.buf == access.out && p.first == start)
        {
            continue;
        }
        let dying = (spans.iter())
            .filter(|p| p.last + 1 == end && p.buf != access.out)
            .filter(|p| access.reads(s, chain, p.buf));
        let best = dying
            .filter_map(|p| Some((access.fewest_bytes(s, chain, p.buf)?, p.buf)))
            .min_by_key(|&((_, bytes), _)| bytes);
        if let Some(((shift, _), src)) = best {
            pairs.push(InPlace {
                step: start,
                until: end - 1,
                out: access.out,
                src,
                shift,
                slack: Slack::Exact,
            });
        }
    }
    pairs
}

/// Whether the chain of loops that pair `p` spans may write its result at `p.shift` from its
/// source.
pub fn loop_pair_legal(s: &Schedule, p: &InPlace) -> bool {
    let Some(chain) = chains(s)
        .into_iter()
        .find(|c| c[0].items.start == p.step && c[c.len() - 1].items.end == p.until + 1)
    else {
        return false;
    };
    let spans = lifetimes(s);
    let dies = (spans.iter()).any(|x| x.buf == p.src && x.last == p.until);
    let fresh = (spans.iter()).any(|x| x.buf == p.out && x.first == p.step);
    Access::of(s, chain).is_some_and(|a| {
        a.out == p.out
            && dies
            && fresh
            && a.reads(s, chain, p.src)
            && a.legal(s, chain, p.src, p.shift)
    })
}

/// The storage a loop's last kernel writes, if it writes one buffer.
fn written(s: &Schedule, l: &ScheduleLoop) -> Option<BufId> {
    let last = &s.items[l.items.end - 1];
    Some(s.storage(last.bufs[last.single_store()?.idx.0 as usize]))
}

/// The longest runs of adjacent loops of `s` whose last kernels write the same buffer.
fn chains(s: &Schedule) -> Vec<&[ScheduleLoop]> {
    let mut chains = Vec::new();
    let mut i = 0;
    while i < s.loops.len() {
        let out = written(s, &s.loops[i]);
        let mut j = i + 1;
        while j < s.loops.len()
            && s.loops[j].items.start == s.loops[j - 1].items.end
            && out.is_some()
            && written(s, &s.loops[j]) == out
        {
            j += 1;
        }
        chains.push(&s.loops[i..j]);
        i = j;
    }
    chains
}

/// What a chain of loops' last kernels write: the buffer (first written in the chain, read
/// nowhere in it) and each byte's iteration, counted across the chain.
struct Access {
    out: BufId,
    /// Per byte of `out`, the iteration that writes it (`usize::MAX`: none).
    written: Vec<usize>,
}

impl Access {
    fn of(s: &Schedule, chain: &[ScheduleLoop]) -> Option<Access> {
        let out = written(s, chain.first()?)?;
        let info = &s.buffers[out.0 as usize];
        let fresh = matches!(info.kind, BufKind::Intermediate | BufKind::Output(_));
        let mut written = vec![usize::MAX; info.bytes()];
        let mut first = 0;
        for l in chain {
            let last = &s.items[l.items.end - 1];
            let store = last.single_store()?;
            let window = last.bufs[store.idx.0 as usize];
            let elsewhere = (l.items.start..l.items.end - 1)
                .any(|k| s.items[k].bufs.iter().any(|&b| s.storage(b) == out));
            let read_too = (last.bufs.iter().enumerate())
                .any(|(k, &b)| k != store.idx.0 as usize && s.storage(b) == out);
            let moves = window != out || l.count == 1;
            if !moves || elsewhere || read_too || !fresh {
                return None;
            }
            for (it, byte) in bytes_at(s, window, &store.st, first..first + l.count) {
                *written.get_mut(byte)? = it;
            }
            first += l.count;
        }
        Some(Access { out, written })
    }

    /// Whether the chain's kernels read `src`, an intermediate buffer or a model input, and
    /// none writes it (a band buffer that keeps rows from one band to the next is written).
    fn reads(&self, s: &Schedule, chain: &[ScheduleLoop], src: BufId) -> bool {
        let kind = s.buffers[src.0 as usize].kind;
        let ok_kind = matches!(kind, BufKind::Intermediate | BufKind::Input(_));
        let touches = |k: usize| s.items[k].bufs.iter().any(|&b| s.storage(b) == src);
        let writes = |k: usize| {
            let item = &s.items[k];
            (item.single_store()).is_none_or(|m| s.storage(item.bufs[m.idx.0 as usize]) == src)
        };
        let items = || chain.iter().flat_map(|l| l.items.clone());
        ok_kind && !s.outputs.contains(&src) && items().any(touches) && !items().any(writes)
    }

    /// Per byte of `src`, the first iteration of the chain that may write over it (`None`:
    /// any): the last iteration that reads it, or the one after where a loop's last kernel
    /// reads it, since that kernel writes the result as it reads (a residual block's
    /// addition reads the block's input).
    fn last_reads(s: &Schedule, chain: &[ScheduleLoop], src: BufId) -> Vec<Option<usize>> {
        let mut last = vec![None; s.buffers[src.0 as usize].bytes()];
        let mut first = 0;
        for l in chain {
            for k in l.items.clone() {
                let item = &s.items[k];
                let after = usize::from(k + 1 == l.items.end);
                for op in item.ast[0].lazyops() {
                    let Op::Load(m) = op.op() else { continue };
                    let b = item.bufs[m.idx.0 as usize];
                    if s.storage(b) != src {
                        continue;
                    }
                    for (it, byte) in bytes_at(s, b, &m.st, first..first + l.count) {
                        if let Some(x) = last.get_mut(byte) {
                            *x = (*x).max(Some(it + after));
                        }
                    }
                }
            }
            first += l.count;
        }
        last
    }

    /// Whether the result may lie `shift` bytes from `src`: each byte written lands outside
    /// `src` or where `src` is read at that iteration (before the last kernel runs) or before.
    /// A byte the last kernel reads is written over at a later iteration only.
    fn legal(&self, s: &Schedule, chain: &[ScheduleLoop], src: BufId, shift: i64) -> bool {
        let last = Self::last_reads(s, chain, src);
        self.fits(&last, shift)
    }

    fn fits(&self, last: &[Option<usize>], shift: i64) -> bool {
        self.checked_fits(last, shift).0
    }

    /// [`Access::fits`], and how many bytes it checked.
    fn checked_fits(&self, last: &[Option<usize>], shift: i64) -> (bool, usize) {
        let fails = (self.written.iter().enumerate()).position(|(w, &it)| {
            let x = w as i64 + shift;
            let read = usize::try_from(x)
                .ok()
                .and_then(|x| last.get(x).copied().flatten());
            it != usize::MAX && read.is_some_and(|r| r > it)
        });
        (fails.is_none(), fails.map_or(self.written.len(), |k| k + 1))
    }

    /// The legal shift (on [`ALIGN`]) of the fewest bytes for the result and `src`, and
    /// those bytes, if one is legal before [`BUDGET`] bytes are checked and the two share a
    /// byte.
    fn fewest_bytes(&self, s: &Schedule, chain: &[ScheduleLoop], src: BufId) -> Option<(i64, i64)> {
        let last = Self::last_reads(s, chain, src);
        let (x, y, a) = (last.len() as i64, self.written.len() as i64, ALIGN as i64);
        let hull = |d: i64| x.max(d + y) - d.min(0);
        let mut shifts: Vec<i64> = (-(y / a)..=(x / a)).map(|k| k * a).collect();
        shifts.retain(|&d| d + y > 0 && d < x);
        shifts.sort_by_key(|&d| (hull(d), d.abs()));
        let mut spent = 0;
        for d in shifts {
            let (fits, checked) = self.checked_fits(&last, d);
            if fits {
                return Some((d, hull(d)));
            }
            spent += checked;
            if spent >= BUDGET {
                break;
            }
        }
        None
    }
}

/// Each byte of buffer `b`'s storage that view `st` of `b` touches, with the iteration, over
/// the iterations `its` of a loop (a window moves; any other buffer stays).
fn bytes_at(
    s: &Schedule,
    b: BufId,
    st: &ShapeTracker,
    its: std::ops::Range<usize>,
) -> Vec<(usize, usize)> {
    let info = &s.buffers[b.0 as usize];
    let size = info.dtype.size();
    let (start, step) = match info.kind {
        BufKind::Window { start, step, .. } => (start as i64, step as i64),
        _ => (0, 0),
    };
    let elements = touched(st);
    let mut out = Vec::with_capacity(elements.len() * its.len() * size);
    for (i, it) in its.enumerate() {
        let base = start + step * i as i64;
        for &e in &elements {
            let at = (base + e as i64) as usize * size;
            out.extend((at..at + size).map(|byte| (it, byte)));
        }
    }
    out
}

/// Each element view `st` touches, once per index along its axes that move (an axis of stride
/// 0 repeats what the others touch): what [`ShapeTracker::indices`] gives, duplicates aside,
/// for a fraction of the work on a convolution's views.
fn touched(st: &ShapeTracker) -> Vec<usize> {
    let st = st.simplify();
    let [v] = st.views.as_slice() else {
        return st.indices();
    };
    let range = |a: usize| v.mask.as_ref().map_or((0, v.shape[a]), |m| m[a]);
    if (0..v.shape.len()).any(|a| range(a).0 >= range(a).1) {
        return Vec::new();
    }
    let moving: Vec<usize> = (0..v.shape.len()).filter(|&a| v.strides[a] != 0).collect();
    let mut out = vec![v.offset];
    for &a in &moving {
        let (b, e) = range(a);
        out = (out.iter())
            .flat_map(|&x| (b..e).map(move |i| x + v.strides[a] * i as i64))
            .collect();
    }
    out.into_iter().map(|x| x as usize).collect()
}
