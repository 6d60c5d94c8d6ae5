//! The tiled schedules `--memory min` weighs against the untiled one: channel tiles, row
//! tiles, and both. Row tiles are chosen greedily: while a run of kernels around the step
//! that sets the liveness peak (its loops' in-place pairs counted) lowers that peak, with
//! every run's recomputed halo together within a budget of the model's operations
//! ([`MOST_OPS`]), the run, band height and form (rows kept or recomputed) that lower it most
//! are taken.

use crate::plan::{liveness_peak, loop_pairs};
use crate::schedule::tile::{kernel_ops, row_tile_extra_ops, tile_channels, tile_rows};
use crate::schedule::Schedule;
use std::ops::Range;

/// The most operations the row tiles may cost, over the untiled schedule's (their halo
/// recomputed): the greedy search runs once for each, and may end lower with less.
const MOST_OPS: [f64; 2] = [1.0, 1.2];

/// The most kernels in one run of row tiles.
const LONGEST_RUN: usize = 10;

/// The band heights tried, in rows of a run's last output.
const BANDS: [usize; 7] = [1, 2, 3, 4, 6, 8, 12];

/// The tiled forms of `s` worth planning.
pub(super) fn candidates(s: &Schedule) -> Vec<Schedule> {
    let mut out = Vec::new();
    let channels = tile_channels(s);
    if channels.loops.len() > s.loops.len() {
        out.push(channels);
    }
    let mut rows: Vec<Schedule> = Vec::new();
    for most in MOST_OPS {
        match row_tiled(s, most) {
            Some(r) if !rows.iter().any(|o| o.loops == r.loops) => rows.push(r),
            _ => {}
        }
    }
    for rows in rows {
        let both = tile_channels(&rows);
        if both.loops.len() > rows.loops.len() {
            out.push(both);
        }
        out.push(rows);
    }
    out
}

/// The liveness peak of `s`, its loops' in-place pairs counted, and the step that sets it.
fn peak(s: &Schedule) -> (usize, usize) {
    liveness_peak(s, &loop_pairs(s))
}

/// A run of kernels of the untiled schedule, tiled in bands of `band` rows (rows kept from
/// one band to the next where `keep`), at `extra` operations over the untiled kernels.
#[derive(Clone, Debug, PartialEq)]
struct Choice {
    run: Range<usize>,
    band: usize,
    keep: bool,
    extra: usize,
}

/// `s` with the runs of `choices` (no two overlapping) tiled, and per kernel of the result
/// a kernel of `s` in its run (the kernel it computes where each band holds every kernel of
/// the run once; kept rows add copies and leave kernels out of border bands, so there only
/// the run is exact).
fn apply(s: &Schedule, choices: &[Choice]) -> Option<(Schedule, Vec<usize>)> {
    let mut sorted = choices.to_vec();
    sorted.sort_by_key(|c| std::cmp::Reverse(c.run.start));
    let mut tiled = s.clone();
    let mut origin: Vec<usize> = (0..s.items.len()).collect();
    for c in sorted {
        let before = tiled.items.len();
        tiled = tile_rows(&tiled, c.run.clone(), c.band, c.keep)?;
        let region = tiled.items.len() + c.run.len() - before;
        let kernels = (0..region).map(|i| c.run.start + i % c.run.len());
        origin.splice(c.run.clone(), kernels);
    }
    Some((tiled, origin))
}

/// `s` with runs of row tiles that lower its liveness peak (see the module) at most
/// `most_ops` times the operations of `s`, if any does. Each round tries every run around the
/// kernel that sets the peak, in place of the runs chosen before that it overlaps.
fn row_tiled(s: &Schedule, most_ops: f64) -> Option<Schedule> {
    let mut chosen: Vec<Choice> = Vec::new();
    let (mut best, mut origin) = (s.clone(), (0..s.items.len()).collect::<Vec<_>>());
    let ops: usize = s.items.iter().map(kernel_ops).sum();
    let allowed = ((most_ops - 1.0) * ops as f64) as usize;
    loop {
        let (bytes, step) = peak(&best);
        let tries = runs_around(origin[step], s.items.len()).flat_map(|run| {
            let forms = BANDS
                .into_iter()
                .flat_map(|band| [(band, true), (band, false)]);
            forms.filter_map(move |(band, keep)| {
                let extra = row_tile_extra_ops(s, run.clone(), band, keep)?;
                (extra <= allowed).then(|| Choice {
                    run: run.clone(),
                    band,
                    keep,
                    extra,
                })
            })
        });
        let found = tries
            .filter_map(|c| {
                let mut with: Vec<Choice> = (chosen.iter())
                    .filter(|o| o.run.end <= c.run.start || c.run.end <= o.run.start)
                    .cloned()
                    .collect();
                with.push(c);
                if with.iter().map(|c| c.extra).sum::<usize>() > allowed {
                    return None;
                }
                let (tiled, origin) = apply(s, &with)?;
                Some((peak(&tiled).0, with, tiled, origin))
            })
            .min_by_key(|(bytes, _, tiled, _)| (*bytes, tiled.items.len()));
        match found {
            Some((lower, with, tiled, o)) if lower < bytes => {
                (chosen, best, origin) = (with, tiled, o);
            }
            _ => return (!chosen.is_empty()).then_some(best),
        }
    }
}

