//! `TFLite_Detection_PostProcess`, the custom op that ends SSD detectors: box decoding against
//! the anchors, non-max suppression ([`super::nms`]) and the top detections, as TFLM's kernel
//! computes them.
//!
//! - Decoding: `y_c = y / y_scale · a_h + a_y`, `half_h = ½ · exp(h / h_scale) · a_h` (and
//!   likewise across), the box `(y_c − half_h, x_c − half_w, y_c + half_h, x_c + half_w)`, in
//!   float (TFLM rounds each coordinate from double: the boxes agree to float tolerance).
//! - Fast NMS (`use_regular_nms` false): each anchor scored by its best class (the lowest class
//!   index among equal scores), one suppression over all anchors, the selected anchors in
//!   order with that class and score.
//! - Regular NMS: a suppression per class (at most `detections_per_class` each), then the
//!   `max_detections` best of all, by score, ties by class and then by rank within the class
//!   (the order TFLM's partial sorts leave them in).
//! - Slots past the detections hold zeros (TFLM's regular variant writes them; its fast one
//!   leaves them as they were). Quantized inputs are dequantized first (TFLM takes float only).

use super::nms::{pick, ranks, suppress};
use super::{Ctx, OpBuilder};
use crate::dtype::DType;
use crate::graph::{Graph, Lazy};
use crate::ops::{BinaryOp, ReduceOp};
use crate::tflite::error::OpError;

pub(super) const CUSTOM: &[(&str, OpBuilder)] =
    &[("TFLite_Detection_PostProcess", detection_postprocess)];

type Out = Result<Vec<Lazy>, OpError>;

/// The op's options, as TFLM reads them.
struct Params {
    max_detections: usize,
    classes_per_detection: usize,
    detections_per_class: usize,
    score_threshold: f32,
    iou_threshold: f32,
    num_classes: usize,
    regular: bool,
    /// `y, x, h, w`.
    scales: [f32; 4],
}

fn params(ctx: &Ctx) -> Result<Params, OpError> {
    let o = ctx.custom_options()?;
    let missing = |key: &str| OpError::Invalid(format!("custom option {key:?} is missing"));
    let count = |key: &str, v: i64| {
        usize::try_from(v)
            .ok()
            .filter(|&v| v > 0)
            .ok_or_else(|| OpError::Invalid(format!("custom option {key:?} is {v}, not positive")))
    };
    let int = |key: &str| {
        o.int(key)?
            .ok_or_else(|| missing(key))
            .and_then(|v| count(key, v))
    };
    let float = |key: &str| -> Result<f32, OpError> {
        Ok(o.float(key)?.ok_or_else(|| missing(key))? as f32)
    };
    let p = Params {
        max_detections: int("max_detections")?,
        classes_per_detection: int("max_classes_per_detection")?,
        detections_per_class: match o.int("detections_per_class")? {
            Some(v) => count("detections_per_class", v)?,
            None => 100,
        },
        score_threshold: float("nms_score_threshold")?,
        iou_threshold: float("nms_iou_threshold")?,
        num_classes: int("num_classes")?,
        regular: o.bool("use_regular_nms")?.unwrap_or(false),
        scales: [
            float("y_scale")?,
            float("x_scale")?,
            float("h_scale")?,
            float("w_scale")?,
        ],
    };
    let d = ctx.out_info(0)?.shape.get(1).copied();
    if d != Some(p.max_detections) {
        return Err(OpError::Invalid(format!(
            "custom option \"max_detections\" is {}, the boxes output {:?} has {d:?} slots",
            p.max_detections,
            ctx.out_info(0)?.name
        )));
    }
    if !(p.iou_threshold > 0.0 && p.iou_threshold <= 1.0) {
        return Err(OpError::Invalid(format!(
            "custom option \"nms_iou_threshold\" is {}, outside (0, 1]",
            p.iou_threshold
        )));
    }
    Ok(p)
}

/// Input `i` as float: dequantized when it is quantized.
fn float_input(ctx: &mut Ctx, i: usize) -> Result<Lazy, OpError> {
    let t = ctx.info(i)?.clone();
    let x = ctx.input(i)?;
    if t.dtype.is_float() {
        return Ok(ctx.graph.cast(&x, DType::F32));
    }
    let q = ctx.quant(&t)?;
    let g = &mut *ctx.graph;
    let c = super::elementwise::centred(g, &x, q.zero_point())?;
    let f = g.cast(&c, DType::F32);
    Ok(g.mul_scalar(&f, f64::from(q.scale()))?)
}

