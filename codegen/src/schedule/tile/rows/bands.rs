//! The rows each kernel of a run needs and computes per band. With rows kept (line buffers),
//! a band computes only the rows of each tensor between the kernels that the band before did
//! not: the rows both need stay in the band's buffer, moved to its start first.

use super::{accesses, span, Run};
use crate::schedule::Schedule;

/// One band of a run. Per kernel: the rows of its output that the next kernel reads for the
/// band (`needed`, lying in its band buffer from the first of them on), and the rows it
/// computes (`computed`: the needed rows the band before did not leave in the buffer). Per
/// buffer between kernels: the copies, before its kernel runs, that move the rows kept from
/// the band before to the buffer's start, as (from row, to row, rows) in the buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Band {
    pub needed: Vec<(usize, usize)>,
    pub computed: Vec<(usize, usize)>,
    pub copies: Vec<Vec<(usize, usize, usize)>>,
}

impl Run {
    /// The bands of `band` rows of the last kernel's output, rows kept from one band to the
    /// next where `keep` (a kernel may then compute no rows in a band); `None` where the rows
    /// a band needs go back before those of the band before.
    pub(super) fn bands(&self, s: &Schedule, band: usize, keep: bool) -> Option<Vec<Band>> {
        let count = self.layers.last()?.1.count;
        let mut out: Vec<Band> = Vec::new();
        for i in 0..count.div_ceil(band.max(1)) {
            let rows = (i * band, ((i + 1) * band).min(count));
            let before = out.last().filter(|_| keep);
            out.push(self.band(s, rows, before)?);
        }
        Some(out)
    }

    /// The band of output rows `last`, after band `before` if rows are kept.
    fn band(&self, s: &Schedule, last: (usize, usize), before: Option<&Band>) -> Option<Band> {
        let n = self.layers.len();
        let mut needed = vec![(0, 0); n];
        let mut copies = vec![Vec::new(); n];
        needed[n - 1] = last;
        let mut computed = needed.clone();
        for k in (1..n).rev() {
            // A band that computes only rows of a padded border reads none: where rows are
            // kept, the kernels before it then compute none in that band.
            let (lo, hi) = match (self.read_rows(s, k, computed[k]), before) {
                (Some(rows), _) => rows,
                (None, Some(b)) => (b.needed[k - 1].1, b.needed[k - 1].1),
                (None, None) => return None,
            };
            needed[k - 1] = (lo, hi);
            computed[k - 1] = (lo, hi);
            if let Some(b) = before {
                let (was_lo, was_hi) = b.needed[k - 1];
                if lo < was_lo || hi < was_hi {
                    return None;
                }
                computed[k - 1] = (lo.max(was_hi), hi);
                let (kept, shift) = (was_hi.saturating_sub(lo), lo - was_lo);
                let mut j = 0;
                while shift > 0 && j < kept {
                    let rows = shift.min(kept - j);
                    copies[k - 1].push((j + shift, j, rows));
                    j += rows;
                }
            }
            if computed[k - 1].0 > computed[k - 1].1 || (before.is_none() && lo == hi) {
                return None;
            }
        }
        Some(Band {
            needed,
            computed,
            copies,
        })
    }

    /// The rows of the buffer before kernel `k` that it reads to compute rows `rows` of its
    /// output; `None` if it reads none.
    fn read_rows(&self, s: &Schedule, k: usize, rows: (usize, usize)) -> Option<(usize, usize)> {
        if rows.0 >= rows.1 {
            return None;
        }
        let item = &s.items[self.start + k];
        let mid = self.layers[k - 1].0;
        let numel = s.buffers[mid.0 as usize].numel();
        let cut = self.shrink(k, rows);
        let spans = accesses(&item.ast[0])
            .into_iter()
            .filter(|(arg, _)| arg.is_some_and(|a| item.bufs[a as usize] == mid))
            .filter_map(|(_, st)| span(&cut(&st), numel));
        let (lo, hi) = spans.reduce(|a, b| (a.0.min(b.0), a.1.max(b.1)))?;
        let stride = self.layers[k - 1].1.stride;
        Some(((lo / stride) as usize, (hi / stride) as usize + 1))
    }
}
