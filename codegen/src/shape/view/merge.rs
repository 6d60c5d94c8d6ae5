//! Folding two stacked views into one, when one view reads exactly the same elements.

use super::{strides_for_shape, View};
use crate::shape::Node;

/// The single view that reads what `outer` reads through `inner` (the elements of `outer` are
/// row-major positions in `inner`'s shape), or `None` when no single view does.
pub(in crate::shape) fn merge(inner: &View, outer: &View) -> Option<View> {
    if inner.contiguous || outer.size() == 0 {
        return Some(outer.clone());
    }
    if inner.size() == 0 {
        return None;
    }
    if outer.contiguous && outer.shape == inner.shape {
        return Some(inner.clone());
    }
    if outer.contiguous && outer.size() == inner.size() {
        if let Some(view) = inner.reshape(&outer.shape) {
            return Some(view);
        }
    }
    match &outer.mask {
        Some(mask) => merge_masked(inner, outer, mask),
        None => project(inner, outer),
    }
}

/// Merges the unmasked part of `outer`, then pads the result back to `outer`'s mask.
fn merge_masked(inner: &View, outer: &View, mask: &[(usize, usize)]) -> Option<View> {
    if mask.iter().any(|(b, e)| b >= e) {
        let rank = outer.shape.len();
        let nothing = Some(vec![(0, 0); rank]);
        return Some(View::new(&outer.shape, Some(&vec![0; rank]), 0, nothing));
    }
    let merged = merge(inner, &outer.shrink(mask))?;
    let padding: Vec<(usize, usize)> = mask
        .iter()
        .zip(&outer.shape)
        .map(|(&(b, e), &s)| (b, s - e))
        .collect();
    Some(merged.pad(&padding))
}

/// Projects the strides and offset of an unmasked `outer` onto the axes of `inner`.
fn project(inner: &View, outer: &View) -> Option<View> {
    let origin = unravel(&inner.shape, outer.offset);
    // Per axis of `inner`, how far one step along each axis of `outer` moves its coordinate.
    let mut steps: Vec<Vec<(usize, i64)>> = vec![Vec::new(); inner.shape.len()];
    let mut strides = vec![0; outer.shape.len()];
    for (d1, &st) in outer.strides.iter().enumerate().filter(|(_, &st)| st != 0) {
        let moved = unravel(&inner.shape, outer.offset + st);
        for (d2, (o, m)) in origin
            .iter()
            .zip(moved)
            .enumerate()
            .filter(|(_, (&o, m))| o != *m)
        {
            steps[d2].push((d1, m - o));
            strides[d1] += (m - o) * inner.strides[d2];
        }
    }
    let coords = coordinates(inner, outer, &origin, &steps)?;
    let sizes: Vec<usize> = coords.iter().map(|(size, _)| *size).collect();
    if sizes != inner.shape {
        return merge(&inner.reshape(&sizes)?, outer);
    }
    if let Some(mask) = &inner.mask {
        let coords: Vec<&Node> = coords.iter().map(|(_, c)| c).collect();
        let (ranges, bad) = fit_mask(mask, outer, &origin, &steps, &coords);
        if ranges
            .iter()
            .zip(&outer.shape)
            .any(|(&r, &s)| r != (0, s as i64))
        {
            let mask = ranges
                .iter()
                .map(|&(b, e)| (b as usize, e.max(0) as usize))
                .collect();
            let masked = View::new(&outer.shape, Some(&outer.strides), outer.offset, Some(mask));
            return merge(inner, &masked);
        }
        if bad {
            return None;
        }
    }
    let offset: i64 = origin.iter().zip(&inner.strides).map(|(o, s)| o * s).sum();
    Some(View::new(
        &outer.shape,
        Some(&strides),
        inner.offset + offset,
        None,
    ))
}

/// Per axis of `inner`, outermost first: its size and the coordinate `outer` reaches along it,
/// as a node of `outer`'s indices. Axes that a coordinate would carry out of are merged with
/// the axis before them; `None` when even merging leaves a carry.
fn coordinates(
    inner: &View,
    outer: &View,
    origin: &[i64],
    steps: &[Vec<(usize, i64)>],
) -> Option<Vec<(usize, Node)>> {
    let idxs: Vec<Node> = (outer.shape.iter().enumerate())
        .map(|(i, &s)| Node::var(&format!("idx{i}"), 0, s as i64 - 1))
        .collect();
    let mut coords = Vec::new();
    let (mut size, mut coord) = (1usize, Node::num(0));
    for ((axis_steps, &dim), &o) in steps.iter().zip(&inner.shape).zip(origin).rev() {
        let scale = size as i64;
        let moved = axis_steps
            .iter()
            .map(|&(d1, step)| idxs[d1].mul_i(step * scale));
        coord = Node::sum(moved.chain([coord, Node::num(o * scale)]).collect());
        size *= dim;
        if coord.min() >= 0 && coord.max() < size as i64 {
            coords.push((size, coord));
            (size, coord) = (1, Node::num(0));
        }
    }
    if coord.as_num() != Some(0) {
        return None;
    }
    coords.reverse();
    Some(coords)
}

/// The ranges of `outer`'s indices that keep every coordinate inside `inner`'s `mask`, and
/// whether some coordinate may leave it in a way no such range can express.
fn fit_mask(
    mask: &[(usize, usize)],
    outer: &View,
    origin: &[i64],
    steps: &[Vec<(usize, i64)>],
    coords: &[&Node],
) -> (Vec<(i64, i64)>, bool) {
    let mut ranges: Vec<(i64, i64)> = outer.shape.iter().map(|&s| (0, s as i64)).collect();
    let mut bad = false;
    for (((&(b, e), &o), axis_steps), coord) in mask.iter().zip(origin).zip(steps).zip(coords) {
        let (b, e) = (b as i64, e as i64);
        if coord.min() >= b && coord.max() < e {
            continue;
        }
        match axis_steps.as_slice() {
            [] if !ranges.is_empty() => ranges[0].1 = 0,
            &[(d1, step)] => {
                let (lo, hi) = if step > 0 {
                    (b - o, e - o - 1)
                } else {
                    (e - o - 1, b - o)
                };
                ranges[d1].0 = ranges[d1].0.max(-floor_div(-lo, step));
                ranges[d1].1 = ranges[d1].1.min(floor_div(hi, step) + 1);
            }
            _ => bad = true,
        }
    }
    (ranges, bad)
}

/// The row-major coordinates in `shape` of the flat position `offset`; the outermost one takes
/// whatever lies outside the shape.
fn unravel(shape: &[usize], offset: i64) -> Vec<i64> {
    let mut rest = offset;
    let strides = strides_for_shape(shape);
    let coordinate = |st: i64| {
        let here = if st != 0 { rest.div_euclid(st) } else { 0 };
        rest -= here * st;
        here
    };
    strides.into_iter().map(coordinate).collect()
}

/// Floor division for either sign of `b`.
fn floor_div(a: i64, b: i64) -> i64 {
    let q = a / b;
    if a % b != 0 && (a < 0) != (b < 0) {
        q - 1
    } else {
        q
    }
}
