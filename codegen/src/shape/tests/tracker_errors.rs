//! Every illegal movement op is a `ShapeError` naming the axis and the values.

use crate::shape::{ShapeError, ShapeTracker};

fn st(shape: &[usize]) -> ShapeTracker {
    ShapeTracker::from_shape(shape)
}

#[test]
fn illegal_axes_are_errors() {
    let t = st(&[2, 3]);
    let rank = |op, got| ShapeError::Rank {
        op,
        shape: vec![2, 3],
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