fn detection_postprocess(ctx: &mut Ctx) -> Out {
    let p = params(ctx)?;
    let (enc, scores, anchors) = (
        float_input(ctx, 0)?,
        float_input(ctx, 1)?,
        float_input(ctx, 2)?,
    );
    let n = anchors.shape().first().copied().unwrap_or(0);
    let (es, ss) = (enc.shape().to_vec(), scores.shape().to_vec());
    if es.len() != 3 || es[0] != 1 || es[1] != n || es[2] < 4 || anchors.shape() != [n, 4] {
        return Err(OpError::Invalid(format!(
            "box encodings {es:?} and anchors {:?}: TFLM takes [1, N, ≥4] and [N, 4]",
            anchors.shape()
        )));
    }
    let with_background = ss.get(2).copied().unwrap_or(0);
    let offset = with_background.wrapping_sub(p.num_classes);
    if ss.len() != 3 || ss[0] != 1 || ss[1] != n || offset > 1 {
        return Err(OpError::Invalid(format!(
            "class predictions {ss:?} for {n} anchors and {} classes: TFLM takes [1, N, classes] \
             or [1, N, classes + 1] (a background class first)",
            p.num_classes
        )));
    }
    let g = &mut *ctx.graph;
    let boxes = decode(g, &enc.reshape(&[n, es[2]])?, &anchors, &p)?;
    let scores = scores
        .reshape(&[n, with_background])?
        .shrink(&[(0, n), (offset, with_background)])?;
    let outs = match p.regular {
        true => regular(g, &boxes, &scores, &p)?,
        false => fast(g, &boxes, &scores, &p)?,
    };
    let d = p.max_detections;
    Ok(vec![
        outs[0].reshape(&[1, d, 4])?,
        outs[1].reshape(&[1, d])?,
        outs[2].reshape(&[1, d])?,
        outs[3].reshape(&[1])?,
    ])
}

/// The anchors' boxes `[N, 4]` (`ymin, xmin, ymax, xmax`) from the encodings `[N, ≥4]`.
fn decode(g: &mut Graph, enc: &Lazy, anchors: &Lazy, p: &Params) -> Result<Lazy, OpError> {
    let n = anchors.shape()[0];
    let column = |x: &Lazy, k: usize| x.shrink(&[(0, n), (k, k + 1)]);
    let mut parts = Vec::with_capacity(4);
    for k in 0..4 {
        let e = column(enc, k)?;
        let scale = g.scalar_like(&e, f64::from(p.scales[k]));
        parts.push(g.binary(BinaryOp::Div, &e, &scale)?);
    }
    let [ay, ax, ah, aw] = [0, 1, 2, 3].map(|k| column(anchors, k));
    let (ay, ax, ah, aw) = (ay?, ax?, ah?, aw?);
    let yc = g.binary(BinaryOp::Mul, &parts[0], &ah)?;
    let yc = g.binary(BinaryOp::Add, &yc, &ay)?;
    let xc = g.binary(BinaryOp::Mul, &parts[1], &aw)?;
    let xc = g.binary(BinaryOp::Add, &xc, &ax)?;
    let hh = g.exp(&parts[2])?;
    let hh = g.mul_scalar(&hh, 0.5)?;
    let hh = g.binary(BinaryOp::Mul, &hh, &ah)?;
    let hw = g.exp(&parts[3])?;
    let hw = g.mul_scalar(&hw, 0.5)?;
    let hw = g.binary(BinaryOp::Mul, &hw, &aw)?;
    let corners = [
        g.binary(BinaryOp::Sub, &yc, &hh)?,
        g.binary(BinaryOp::Sub, &xc, &hw)?,
        g.binary(BinaryOp::Add, &yc, &hh)?,
        g.binary(BinaryOp::Add, &xc, &hw)?,
    ];
    Ok(g.concat(&corners, 1)?)
}

/// Fast NMS: boxes, classes, scores of the `max_detections` slots, and their count.
fn fast(g: &mut Graph, boxes: &Lazy, scores: &Lazy, p: &Params) -> Result<Vec<Lazy>, OpError> {
    if p.classes_per_detection.min(p.num_classes) != 1 {
        return Err(OpError::Unsupported(format!(
            "custom option \"max_classes_per_detection\" {} with fast NMS (TFLM's kernel writes \
             more than one class per detection at overlapping slots)",
            p.classes_per_detection
        )));
    }
    let (n, c) = (scores.shape()[0], scores.shape()[1]);
    let best = g.reduce(ReduceOp::Max, scores, &[1])?;
    let is_best = g.eq(scores, &best)?;
    let classes = g.arange(c, DType::F32).reshape(&[1, c])?;
    let none = g.scalar_like(scores, c as f64);
    let candidates = g.where_(&is_best, &classes, &none)?;
    let class = g.reduce_min(&candidates, &[1])?.reshape(&[n])?;
    let best = best.reshape(&[1, n])?;
    let s = suppress(
        g,
        boxes,
        &best,
        p.max_detections,
        p.score_threshold,
        p.iou_threshold,
    )?;
    let rank_class = pick(g, &s.order, &class.reshape(&[1, 1, n])?, 2)?;
    let rank_score = pick(g, &s.order, &best.reshape(&[1, 1, n])?, 2)?;
    let slots = slot_mask(g, &s.selected, &s.before, p.max_detections)?;
    let (boxes, class, score) = gather_slots(g, &slots, &s.boxes, &rank_class, &rank_score)?;
    Ok(vec![boxes, class, score, s.count])
}

