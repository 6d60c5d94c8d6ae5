//! Below the liveness bound: a kernel whose input dies where it is read may write its output
//! over that input, shifted so that no byte is written before its last read
//! ([`Kernel::overlap_shift`]). A depthwise convolution's output trails its input by a row, a
//! padding kernel's copy lands a row ahead of its source, a pointwise convolution that widens
//! the channels starts its output just before its input ends. The pair then needs the bytes
//! of the larger and the shift, not the sum of both.
//!
//! Overlapping takes `restrict` from the pair's pointers and ties the two buffers' places, so
//! the planner keeps only the pairs that make the arena smaller.

use super::{dying_inputs, plan_with, ArenaPlan, InPlace, ALIGN, SWAPS};
use crate::kernel::Kernel;
use crate::schedule::ast::ArgId;
use crate::schedule::Schedule;

/// Swaps of the local search while pairs are being chosen; the final plan gets [`SWAPS`].
const QUICK_SWAPS: usize = 50;

/// The steps of `s` (their kernels `kernels`, as compiled) that may write their output over a
/// dying input with a shift ([`Kernel::overlap_shift`], rounded down to [`ALIGN`] and at most
/// 0), where the two would share at least one byte.
pub fn overlap_pairs(s: &Schedule, kernels: &[Kernel]) -> Vec<InPlace> {
    let mut pairs: Vec<InPlace> = Vec::new();
    for d in dying_inputs(s) {
        let Some(k) = kernels.get(d.step) else {
            continue;
        };
        let Some(shift) = k.overlap_shift(ArgId(d.arg as u32)) else {
            continue;
        };
        let shift = shift.min(0).div_euclid(ALIGN as i64) * ALIGN as i64;
        let out_bytes = s.buffers[d.out.0 as usize].bytes() as i64;
        if shift + out_bytes > 0 {
            pairs.push(InPlace {
                step: d.step,
                out: d.out,
                src: d.src,
                shift,
            });
        }
    }
    pairs
}

/// The smallest arena found for `s` with the pairs of `in_place` and any of `overlaps`
/// ([`overlap_pairs`]): pairs are added one at a time, each kept where it makes the arena
/// (then the liveness bound) smaller, until none does; the plan without any overlap when
/// that is as small.
pub fn plan_arena_min(s: &Schedule, in_place: &[InPlace], overlaps: &[InPlace]) -> ArenaPlan {
    let cost = |p: &ArenaPlan| (p.arena_bytes, p.lower_bound);
    let mut chosen = in_place.to_vec();
    let mut best = plan_with(s, &chosen, QUICK_SWAPS);
    loop {
        let mut better = false;
        for c in overlaps {
            if chosen.iter().any(|p| p.src == c.src || p.out == c.out) {
                continue;
            }
            let mut trial = chosen.clone();
            trial.push(*c);
            let plan = plan_with(s, &trial, QUICK_SWAPS);
            if cost(&plan) < cost(&best) {
                (chosen, best, better) = (trial, plan, true);
            }
        }
        if !better {
            break;
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
