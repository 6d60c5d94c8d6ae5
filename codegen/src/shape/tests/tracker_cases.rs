//! Hand-picked movement ops: the views they make, the strides they report, and the errors.

use super::naive::{check, Naive, Op};
use crate::shape::{strides_for_shape, Node, ShapeTracker, View};

fn st(shape: &[usize]) -> ShapeTracker {
    ShapeTracker::from_shape(shape)
}

/// Applies `ops` to a tracker of `shape` and checks it, simplified or not, against the model.
#[track_caller]
fn run(shape: &[usize], ops: &[Op]) -> ShapeTracker {
    let (mut t, mut naive) = (st(shape), Naive::new(shape));
    for op in ops {
        t = op.apply(&t).expect("a legal op");
        naive = naive.apply(op);
    }
    check(&t, &naive, &ops);
    check(&t.simplify(), &naive, &ops);
    t
}

fn view(shape: &[usize], strides: &[i64], offset: i64, mask: Option<Vec<(usize, usize)>>) -> View {
    let contiguous = false;
    View {
        shape: shape.to_vec(),
        strides: strides.to_vec(),
        offset,
        mask,
        contiguous,
    }
}

#[test]
fn canonical_views() {
    assert_eq!(strides_for_shape(&[2, 1, 3]), [3, 0, 1]);
    assert_eq!(strides_for_shape(&[]), Vec::<i64>::new());
    let full = View::new(&[2, 3], None, 0, Some(vec![(0, 2), (0, 3)]));
    assert_eq!((full.mask, full.contiguous), (None, true));
    let one = View::new(&[4, 3], Some(&[3, 1]), 2, Some(vec![(1, 2), (0, 2)]));
    assert_eq!(one, view(&[4, 3], &[0, 1], 5, Some(vec![(1, 2), (0, 2)])));
    let empty = View::new(&[4, 3], Some(&[3, 1]), 2, Some(vec![(1, 1), (0, 2)]));
    assert_eq!(empty, view(&[4, 3], &[0, 0], 0, Some(vec![(0, 0), (0, 0)])));
    let zero = View::new(&[2, 0], Some(&[5, 7]), 3, Some(vec![(1, 2), (0, 0)]));
    assert_eq!(zero, View::new(&[2, 0], None, 0, None));
    assert!(zero.contiguous);
}

#[test]
fn contiguous_reshape_stays_one_view() {
    let t = run(&[2, 3], &[Op::Reshape(vec![3, 2]), Op::Reshape(vec![6, 1])]);
    assert!(t.contiguous());
    assert_eq!(t.views.len(), 1);
}

#[test]
fn reshape_of_a_permute_stacks_a_view() {
    let t = run(&[4, 4], &[Op::Permute(vec![1, 0]), Op::Reshape(vec![16])]);
    assert_eq!(t.views.len(), 2);
    assert_eq!(t.simplify(), t);
    assert_eq!(t.real_strides(false), [None]);
    assert_eq!(t.real_size(), 16);
}

#[test]
fn reshape_after_pad_merges_when_the_mask_allows() {
    let t = run(
        &[2, 3],
        &[Op::Pad(vec![(1, 1), (0, 0)]), Op::Reshape(vec![12])],
    );
    assert_eq!(t.views, [view(&[12], &[1], -3, Some(vec![(3, 9)]))]);
    let t = run(
        &[2, 3],
        &[Op::Pad(vec![(1, 1), (0, 0)]), Op::Reshape(vec![2, 2, 3])],
    );
    assert_eq!(t.views.len(), 2);
    let t = run(
        &[2, 3],
        &[Op::Pad(vec![(2, 0), (0, 0)]), Op::Reshape(vec![2, 2, 3])],
    );
    let mask = Some(vec![(1, 2), (0, 2), (0, 3)]);
    assert_eq!(t.views, [view(&[2, 2, 3], &[0, 3, 1], 0, mask)]);
    let t = run(&[4], &[Op::Pad(vec![(1, 1)]), Op::Reshape(vec![2, 3])]);
    assert_eq!(t.views.len(), 2);
}

