//! Greedy non-max suppression as TFLM's `NonMaxSuppressionSingleClassHelper` computes it, for
//! `G` independent score rows over the same boxes at once (one row for the fast variant of
//! `TFLite_Detection_PostProcess`, one per class for the regular one).
//!
//! The boxes whose score reaches the threshold are ranked by score, ties by box index (TFLM's
//! stable merge sort); the rest rank after them. A counted loop then walks the ranks in order
//! with the still-active flags as its state: the box at rank `t` is selected when it is kept,
//! still active and fewer than `limit` are selected, and a selected box deactivates every box
//! whose intersection over union with it exceeds the threshold (0 where either area is not
//! positive). One body of code, however many boxes.

use crate::dtype::DType;
use crate::graph::loops::{LoopBody, LoopInput, LoopResult};
use crate::graph::{Graph, GraphError, Lazy};
use crate::ops::{BinaryOp, ReduceOp};

/// What NMS gives, per score row `g`, in rank order `t`.
pub(super) struct Suppressed {
    /// `[G, N(t), N(i)]` (bool): box `i` has rank `t`.
    pub order: Lazy,
    /// `[G, N, 4]`: the boxes in rank order.
    pub boxes: Lazy,
    /// `[G, N]` (f32, 0 or 1): the box at rank `t` is selected.
    pub selected: Lazy,
    /// `[G, N]` (f32): how many boxes of the row were selected before rank `t`.
    pub before: Lazy,
    /// `[G]` (f32): how many boxes of the row were selected.
    pub count: Lazy,
}

/// `Σ_i where(mask[.., i, ..], values, 0)` over `axis`: a gather by a one-hot mask that never
/// multiplies (an infinite box stays infinite, a zero stays exact).
pub(super) fn pick(
    g: &mut Graph,
    mask: &Lazy,
    values: &Lazy,
    axis: usize,
) -> Result<Lazy, GraphError> {
    let zero = g.scalar_like(values, 0.0);
    let w = g.where_(mask, values, &zero)?;
    let s = g.reduce(ReduceOp::Sum, &w, &[axis])?;
    let mut shape = s.shape().to_vec();
    shape.remove(axis);
    s.reshape(&shape)
}

/// The ranks of `keys` `[G, N]` along the last axis: larger keys first, ties by position.
pub(super) fn ranks(g: &mut Graph, keys: &Lazy) -> Result<Lazy, GraphError> {
    let (rows, n) = (keys.shape()[0], keys.shape()[1]);
    let at = g.arange(n, DType::F32);
    let kj = keys.reshape(&[rows, n, 1])?;
    let ki = keys.reshape(&[rows, 1, n])?;
    let greater = g.lt(&ki, &kj)?;
    let tie = g.eq(&kj, &ki)?;
    let earlier = g.lt(&at.reshape(&[n, 1])?, &at.reshape(&[1, n])?)?;
    let tie_first = g.binary(BinaryOp::And, &tie, &earlier)?;
    let before = g.binary(BinaryOp::Or, &greater, &tie_first)?;
    let before = g.cast(&before, DType::F32);
    let r = g.reduce(ReduceOp::Sum, &before, &[1])?;
    r.reshape(&[rows, n])
}

/// Greedy NMS of `scores` `[G, N]` over `boxes` `[N, 4]` (`ymin, xmin, ymax, xmax`).
pub(super) fn suppress(
    g: &mut Graph,
    boxes: &Lazy,
    scores: &Lazy,
    limit: usize,
    score_threshold: f32,
    iou_threshold: f32,
) -> Result<Suppressed, GraphError> {
    let (rows, n) = (scores.shape()[0], scores.shape()[1]);
    let threshold = g.scalar_like(scores, f64::from(score_threshold));
    let low = g.lt(scores, &threshold)?;
    let kept = g.not(&low)?;
    let floor = g.scalar_like(scores, f64::NEG_INFINITY);
    let keys = g.where_(&kept, scores, &floor)?;
    let rank = ranks(g, &keys)?;
    let at = g.arange(n, DType::F32);
    let order = g.eq(&rank.reshape(&[rows, 1, n])?, &at.reshape(&[1, n, 1])?)?;
    let spread = boxes.reshape(&[1, 1, n, 4])?;
    let mask = order.reshape(&[rows, n, n, 1])?;
    let sorted = pick(g, &mask, &spread, 2)?;
    let kept_f = g.cast(&kept, DType::F32);
    let num_kept = g.reduce(ReduceOp::Sum, &kept_f, &[1])?;
    let in_front = g.lt(&at.reshape(&[1, n])?, &num_kept)?;
    let in_front = g.cast(&in_front, DType::F32).permute(&[1, 0])?;
    let body = loop_body(rows, n, limit, iou_threshold)?;
    let ones = g.constant(1.0, DType::F32, &[rows, n]);
    let zeros = g.constant(0.0, DType::F32, &[rows]);
    let by_rank = sorted.permute(&[1, 0, 2])?;
    let operands = [
        by_rank,
        in_front,
        at.clone(),
        sorted.clone(),
        at,
        ones,
        zeros,
    ];
    let results = g.repeat(body, &operands)?;
    Ok(Suppressed {
        order,
        boxes: sorted,
        selected: results[0].permute(&[1, 0])?,
        before: results[1].permute(&[1, 0])?,
        count: results[2].clone(),
    })
}

