//! Below the liveness bound: a kernel whose input dies where it is read may write its output
//! over that input, shifted so that no byte is written before its last read
//! ([`Kernel::overlap_shift`]). A depthwise convolution's output trails its input by a row, a
//! padding kernel's copy lands a row ahead of its source, a pointwise convolution that widens
//! the channels starts its output just before its input ends. The pair then needs the bytes
//! of the larger and the shift, not the sum of both.
//!
//! A kernel whose output is larger than its input does better backwards, and one that
//! INTERIOR split into boxes does better in one loop nest: [`oriented`] turns it
//! ([`Kernel::backwards`], [`Kernel::in_one_nest`]) where that makes the pair smaller. Run
//! backwards, a padding's output starts at its input, ahead of the reads.
//!
//! Overlapping takes `restrict` from the pair's pointers and ties the two buffers' places, so
//! the planner keeps only the pairs that make the arena smaller.

use super::{dying_inputs, plan_with, ArenaPlan, Dying, InPlace, Slack, ALIGN, SWAPS};
use crate::kernel::Kernel;
use crate::schedule::ast::ArgId;
use crate::schedule::Schedule;

/// Swaps of the local search while pairs are being chosen; the final plan gets [`SWAPS`].
const QUICK_SWAPS: usize = 50;

/// The shift at which kernel `k` of step `d.step` may write its output over its dying input
/// with the fewest bytes for the two ([`Kernel::overlap_shift`]: at most its `below` and at
/// most 0, or at least its `above` and at least 0, on [`ALIGN`]), those bytes, and which
/// other shifts the kernel allows.
fn pair_shift(s: &Schedule, d: &Dying, k: &Kernel) -> Option<(i64, i64, Slack)> {
    let o = k.overlap_shift(ArgId(d.arg as u32))?;
    let (src, out) = (
        s.buffers[d.src.0 as usize].bytes(),
        s.buffers[d.out.0 as usize].bytes(),
    );
    let (src, out, align) = (src as i64, out as i64, ALIGN as i64);
    let below = o.below.min(0).div_euclid(align) * align;
    let above = (o.above.max(0) + align - 1).div_euclid(align) * align;
    let hull = |shift: i64| src.max(shift + out) - shift.min(0);
    [(below, Slack::Down), (above, Slack::Up)]
        .into_iter()
        .map(|(x, slack)| (x, hull(x), slack))
        .min_by_key(|x| x.1)
}

/// The kernels of `s`, each that may write its output over a dying input in fewer bytes run
/// backwards ([`Kernel::backwards`]), in one loop nest ([`Kernel::in_one_nest`]) or both,
/// turned so: the fewest bytes, then the first of those forms.
pub fn oriented(s: &Schedule, kernels: &[Kernel]) -> Vec<Kernel> {
    let dying = dying_inputs(s);
    let fewest = |step: usize, k: &Kernel| {
        (dying.iter().filter(|d| d.step == step))
            .filter_map(|d| pair_shift(s, d, k).map(|x| x.1))
            .min()
    };
    (kernels.iter().enumerate())
        .map(|(step, k)| {
            // A step with no dying input keeps its kernel: no other form is made.
            let Some(mut fewest_yet) = fewest(step, k) else {
                return k.clone();
            };
            let mut best = k.clone();
            let nest = k.in_one_nest();
            let others = [
                k.backwards(),
                nest.as_ref().and_then(Kernel::backwards),
                nest,
            ];
            for form in others.into_iter().flatten() {
                if let Some(bytes) = fewest(step, &form).filter(|&b| b < fewest_yet) {
                    (fewest_yet, best) = (bytes, form);
                }
            }
            best
        })
        .collect()
}

/// The steps of `s` (their kernels `kernels`, as compiled) that may write their output over a
/// dying input at a shift where the two would share at least one byte: the shift of the fewest
/// bytes for the two ([`Kernel::overlap_shift`]'s `below` on [`ALIGN`] and at most 0, or its
/// `above` on [`ALIGN`] and at least 0), with the other shifts it allows.
pub fn overlap_pairs(s: &Schedule, kernels: &[Kernel]) -> Vec<InPlace> {
    let mut pairs: Vec<InPlace> = Vec::new();
    for d in dying_inputs(s) {
        let Some(k) = kernels.get(d.step) else {
            continue;
        };
        let Some((shift, _, slack)) = pair_shift(s, &d, k) else {
            continue;
        };
        let src_bytes = s.buffers[d.src.0 as usize].bytes() as i64;
        let out_bytes = s.buffers[d.out.0 as usize].bytes() as i64;
        if shift + out_bytes > 0 && shift < src_bytes {
            pairs.push(InPlace {
                step: d.step,
                until: d.step,
                out: d.out,
                src: d.src,
                shift,
                slack,
            });
        }
    }
    pairs
}

/// The smallest arena found for `s` with the pairs of `in_place` and any of `overlaps`
/// ([`overlap_pairs`]): every pair that does not share a buffer with one before it, then
/// each dropped where the arena (then the liveness bound) is smaller without it; the plan
/// without any overlap when that is as small. (Pairs added one at a time would stall where
/// several steps reach the peak: no one pair lowers it.)
pub fn plan_arena_min(s: &Schedule, in_place: &[InPlace], overlaps: &[InPlace]) -> ArenaPlan {
    let cost = |p: &ArenaPlan| (p.arena_bytes, p.lower_bound);
    let mut chosen = in_place.to_vec();
    for c in overlaps {
        if !chosen.iter().any(|p| p.src == c.src || p.out == c.out) {
            chosen.push(*c);
        }
    }
    let mut best = plan_with(s, &chosen, QUICK_SWAPS);
    for c in overlaps.iter().rev() {
        let Some(at) = chosen.iter().position(|p| p == c) else {
            continue;
        };
        let mut trial = chosen.clone();
        trial.remove(at);
        let plan = plan_with(s, &trial, QUICK_SWAPS);
        if cost(&plan) < cost(&best) {
            (chosen, best) = (trial, plan);
        }
    }
    let apart = plan_with(s, in_place, SWAPS);
    let min = plan_with(s, &chosen, SWAPS);
    match cost(&min) < cost(&apart) {
        true => min,
        false => apart,
    }
}

#[cfg(test)]
mod tests;
