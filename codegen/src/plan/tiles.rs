//! In-place loops: a loop over tiles ([`crate::schedule::tile`]) whose last kernel writes its
//! result, a tile at each iteration, over the input its earlier kernels read for the last time,
//! a tile behind: each byte of the result lands where the input was last read at that
//! iteration or before. Found by enumerating every element each iteration reads and writes.

use super::{lifetimes, InPlace, Slack, ALIGN};
use crate::schedule::ast::Op;
use crate::schedule::{BufId, BufKind, Schedule, ScheduleLoop};
use crate::shape::ShapeTracker;

/// The most shifts tried per loop, fewest bytes first.
const TRIES: usize = 256;

/// Each loop of `s` whose last kernel may write its result over a buffer that dies in the
/// loop: the shift of the fewest bytes for the two.
pub fn loop_pairs(s: &Schedule) -> Vec<InPlace> {
    let spans = lifetimes(s);
    let mut pairs = Vec::new();
    for l in &s.loops {
        let Some(access) = Access::of(s, l) else {
            continue;
        };
        if !spans
            .iter()
            .any(|p| p.buf == access.out && p.first == l.items.start)
        {
            continue;
        }
        let dying = (spans.iter())
            .filter(|p| p.last + 1 == l.items.end && p.buf != access.out)
            .filter(|p| access.reads(s, l, p.buf));
        let best = dying
            .filter_map(|p| Some((access.fewest_bytes(s, l, p.buf)?, p.buf)))
            .min_by_key(|&((_, bytes), _)| bytes);
        if let Some(((shift, _), src)) = best {
            pairs.push(InPlace {
                step: l.items.start,
                until: l.items.end - 1,
                out: access.out,
                src,
                shift,
                slack: Slack::Exact,
            });
        }
    }
    pairs
}

/// Whether the loop that pair `p` spans may write its result at `p.shift` from its source.
pub fn loop_pair_legal(s: &Schedule, p: &InPlace) -> bool {
    let Some(l) = s.loops.iter().find(|l| l.items == (p.step..p.until + 1)) else {
        return false;
    };
    let spans = lifetimes(s);
    let dies = (spans.iter()).any(|x| x.buf == p.src && x.last == p.until);
    let fresh = (spans.iter()).any(|x| x.buf == p.out && x.first == p.step);
    Access::of(s, l).is_some_and(|a| {
        a.out == p.out && dies && fresh && a.reads(s, l, p.src) && a.legal(s, l, p.src, p.shift)
    })
}

/// What a loop's last kernel writes: the buffer (first written in the loop, read nowhere in
/// it) and each byte's iteration.
struct Access {
    out: BufId,
    /// Per byte of `out`, the iteration that writes it (`usize::MAX`: none).
    written: Vec<usize>,
}

impl Access {
    fn of(s: &Schedule, l: &ScheduleLoop) -> Option<Access> {
        let last = &s.items[l.items.end - 1];
        let store = last.single_store()?;
        let window = last.bufs[store.idx.0 as usize];
        let out = s.storage(window);
        let info = &s.buffers[out.0 as usize];
        let elsewhere = (l.items.start..l.items.end - 1)
            .any(|k| s.items[k].bufs.iter().any(|&b| s.storage(b) == out));
        let read_too = (last.bufs.iter().enumerate())
            .any(|(k, &b)| k != store.idx.0 as usize && s.storage(b) == out);
        let fresh = matches!(info.kind, BufKind::Intermediate | BufKind::Output(_));
        if window == out || elsewhere || read_too || !fresh {
            return None;
        }
        let mut written = vec![usize::MAX; info.bytes()];
        for (it, byte) in bytes_at(s, window, &store.st, l.count) {
            *written.get_mut(byte)? = it;
        }
        Some(Access { out, written })
    }

    /// Whether only the loop's kernels before its last read `src`, and only through windows.
    fn reads(&self, s: &Schedule, l: &ScheduleLoop, src: BufId) -> bool {
        let kind = s.buffers[src.0 as usize].kind;
        let ok_kind = matches!(kind, BufKind::Intermediate | BufKind::Input(_));
        let last = &s.items[l.items.end - 1];
        ok_kind
            && !s.outputs.contains(&src)
            && !last.bufs.iter().any(|&b| s.storage(b) == src)
            && (l.items.clone()).any(|k| s.items[k].bufs.iter().any(|&b| s.storage(b) == src))
    }

    /// Per byte of `src`, the last iteration that reads it (`None`: never).
    fn last_reads(s: &Schedule, l: &ScheduleLoop, src: BufId) -> Vec<Option<usize>> {
        let mut last = vec![None; s.buffers[src.0 as usize].bytes()];
        for k in l.items.clone() {
            let item = &s.items[k];
            for op in item.ast[0].lazyops() {
                let Op::Load(m) = op.op() else { continue };
                let b = item.bufs[m.idx.0 as usize];
                if s.storage(b) != src {
                    continue;
                }
                for (it, byte) in bytes_at(s, b, &m.st, l.count) {
                    if let Some(x) = last.get_mut(byte) {
                        *x = (*x).max(Some(it));
                    }
                }
            }
        }
        last
    }

    /// Whether the result may lie `shift` bytes from `src`: each byte written lands outside
    /// `src` or where `src` is read at that iteration (before the last kernel runs) or before.
    fn legal(&self, s: &Schedule, l: &ScheduleLoop, src: BufId, shift: i64) -> bool {
        let last = Self::last_reads(s, l, src);
        self.fits(&last, shift)
    }

    fn fits(&self, last: &[Option<usize>], shift: i64) -> bool {
        (self.written.iter().enumerate()).all(|(w, &it)| {
            let x = w as i64 + shift;
            let read = usize::try_from(x)
                .ok()
                .and_then(|x| last.get(x).copied().flatten());
            it == usize::MAX || read.is_none_or(|r| r <= it)
        })
    }

    /// The legal shift (on [`ALIGN`]) of the fewest bytes for the result and `src`, and
    /// those bytes, if one of the [`TRIES`] fewest is legal and the two share a byte.
    fn fewest_bytes(&self, s: &Schedule, l: &ScheduleLoop, src: BufId) -> Option<(i64, i64)> {
        let last = Self::last_reads(s, l, src);
        let (x, y, a) = (last.len() as i64, self.written.len() as i64, ALIGN as i64);
        let hull = |d: i64| x.max(d + y) - d.min(0);
        let mut shifts: Vec<i64> = (-(y / a)..=(x / a)).map(|k| k * a).collect();
        shifts.retain(|&d| d + y > 0 && d < x);
        shifts.sort_by_key(|&d| (hull(d), d.abs()));
        (shifts.into_iter().take(TRIES))
            .find(|&d| self.fits(&last, d))
            .map(|d| (d, hull(d)))
    }
}

/// Each byte of buffer `b`'s storage that view `st` of `b` touches, with the iteration, over
/// `count` iterations of a loop (a window moves; any other buffer stays).
fn bytes_at(s: &Schedule, b: BufId, st: &ShapeTracker, count: usize) -> Vec<(usize, usize)> {
    let info = &s.buffers[b.0 as usize];
    let size = info.dtype.size();
    let (start, step) = match info.kind {
        BufKind::Window { start, step, .. } => (start as i64, step as i64),
        _ => (0, 0),
    };
    let elements = st.indices();
    let mut out = Vec::with_capacity(elements.len() * count * size);
    for it in 0..count {
        let base = start + step * it as i64;
        for &e in &elements {
            let at = (base + e as i64) as usize * size;
            out.extend((at..at + size).map(|byte| (it, byte)));
        }
    }
    out
}