#[test]
fn reshape_after_shrink_and_flip() {
    let t = run(
        &[4, 6],
        &[Op::Shrink(vec![(1, 3), (0, 6)]), Op::Reshape(vec![12])],
    );
    assert_eq!(t.views, [view(&[12], &[1], 6, None)]);
    let t = run(
        &[4, 6],
        &[Op::Shrink(vec![(0, 4), (1, 5)]), Op::Reshape(vec![16])],
    );
    assert_eq!(t.views.len(), 2);
    let t = run(&[2, 3], &[Op::Flip(vec![true, true]), Op::Reshape(vec![6])]);
    assert_eq!(t.views, [view(&[6], &[-1], 5, None)]);
    let t = run(
        &[2, 3],
        &[Op::Flip(vec![false, true]), Op::Reshape(vec![6])],
    );
    assert_eq!(t.views.len(), 2);
}

#[test]
fn reshape_of_expanded_views() {
    let t = run(&[1, 4], &[Op::Expand(vec![3, 4]), Op::Reshape(vec![12])]);
    assert_eq!(t.views.len(), 2);
    let t = run(
        &[1, 4],
        &[Op::Expand(vec![3, 4]), Op::Reshape(vec![3, 2, 2])],
    );
    assert_eq!(t.views, [view(&[3, 2, 2], &[0, 2, 1], 0, None)]);
    assert_eq!(t.real_strides(false), [Some(0), Some(2), Some(1)]);
    assert_eq!(t.unit_stride_axes(false), [2]);
    assert_eq!(t.real_size(), 4);
}

#[test]
fn reshape_merges_a_masked_broadcast_axis() {
    let t = run(
        &[1, 4],
        &[Op::Pad(vec![(1, 1), (0, 0)]), Op::Reshape(vec![12])],
    );
    assert_eq!(t.views, [view(&[12], &[1], -4, Some(vec![(4, 8)]))]);
}

/// Reshapes of padded, shrunk, expanded and permuted views that one view still expresses.
#[test]
fn reshapes_that_fold_into_one_view() {
    use Op::{Expand, Pad, Permute, Reshape, Shrink};
    let cases: Vec<(&[usize], Vec<Op>)> = vec![
        (&[4], vec![Pad(vec![(2, 2)]), Reshape(vec![4, 2])]),
        (
            &[2, 1, 10],
            vec![Pad(vec![(2, 6), (0, 0), (0, 0)]), Reshape(vec![100])],
        ),
        (
            &[1, 1, 4],
            vec![Pad(vec![(3, 6), (0, 0), (1, 5)]), Reshape(vec![100])],
        ),
        (
            &[1, 10, 1],
            vec![Pad(vec![(0, 4), (0, 0), (1, 0)]), Reshape(vec![5, 5, 2, 2])],
        ),
        (
            &[1, 5, 5],
            vec![Pad(vec![(0, 4), (0, 5), (0, 0)]), Reshape(vec![10, 25])],
        ),
        (
            &[4, 4],
            vec![Permute(vec![1, 0]), Reshape(vec![2, 2, 2, 2])],
        ),
        (&[32, 3, 3, 1], vec![Reshape(vec![8, 4, 3, 3])]),
        (
            &[5, 10, 5, 10],
            vec![
                Permute(vec![1, 0, 3, 2]),
                Pad(vec![(0, 0), (0, 5), (0, 0), (0, 5)]),
                Reshape(vec![10, 2, 5, 10, 2, 5]),
            ],
        ),
        (
            &[1, 3, 2],
            vec![
                Pad(vec![(0, 2), (0, 3), (0, 0)]),
                Shrink(vec![(2, 3), (3, 6), (0, 2)]),
                Reshape(vec![3, 2]),
                Reshape(vec![1, 3, 1, 2, 1]),
            ],
        ),
        (
            &[1, 3, 2, 1],
            vec![
                Expand(vec![5, 3, 2, 2]),
                Pad(vec![(0, 0), (0, 3), (0, 0), (0, 0)]),
                Reshape(vec![5, 2, 3, 2, 2]),
            ],
        ),
    ];
    for (shape, ops) in cases {
        assert_eq!(run(shape, &ops).views.len(), 1, "{shape:?} {ops:?}");
    }
}

