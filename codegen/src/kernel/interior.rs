//! INTERIOR: a kernel's loops split into a border-free interior and the borders around it.
//!
//! A padded convolution reads its input through a mask: every activation is checked against
//! the image's edges, though only the first and last rows and columns ever fall outside. With
//! INTERIOR, each loop axis along which some view is masked is cut into up to three ranges:
//! the interior, where every mask that depends on that axis holds for every value of the
//! other indices (so the linearizer, with the loop variable's bounds narrowed to it, folds the
//! masks away), and the borders before and after it, which keep them. The kernel becomes
//! several loop nests ([`Kernel::interior_regions`]), one per box of the output: the interior
//! of the first split axis is split again along the next one, while its borders run the other
//! axes whole. The split is worked out from the kernel as it is linearized, so it follows the
//! opts applied before or after INTERIOR.

use super::Kernel;
use crate::shape::{Node, NodeKind};
use std::collections::HashMap;

/// The interior `lo..hi` of a loop axis: no mask that depends on the axis is ever false there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AxisSplit {
    pub axis: usize,
    pub lo: usize,
    pub hi: usize,
}

/// One loop nest of a split kernel: the range of each axis it narrows (the others run whole).
pub type Region = Vec<(usize, std::ops::Range<usize>)>;

/// Axes longer than this are not split: the interior is found value by value.
const MOST_VALUES: usize = 4096;

fn axis_var(axis: usize, lo: usize, hi: usize) -> Node {
    Node::var(&format!("interior{axis}"), lo as i64, hi as i64 - 1)
}

/// The terms of a validity expression that must each hold.
fn clauses(valid: &Node) -> Vec<Node> {
    match valid.kind() {
        NodeKind::And(terms) => terms.clone(),
        NodeKind::Num(_) => Vec::new(),
        _ => vec![valid.clone()],
    }
}

impl Kernel {
    /// Every clause of every view's validity, over one variable per axis (`interior{axis}`),
    /// with the variables' full ranges.
    fn validity_clauses(&self) -> Vec<Node> {
        let mut out: Vec<Node> = Vec::new();
        for st in &self.sts {
            let idxs: Vec<Node> = st
                .shape()
                .iter()
                .enumerate()
                .map(|(a, &n)| match n {
                    1 => Node::num(0),
                    _ => axis_var(a, 0, n),
                })
                .collect();
            let (_, valid) = st.expr_idxs(&idxs);
            for c in clauses(&valid) {
                if !out.contains(&c) {
                    out.push(c);
                }
            }
        }
        out
    }

    /// The loop axes worth splitting, each with its interior: axes of the output that are
    /// loops (global, not upcast), along which some mask depends on the axis alone (among the
    /// loop axes) and holds on a range that leaves a border on at least one side. Empty on a
    /// target with threads.
    pub fn interior_splits(&self) -> Vec<AxisSplit> {
        if self.target.has_local {
            return Vec::new();
        }
        let clauses = self.validity_clauses();
        let full = self.full_shape();
        let loops = self.global_dims().min(self.shape_len() - self.upcasted);
        let loop_var = |v: &Node| {
            (0..loops).find(|&a| matches!(v.kind(), NodeKind::Var { name, .. } if **name == *format!("interior{a}")))
        };
        let mut out = Vec::new();
        for (axis, &n) in full.iter().enumerate().take(loops) {
            if !(3..=MOST_VALUES).contains(&n) {
                continue;
            }
            // The clauses this axis can decide: they name it and no other loop axis.
            let mine: Vec<&Node> = clauses
                .iter()
                .filter(|c| {
                    let vars: Vec<usize> = c.vars().iter().filter_map(loop_var).collect();
                    vars.contains(&axis) && vars.iter().all(|&a| a == axis)
                })
                .collect();
            if mine.is_empty() {
                continue;
            }
            let name = format!("interior{axis}");
            let holds_on = |lo: usize, hi: usize| {
                let map = HashMap::from([(name.clone(), axis_var(axis, lo, hi))]);
                mine.iter().all(|c| c.substitute(&map).as_num() == Some(1))
            };
            // The longest run of values where every clause holds.
            let (mut best, mut start) = ((0, 0), None);
            for v in 0..=n {
                match (v < n && holds_on(v, v + 1), start) {
                    (true, None) => start = Some(v),
                    (false, Some(s)) => {
                        if v - s > best.1 - best.0 {
                            best = (s, v);
                        }
                        start = None;
                    }
                    _ => {}
                }
            }
            let (lo, hi) = best;
            // The whole range at once, as the linearizer will see it.
            let useful = hi > lo && (lo > 0 || hi < n) && holds_on(lo, hi);
            if useful {
                out.push(AxisSplit { axis, lo, hi });
            }
        }
        out
    }

