use crate::onnx::{parse_shape_override, pin_dims, Dim, ElemType, OnnxError, ValueInfo};

fn input(name: &str, dims: Vec<Dim>) -> ValueInfo {
    ValueInfo {
        name: name.to_string(),
        elem: ElemType::F32,
        dims,
    }
}

fn free(name: &str) -> Dim {
    Dim::Free(Some(name.to_string()))
}

#[test]
fn parses_shape_flags() {
    assert_eq!(
        parse_shape_override("input_1=1x49x10x1").unwrap(),
        ("input_1".into(), vec![1, 49, 10, 1])
    );
    assert_eq!(
        parse_shape_override("input_1:0=7").unwrap(),
        ("input_1:0".into(), vec![7])
    );
    assert_eq!(
        parse_shape_override("a=b=2x3").unwrap(),
        ("a=b".into(), vec![2, 3])
    );
    for bad in [
        "", "x", "=1x2", "x=", "x=1x", "x=1xx2", "x=0x3", "x=-1", "x=1.5",
    ] {
        let err = parse_shape_override(bad).unwrap_err();
        assert!(
            matches!(err, OnnxError::BadShapeFlag { .. }),
            "{bad}: {err}"
        );
    }
}

#[test]
fn a_free_batch_dim_defaults_to_one() {
    let inputs = [input("x", vec![free("N"), Dim::Fixed(49), Dim::Fixed(10)])];
    assert_eq!(
        pin_dims(&inputs, &[]).unwrap(),
        [("x".to_string(), vec![1, 49, 10])]
    );
    let pinned = pin_dims(&inputs, &[("x".into(), vec![4, 49, 10])]).unwrap();
    assert_eq!(pinned, [("x".to_string(), vec![4, 49, 10])]);
}

#[test]
fn other_free_dims_need_an_override() {
    let inputs = [
        input("a", vec![Dim::Fixed(1)]),
        input("tokens", vec![Dim::Fixed(1), free("seq"), Dim::Free(None)]),
    ];
    let err = pin_dims(&inputs, &[]).unwrap_err();
    assert!(
        matches!(&err, OnnxError::FreeDim { input, axis: 1, param: Some(p) } if input == "tokens" && p == "seq"),
        "{err}"
    );
    assert!(err.to_string().contains("seq"), "{err}");
    let pinned = pin_dims(&inputs, &[("tokens".into(), vec![1, 5, 2])]).unwrap();
    assert_eq!(pinned[1].1, [1, 5, 2]);
}

#[test]
fn bad_overrides_are_errors() {
    let inputs = [input("x", vec![free("N"), Dim::Fixed(3)])];
    let err = pin_dims(&inputs, &[("y".into(), vec![1, 3])]).unwrap_err();
    assert!(
        matches!(&err, OnnxError::UnknownInput { name, .. } if name == "y"),
        "{err}"
    );
    let err = pin_dims(&inputs, &[("x".into(), vec![1, 3, 1])]).unwrap_err();
    assert!(
        matches!(
            err,
            OnnxError::OverrideRank {
                expected: 2,
                given: 3,
                ..
            }
        ),
        "{err}"
    );
    let err = pin_dims(&inputs, &[("x".into(), vec![1, 4])]).unwrap_err();
    assert!(matches!(
        err,
        OnnxError::OverrideConflict {
            axis: 1,
            fixed: 3,
            given: 4,
            ..
        }
    ));
    let twice = [("x".into(), vec![1, 3]), ("x".into(), vec![2, 3])];
    let err = pin_dims(&inputs, &twice).unwrap_err();
    assert!(matches!(err, OnnxError::DuplicateOverride { .. }), "{err}");
}