#[test]
fn folded_views_keep_exact_strides_and_masks() {
    use Op::{Pad, Permute, Reshape};
    let ops = [
        Pad(vec![(0, 0), (0, 5), (0, 0), (0, 15), (0, 0)]),
        Reshape(vec![10, 1, 30]),
        Permute(vec![2, 1, 0]),
        Reshape(vec![2, 3, 5, 2, 5]),
    ];
    let mask = Some(vec![(0, 1), (0, 3), (0, 5), (0, 1), (0, 5)]);
    let t = run(&[1, 5, 1, 15, 1], &ops);
    assert_eq!(
        t.views,
        [view(&[2, 3, 5, 2, 5], &[0, 5, 1, 0, 15], 0, mask)]
    );
    let ops = [
        Pad(vec![(0, 0), (2, 2), (0, 0), (0, 0), (0, 0), (0, 0)]),
        Reshape(vec![1, 1, 1, 105, 1, 1]),
    ];
    let mask = Some(vec![(0, 1), (0, 1), (0, 1), (30, 75), (0, 1), (0, 1)]);
    let t = run(&[1, 3, 1, 5, 3, 1], &ops);
    assert_eq!(
        t.views,
        [view(&[1, 1, 1, 105, 1, 1], &[0, 0, 0, 1, 0, 0], -30, mask)]
    );
}

#[test]
fn reshape_of_a_hand_built_view_with_one_empty_range() {
    let mask = Some(vec![(1, 1), (0, 1), (0, 5)]);
    let t = ShapeTracker {
        views: vec![view(&[1, 1, 5], &[0, 0, 1], -5, mask)],
    };
    let t = t.reshape(&[5]).expect("same size");
    assert_eq!(t.views, [view(&[5], &[0], 0, Some(vec![(0, 0)]))]);
}

#[test]
fn simplify_folds_an_expand_and_contract() {
    let base = [Op::Expand(vec![10, 10]), Op::Reshape(vec![100])];
    for (last, views) in [(vec![10, 10], 1), (vec![2, 5, 2, 5], 1), (vec![5, 20], 2)] {
        let ops = [base[0].clone(), base[1].clone(), Op::Reshape(last)];
        let t = run(&[1, 10], &ops);
        assert_eq!(t.views.len(), 2);
        assert_eq!(t.simplify().views.len(), views, "{ops:?}");
    }
}

#[test]
fn real_strides_of_stacked_views() {
    let stack = |inner: View, outer: View| ShapeTracker {
        views: vec![inner, outer],
    };
    let t = stack(
        View::new(&[8, 3, 1, 2, 11, 1], Some(&[33, 11, 0, 0, 1, 0]), 0, None),
        View::new(&[8, 6, 11], Some(&[66, 11, 1]), 0, None),
    );
    assert_eq!(t.real_strides(false), [Some(33), None, Some(1)]);
    assert_eq!(t.simplify().views.len(), 2);
    let t = stack(
        View::new(&[2048], None, 0, Some(vec![(0, 512)])),
        View::new(&[16, 32, 4], None, 0, None),
    );
    assert_eq!(t.real_strides(false), [None, Some(4), Some(1)]);
    let t = stack(
        View::new(&[1, 3, 2, 11, 4, 28], Some(&[0, 308, 0, 28, 0, 1]), 0, None),
        View::new(
            &[1, 3, 2, 11, 26, 1, 1, 3],
            Some(&[0, 2464, 0, 112, 1, 0, 0, 29]),
            0,
            None,
        ),
    );
    let simple = t.simplify();
    assert_eq!(simple.views.len(), 1);
    let strides: Vec<Option<i64>> = simple.views[0].strides.iter().map(|&s| Some(s)).collect();
    assert_eq!(t.real_strides(false), strides);
}

#[test]
fn masks_decide_validity() {
    let t = run(&[4], &[Op::Pad(vec![(1, 1)])]);
    assert_eq!(t.real_strides(false), [None]);
    assert_eq!(t.real_strides(true), [Some(1)]);
    assert!(t.axis_is_masked(0));
    let t = run(&[2, 3], &[Op::Pad(vec![(0, 0), (1, 1)])]);
    assert_eq!((t.axis_is_masked(0), t.axis_is_masked(1)), (false, true));
    assert_eq!(t.real_size(), 6);
    let t = run(
        &[1, 4],
        &[Op::Expand(vec![3, 4]), Op::Pad(vec![(0, 0), (1, 0)])],
    );
    assert_eq!(t.real_strides(false), [Some(0), None]);
    assert_eq!(t.real_strides(true), [Some(0), Some(1)]);
    let t = run(&[2, 3], &[Op::Pad(vec![(0, 0), (1, 1)])]);
    let (idx, valid) = t.expr_idxs(&[Node::var("a", 0, 1), Node::var("b", 0, 4)]);
    assert_eq!(idx.render(), "((a*3)+-1+b)");
    assert_eq!(valid.render(), "(((b*-1)<0) and (b<4))");
}