/// Every run of two to [`LONGEST_RUN`] of `items` kernels that holds kernel `step`.
fn runs_around(step: usize, items: usize) -> impl Iterator<Item = Range<usize>> {
    let starts = step.saturating_sub(LONGEST_RUN - 1)..=step;
    starts.flat_map(move |start| {
        let ends = (step + 1).max(start + 2)..=(start + LONGEST_RUN).min(items);
        ends.map(move |end| start..end)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;
    use crate::graph::Graph;
    use crate::schedule::schedule_for;
    use crate::target::{Memory, Target};
    use crate::tensor::Tensor;

    #[test]
    fn runs_hold_the_peak_and_stay_in_the_schedule() {
        let runs: Vec<Range<usize>> = runs_around(1, 4).collect();
        assert_eq!(runs, [0..2, 0..3, 0..4, 1..3, 1..4]);
        assert!(runs_around(12, 30).all(|r| r.contains(&12) && r.len() <= LONGEST_RUN));
    }

    /// A `[1, 8, 32, 32]` image through a pointwise convolution, a 3x3 depthwise one, a
    /// pointwise one to 32 channels (128 KB, channels-last), a 3x3 depthwise one of stride 2
    /// and a pointwise one back to 8 channels.
    fn schedule() -> Schedule {
        let mut g = Graph::new();
        let w = |g: &mut Graph, name: &str, shape: Vec<usize>| {
            let n: usize = shape.iter().product();
            let v: Vec<f32> = (0..n).map(|i| (i % 5) as f32 / 4.0).collect();
            g.weight(name, Tensor::from_f32(shape, &v).unwrap())
        };
        let x = g.input("x", DType::F32, &[1, 8, 32, 32]);
        let one = [(0, 0), (0, 0)];
        let pads = [(1, 1), (1, 1)];
        let pw0 = w(&mut g, "pw0", vec![8, 8, 1, 1]);
        let y = g.conv(&x, &pw0, None, &[1, 1], &[1, 1], &one, 1).unwrap();
        let dw0 = w(&mut g, "dw0", vec![8, 1, 3, 3]);
        let y = g.conv(&y, &dw0, None, &[1, 1], &[1, 1], &pads, 8).unwrap();
        let pw1 = w(&mut g, "pw1", vec![32, 8, 1, 1]);
        let y = g.conv(&y, &pw1, None, &[1, 1], &[1, 1], &one, 1).unwrap();
        let dw1 = w(&mut g, "dw1", vec![32, 1, 3, 3]);
        let y = g.conv(&y, &dw1, None, &[2, 2], &[1, 1], &pads, 32).unwrap();
        let pw2 = w(&mut g, "pw2", vec![8, 32, 1, 1]);
        let y = g.conv(&y, &pw2, None, &[1, 1], &[1, 1], &one, 1).unwrap();
        let target = Target::host().with_memory(Memory::Min);
        schedule_for(&g, &[y], &target).unwrap()
    }

    #[test]
    fn row_tiles_are_chosen_where_they_lower_the_peak_within_the_ops_allowed() {
        let s = schedule();
        let tiled = row_tiled(&s, 1.2).expect("a run lowers the peak");
        assert!(peak(&tiled).0 < peak(&s).0);
        assert!(!tiled.loops.is_empty());
        let candidates = candidates(&s);
        assert!(candidates.iter().any(|c| c.loops == tiled.loops));
    }
}