/// `[D, G·N]`: slot `m` takes the candidate selected `m`-th (by `before`).
fn slot_mask(g: &mut Graph, selected: &Lazy, before: &Lazy, d: usize) -> Result<Lazy, OpError> {
    let total: usize = selected.shape().iter().product();
    let slots = g.arange(d, DType::F32).reshape(&[d, 1])?;
    let at = g.eq(&before.reshape(&[1, total])?, &slots)?;
    let half = g.scalar_like(selected, 0.5);
    let chosen = g.lt(&half, selected)?.reshape(&[1, total])?;
    Ok(g.binary(BinaryOp::And, &at, &chosen)?)
}

/// The boxes `[D, 4]`, classes `[D]` and scores `[D]` the slots pick from candidates `[.., 4]`,
/// `[..]`, `[..]`.
fn gather_slots(
    g: &mut Graph,
    slots: &Lazy,
    boxes: &Lazy,
    class: &Lazy,
    score: &Lazy,
) -> Result<(Lazy, Lazy, Lazy), OpError> {
    let total = slots.shape()[1];
    let b = boxes.reshape(&[1, total, 4])?;
    let m = slots.reshape(&[slots.shape()[0], total, 1])?;
    let out_boxes = pick(g, &m, &b, 1)?;
    let out_class = pick(g, slots, &class.reshape(&[1, total])?, 1)?;
    let out_score = pick(g, slots, &score.reshape(&[1, total])?, 1)?;
    Ok((out_boxes, out_class, out_score))
}

/// Regular NMS: a suppression per class, then the best `max_detections` of all classes.
fn regular(g: &mut Graph, boxes: &Lazy, scores: &Lazy, p: &Params) -> Result<Vec<Lazy>, OpError> {
    let (n, c) = (scores.shape()[0], scores.shape()[1]);
    let per_class = scores.permute(&[1, 0])?;
    let limit = p.detections_per_class;
    let s = suppress(
        g,
        boxes,
        &per_class,
        limit,
        p.score_threshold,
        p.iou_threshold,
    )?;
    let rank_score = pick(g, &s.order, &per_class.reshape(&[c, 1, n])?, 2)?;
    // Each class's selections, in their order: `L` slots a class.
    let l = limit.min(n);
    let mine = g.arange(l, DType::F32).reshape(&[1, l, 1])?;
    let at = g.eq(&s.before.reshape(&[c, 1, n])?, &mine)?;
    let half = g.scalar_like(&s.selected, 0.5);
    let chosen = g.lt(&half, &s.selected)?.reshape(&[c, 1, n])?;
    let take = g.binary(BinaryOp::And, &at, &chosen)?;
    let cand_boxes = pick(
        g,
        &take.reshape(&[c, l, n, 1])?,
        &s.boxes.reshape(&[c, 1, n, 4])?,
        2,
    )?;
    let cand_score = pick(g, &take, &rank_score.reshape(&[c, 1, n])?, 2)?;
    let filled = g.lt(&mine.reshape(&[1, l])?, &s.count.reshape(&[c, 1])?)?;
    // The best of all classes: by score, ties by class and then by order within the class.
    let floor = g.scalar_like(&cand_score, f64::NEG_INFINITY);
    let keys = g
        .where_(&filled, &cand_score, &floor)?
        .reshape(&[1, c * l])?;
    let order = ranks(g, &keys)?;
    let d = p.max_detections;
    let filled_f = g.cast(&filled, DType::F32).reshape(&[1, c * l])?;
    let slots = slot_mask(g, &filled_f, &order, d)?;
    let class = g.arange(c, DType::F32).reshape(&[c, 1])?.expand(&[c, l])?;
    let (out_boxes, out_class, out_score) = gather_slots(
        g,
        &slots,
        &cand_boxes.reshape(&[c * l, 4])?,
        &class.reshape(&[c * l])?,
        &cand_score.reshape(&[c * l])?,
    )?;
    let total = g.reduce(ReduceOp::Sum, &s.count, &[0])?;
    let cap = g.scalar_like(&total, d as f64);
    let count = g.min(&total, &cap)?;
    Ok(vec![out_boxes, out_class, out_score, count])
}