#[test]
fn single_elements_and_empty_masks() {
    let t = run(&[4, 4], &[Op::Shrink(vec![(1, 2), (2, 3)])]);
    assert_eq!(t.views, [view(&[1, 1], &[0, 0], 6, None)]);
    assert_eq!(t.real_size(), 7);
    let t = run(&[1], &[Op::Pad(vec![(2, 1)])]);
    assert_eq!(t.views, [view(&[4], &[0], 0, Some(vec![(2, 3)]))]);
    let t = run(&[4], &[Op::Shrink(vec![(2, 2)]), Op::Pad(vec![(1, 1)])]);
    assert_eq!(t.views, [view(&[2], &[0], 0, Some(vec![(0, 0)]))]);
    assert_eq!(t.real_size(), 0);
    assert_eq!(t.expr_idxs(&[Node::var("i", 0, 1)]).1, Node::num(0));
    let ops = [
        Op::Permute(vec![1, 0]),
        Op::Reshape(vec![6]),
        Op::Shrink(vec![(2, 2)]),
        Op::Pad(vec![(1, 1)]),
    ];
    let t = ops.iter().fold(st(&[2, 3]), |t, op| op.apply_stacked(&t));
    assert_eq!(t.views.len(), 2);
    assert_eq!(
        t.expr_idxs(&[Node::var("i", 0, 1)]),
        (Node::num(-1), Node::num(0))
    );
}

#[test]
fn strides_and_flips() {
    let t = run(&[6], &[Op::Stride(vec![2])]);
    assert_eq!(t.views, [view(&[3], &[2], 0, None)]);
    let t = run(&[6], &[Op::Stride(vec![-2])]);
    assert_eq!(t.views, [view(&[3], &[-2], 5, None)]);
    run(
        &[5, 3],
        &[Op::Pad(vec![(1, 0), (0, 2)]), Op::Stride(vec![-3, 2])],
    );
}

#[test]
fn zero_sized_shapes() {
    let ops = [
        Op::Reshape(vec![3, 0]),
        Op::Permute(vec![1, 0]),
        Op::Pad(vec![(1, 0), (0, 1)]),
    ];
    let t = run(&[0, 3], &ops);
    assert_eq!(t.real_size(), 0);
    let t = run(&[1, 0], &[Op::Expand(vec![4, 0]), Op::Reshape(vec![0])]);
    assert_eq!((t.size(), t.real_size()), (0, 0));
}

#[test]
fn carried_coordinates_do_not_merge() {
    for end in 1..=6 {
        let ops = [
            Op::Permute(vec![1, 0]),
            Op::Reshape(vec![6]),
            Op::Shrink(vec![(0, end)]),
        ];
        let t = ops.iter().fold(st(&[2, 3]), |t, op| op.apply_stacked(&t));
        let naive = ops.iter().fold(Naive::new(&[2, 3]), |n, op| n.apply(op));
        check(&t, &naive, &end);
        check(&t.simplify(), &naive, &end);
    }
}

#[test]
fn expr_node_unravels_a_flat_index() {
    let t = st(&[2, 3]).permute(&[1, 0]).expect("a permutation");
    let (idx, valid) = t.expr_node(&Node::var("f", 0, 5));
    assert_eq!(idx.render(), "(((f%2)*3)+(f//2))");
    assert_eq!(valid, Node::num(1));
}

#[test]
fn a_permuted_view_reaches_each_element_once() {
    assert!(run(&[2, 3, 4], &[]).is_permutation());
    assert!(run(&[2, 3, 4], &[Op::Permute(vec![2, 0, 1])]).is_permutation());
    // Broadcast, padded or shrunk views reach some elements twice or not at all; a permuted
    // view flattened (two views) is not recognised.
    assert!(!run(&[1, 3], &[Op::Expand(vec![2, 3])]).is_permutation());
    assert!(!run(&[2, 3], &[Op::Pad(vec![(1, 0), (0, 0)])]).is_permutation());
    assert!(!run(&[4, 3], &[Op::Shrink(vec![(1, 3), (0, 3)])]).is_permutation());
    assert!(!run(&[4, 3], &[Op::Permute(vec![1, 0]), Op::Reshape(vec![12])]).is_permutation());
}