/// The loop body: inputs the box at rank `t` `[G, 4]`, whether it is kept `[G]`, `t`, all
/// boxes in rank order `[G, N, 4]`, `0..N`, the active flags `[G, N]` and the selected count
/// `[G]`; outputs the next flags and count, the selection at `t`, and the count before it.
fn loop_body(
    rows: usize,
    n: usize,
    limit: usize,
    iou_threshold: f32,
) -> Result<LoopBody, GraphError> {
    let mut b = Graph::new();
    let f = DType::F32;
    let this = b.input("box", f, &[rows, 4]);
    let kept = b.input("kept", f, &[rows]);
    let t = b.input("rank", f, &[]);
    let all = b.input("boxes", f, &[rows, n, 4]);
    let at = b.input("ranks", f, &[n]);
    let active = b.input("active", f, &[rows, n]);
    let count = b.input("count", f, &[rows]);
    let here = b.eq(&at, &t)?;
    let zero = b.scalar_like(&active, 0.0);
    let here = b.where_(&here, &active, &zero)?;
    let active_here = b.reduce(ReduceOp::Sum, &here, &[1])?.reshape(&[rows])?;
    let cap = b.scalar_like(&count, limit as f64);
    let room = b.lt(&count, &cap)?;
    let room = b.cast(&room, f);
    let ok = b.binary(BinaryOp::Mul, &kept, &active_here)?;
    let ok = b.binary(BinaryOp::Mul, &ok, &room)?;
    let iou = overlap(&mut b, &this.reshape(&[rows, 1, 4])?, &all)?;
    let limit_iou = b.scalar_like(&iou, f64::from(iou_threshold));
    let over = b.lt(&limit_iou, &iou)?;
    let half = b.scalar_like(&ok, 0.5);
    let chosen = b.lt(&half, &ok)?;
    let off = b.binary(BinaryOp::And, &over, &chosen.reshape(&[rows, 1])?)?;
    let next_active = b.where_(&off, &zero, &active)?;
    let next_count = b.binary(BinaryOp::Add, &count, &ok)?;
    Ok(LoopBody {
        count: n,
        graph: b,
        outputs: vec![next_active, next_count, ok, count],
        inputs: vec![
            LoopInput::Row {
                operand: 0,
                reverse: false,
            },
            LoopInput::Row {
                operand: 1,
                reverse: false,
            },
            LoopInput::Row {
                operand: 2,
                reverse: false,
            },
            LoopInput::Invariant { operand: 3 },
            LoopInput::Invariant { operand: 4 },
            LoopInput::State { init: 5, next: 0 },
            LoopInput::State { init: 6, next: 1 },
        ],
        results: vec![
            LoopResult::Stacked {
                output: 2,
                reverse: false,
            },
            LoopResult::Stacked {
                output: 3,
                reverse: false,
            },
            LoopResult::Final { input: 6 },
        ],
    })
}

/// Coordinate `k` of boxes `[.., 4]`, without its axis.
fn coord(x: &Lazy, k: usize) -> Result<Lazy, GraphError> {
    let mut keep: Vec<(usize, usize)> = x.shape().iter().map(|&d| (0, d)).collect();
    let last = keep.len() - 1;
    keep[last] = (k, k + 1);
    let shape = x.shape()[..last].to_vec();
    x.shrink(&keep)?.reshape(&shape)
}

/// TFLM's `ComputeIntersectionOverUnion` of box `a` with each of `b` (broadcast), in its order
/// of operations: 0 where either area is not positive.
fn overlap(g: &mut Graph, a: &Lazy, b: &Lazy) -> Result<Lazy, GraphError> {
    let [ay0, ax0, ay1, ax1] = [0, 1, 2, 3].map(|k| coord(a, k));
    let [by0, bx0, by1, bx1] = [0, 1, 2, 3].map(|k| coord(b, k));
    let (ay0, ax0, ay1, ax1) = (ay0?, ax0?, ay1?, ax1?);
    let (by0, bx0, by1, bx1) = (by0?, bx0?, by1?, bx1?);
    let area = |g: &mut Graph, y0: &Lazy, x0: &Lazy, y1: &Lazy, x1: &Lazy| {
        let h = g.binary(BinaryOp::Sub, y1, y0)?;
        let w = g.binary(BinaryOp::Sub, x1, x0)?;
        g.binary(BinaryOp::Mul, &h, &w)
    };
    let area_a = area(g, &ay0, &ax0, &ay1, &ax1)?;
    let area_b = area(g, &by0, &bx0, &by1, &bx1)?;
    let iy0 = g.binary(BinaryOp::Max, &ay0, &by0)?;
    let ix0 = g.binary(BinaryOp::Max, &ax0, &bx0)?;
    let iy1 = g.min(&ay1, &by1)?;
    let ix1 = g.min(&ax1, &bx1)?;
    let ih = g.binary(BinaryOp::Sub, &iy1, &iy0)?;
    let iw = g.binary(BinaryOp::Sub, &ix1, &ix0)?;
    let ih = g.max_scalar(&ih, 0.0)?;
    let iw = g.max_scalar(&iw, 0.0)?;
    let inter = g.binary(BinaryOp::Mul, &ih, &iw)?;
    let sum = g.binary(BinaryOp::Add, &area_a, &area_b)?;
    let union = g.binary(BinaryOp::Sub, &sum, &inter)?;
    let iou = g.binary(BinaryOp::Div, &inter, &union)?;
    let zero = g.scalar_like(&iou, 0.0);
    let (za, zb) = (g.scalar_like(&area_a, 0.0), g.scalar_like(&area_b, 0.0));
    let pos_a = g.lt(&za, &area_a)?;
    let pos_b = g.lt(&zb, &area_b)?;
    let both = g.binary(BinaryOp::And, &pos_a, &pos_b)?;
    g.where_(&both, &iou, &zero)
}