    /// The loop nests of the kernel with INTERIOR applied: one region (narrowing nothing)
    /// without it, or when no axis splits.
    pub fn interior_regions(&self) -> Vec<Region> {
        if !self.interior {
            return vec![Vec::new()];
        }
        let full = self.full_shape();
        // The first axis's borders run the other axes whole, masks and all; the borders of the
        // axes after it lie inside its interior. So the axis whose borders hold the least of
        // its length goes first (rows of 32 before columns in groups of 8, of which 2 of 4
        // are borders): the least work keeps masks that the loop variables decide.
        let mut splits = self.interior_splits();
        let border_share = |s: &AxisSplit| {
            let n = full[s.axis];
            (n - (s.hi - s.lo)) as f64 / n as f64
        };
        splits.sort_by(|a, b| border_share(a).total_cmp(&border_share(b)));
        let mut regions = Vec::new();
        let mut inside: Region = Vec::new();
        for s in splits {
            let n = full[s.axis];
            for border in [0..s.lo, s.hi..n] {
                if !border.is_empty() {
                    let mut r = inside.clone();
                    r.push((s.axis, border));
                    regions.push(r);
                }
            }
            inside.push((s.axis, s.lo..s.hi));
        }
        regions.push(inside);
        regions.sort_by_key(|r| r.iter().map(|(_, x)| x.start).collect::<Vec<_>>());
        regions
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::examples::{conv2d, matvec};
    use crate::kernel::{Opt, OptOp};
    use crate::target::Target;

    /// The loop axes of a fresh convolution kernel: (cout, h, w).
    fn conv(hw: usize, target: Target) -> Kernel {
        let k = conv2d(2, 4, [hw, hw], 3, 1, target);
        assert_eq!(k.global_dims(), 3, "{:?}", k.full_shape());
        k
    }

    #[test]
    fn a_padded_image_splits_into_its_interior_and_the_borders() {
        let mut k = conv(10, Target::c());
        let s = |axis| AxisSplit { axis, lo: 1, hi: 9 };
        assert_eq!(k.interior_splits(), vec![s(1), s(2)]);
        k.apply_opt(Opt::interior()).unwrap();
        // Rows 0 and 9 whole; the rows between split again along the columns.
        assert_eq!(
            k.interior_regions(),
            vec![
                vec![(1, 0..1)],
                vec![(1, 1..9), (2, 0..1)],
                vec![(1, 1..9), (2, 1..9)],
                vec![(1, 1..9), (2, 9..10)],
                vec![(1, 9..10)],
            ]
        );
    }

    #[test]
    fn an_upcast_axis_splits_by_whole_groups() {
        let mut k = conv(16, Target::c());
        k.apply_opt(Opt::new(OptOp::Upcast, 2, 4)).unwrap();
        // Groups of four columns: the first holds column 0, the last column 15.
        assert_eq!(
            k.interior_splits()[1],
            AxisSplit {
                axis: 2,
                lo: 1,
                hi: 3
            }
        );
    }

    #[test]
    fn the_axis_with_the_thinnest_borders_is_split_first() {
        let mut k = conv(16, Target::c());
        // Rows in groups of four: groups 0 and 3 of 4 are borders, columns 0 and 15 of 16.
        k.apply_opt(Opt::new(OptOp::Upcast, 1, 4)).unwrap();
        k.apply_opt(Opt::interior()).unwrap();
        // The columns first: only their two borders run the rows whole, masked.
        assert_eq!(
            k.interior_regions(),
            vec![
                vec![(2, 0..1)],
                vec![(2, 1..15), (1, 0..1)],
                vec![(2, 1..15), (1, 1..3)],
                vec![(2, 1..15), (1, 3..4)],
                vec![(2, 15..16)],
            ]
        );
    }

    /// The gated and the plain loads of the program, inside the loop nest whose outermost
    /// split loop starts at `start`, or outside every such nest (`None`).
    fn loads_in_nest(k: &Kernel, start: i64) -> (usize, usize) {
        use crate::ops::ConstValue;
        use crate::uop::UOpKind;
        let lin = crate::linearize::linearize(k).expect("linearizes");
        let uops = &lin.uops.uops;
        let starts_at = |i: usize| {
            matches!(uops[i].kind, UOpKind::Range { reduce: false, .. })
                && uops[uops[i].src[0].index()].kind == UOpKind::Const(ConstValue::Int(start))
        };
        let stacks = lin.uops.block_stacks();
        let (mut gated, mut plain) = (0, 0);
        for (i, u) in uops.iter().enumerate() {
            if u.kind == UOpKind::Load && stacks[i].iter().any(|&b| starts_at(b)) {
                match u.src.len() {
                    2 => plain += 1,
                    _ => gated += 1,
                }
            }
        }
        (gated, plain)
    }

    #[test]
    fn the_interior_reads_without_masks() {
        let mut k = conv(10, Target::c());
        k.apply_opt(Opt::new(OptOp::Unroll, 2, 0)).unwrap();
        assert_eq!(loads_in_nest(&k, 1), (0, 0), "one nest, from 0");
        k.apply_opt(Opt::interior()).unwrap();
        // The nest of rows 1..9 holds the interior and the column borders: with the column
        // one value there and the window unrolled, every mask folds, to a load or to 0.
        let (gated, plain) = loads_in_nest(&k, 1);
        assert!(gated == 0 && plain > 0, "{gated} gated, {plain} plain");
        let mut inner = k.clone();
        inner.interior = false;
        let fresh = loads_in_nest(&inner, 0);
        assert!(fresh.0 > 0, "without the split loads are gated: {fresh:?}");
    }

    #[test]
    fn the_heuristics_split_a_padded_convolution() {
        for target in [Target::c(), Target::host()] {
            let mut k = conv(10, target);
            crate::optimize::heuristic::hand_coded_optimizations(&mut k);
            assert!(k.interior, "{:?}", k.applied_opts);
        }
    }

    #[test]
    fn no_split_without_masks_or_with_threads() {
        let mut k = matvec(16, 8, Target::c());
        assert!(k.interior_splits().is_empty());
        let e = k.apply_opt(Opt::interior()).unwrap_err();
        assert!(e.to_string().contains("no loop axis"), "{e}");
        let gpu = conv(10, Target::threaded(vec![64, 64, 64], vec![16, 16, 16]));
        assert!(gpu.interior_splits().is_empty());
        let unpadded = conv2d(2, 4, [10, 10], 3, 0, Target::c());
        assert!(unpadded.interior_splits().is_empty());
    }
}
