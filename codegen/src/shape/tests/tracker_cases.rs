//! Hand-picked movement ops: the views they make, the strides they report, and the errors.

use super::naive::{check, Naive, Op};
use crate::shape::{strides_for_shape, Node, ShapeError, ShapeTracker, View};

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
fn illegal_axes_are_errors() {
    let t = st(&[2, 3]);
    let rank = |op, got| ShapeError::Rank {
        op,
        shape: vec![2, 3],
        rank: 2,
        got,
    };
    assert_eq!(t.permute(&[0]), Err(rank("permute", 1)));
    assert_eq!(
        t.permute(&[0, 2]),
        Err(ShapeError::PermuteAxis { axis: 2, rank: 2 })
    );
    let repeat = ShapeError::PermuteRepeat {
        axis: 0,
        axes: vec![0, 0],
    };
    assert_eq!(t.permute(&[0, 0]), Err(repeat));
}

#[test]
fn illegal_sizes_are_errors() {
    let t = st(&[2, 3]);
    let rank = |op, got| ShapeError::Rank {
        op,
        shape: vec![2, 3],
        rank: 2,
        got,
    };
    let size = ShapeError::ReshapeSize {
        from: vec![2, 3],
        to: vec![4],
        from_size: 6,
        to_size: 4,
    };
    assert_eq!(t.reshape(&[4]), Err(size));
    assert!(matches!(
        t.reshape(&[usize::MAX, 2]),
        Err(ShapeError::ReshapeSize { .. })
    ));
    assert_eq!(
        t.expand(&[2, 6]),
        Err(ShapeError::Expand {
            axis: 1,
            from: 3,
            to: 6
        })
    );
    assert_eq!(t.expand(&[2, 3, 1]), Err(rank("expand", 3)));
    assert_eq!(t.pad(&[(1, 1)]), Err(rank("pad", 1)));
    assert_eq!(t.shrink(&[(0, 2)]), Err(rank("shrink", 1)));
    let past = ShapeError::Shrink {
        axis: 0,
        begin: 0,
        end: 3,
        size: 2,
    };
    assert_eq!(t.shrink(&[(0, 3), (0, 3)]), Err(past));
    let backwards = ShapeError::Shrink {
        axis: 1,
        begin: 2,
        end: 1,
        size: 3,
    };
    assert_eq!(t.shrink(&[(0, 2), (2, 1)]), Err(backwards));
    assert_eq!(t.stride(&[1, 0]), Err(ShapeError::ZeroStride { axis: 1 }));
    assert_eq!(t.stride(&[1]), Err(rank("stride", 1)));
    assert_eq!(t.flip(&[true]), Err(rank("flip", 1)));
    let message = t.expand(&[2, 6]).unwrap_err().to_string();
    assert_eq!(
        message,
        "expand: axis 1 has size 3, which cannot grow to 6 (only size 1 can)"
    );
}
