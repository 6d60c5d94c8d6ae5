use super::{Tensor, TensorError};
use crate::dtype::Scalar;
use crate::uop::interp::HostBuffer;

/// Values every type holds exactly, its extremes among them.
fn exact_values(s: Scalar) -> Vec<f64> {
    let two_63 = 2f64.powi(63);
    match s {
        Scalar::Bool => vec![0.0, 1.0, 1.0, 0.0],
        Scalar::I8 => vec![-128.0, -1.0, 0.0, 127.0],
        Scalar::U8 => vec![0.0, 1.0, 200.0, 255.0],
        Scalar::I16 => vec![-32768.0, -1.0, 0.0, 32767.0],
        Scalar::U16 => vec![0.0, 1.0, 40000.0, 65535.0],
        Scalar::I32 => vec![-2147483648.0, -1.0, 0.0, 2147483647.0],
        Scalar::U32 => vec![0.0, 1.0, 3e9, 4294967295.0],
        Scalar::I64 => vec![-two_63, -1.0, 0.0, 2f64.powi(62)],
        Scalar::U64 => vec![0.0, 1.0, two_63, 2f64.powi(63) + 2f64.powi(62)],
        Scalar::F16 => vec![-2.5, 0.333251953125, 65504.0, f64::NEG_INFINITY],
        Scalar::F32 => vec![-2.5, 0.1f32 as f64, f32::MAX as f64, f64::INFINITY],
        Scalar::F64 => vec![-2.5, 0.1, f64::MAX, f64::MIN_POSITIVE],
    }
}

#[test]
fn every_scalar_round_trips_through_f64_and_bytes() {
    for s in Scalar::ALL {
        let values = exact_values(s);
        let t = Tensor::from_f64(s, vec![2, 2], &values).unwrap();
        assert_eq!(
            (t.dtype(), t.shape(), t.numel()),
            (s, &[2, 2][..], 4),
            "{s}"
        );
        assert_eq!(t.bytes().len(), 4 * s.size(), "{s}");
        assert_eq!(t.to_f64(), values, "{s}");
        let again = Tensor::new(s, vec![2, 2], t.bytes().to_vec()).unwrap();
        assert_eq!(again, t, "{s}");
        assert_eq!(HostBuffer::from(&t).to_bytes(), t.bytes(), "{s}");
        assert_eq!(
            HostBuffer::from_bytes(s, t.bytes()),
            HostBuffer::from(&t),
            "{s}"
        );
    }
}

#[test]
fn elements_are_little_endian() {
    let bytes = |s, v: f64| Tensor::from_f64(s, vec![1], &[v]).unwrap().into_bytes();
    assert_eq!(bytes(Scalar::F16, 1.0), [0x00, 0x3c]);
    assert_eq!(bytes(Scalar::F32, 1.0), [0x00, 0x00, 0x80, 0x3f]);
    assert_eq!(bytes(Scalar::F64, -2.0), (-2f64).to_le_bytes());
    assert_eq!(bytes(Scalar::I16, -2.0), [0xfe, 0xff]);
    assert_eq!(bytes(Scalar::U32, 258.0), [2, 1, 0, 0]);
    assert_eq!(
        bytes(Scalar::U64, 2f64.powi(63)),
        [0, 0, 0, 0, 0, 0, 0, 0x80]
    );
    assert_eq!(bytes(Scalar::Bool, 1.0), [1]);
}

#[test]
fn numbers_convert_with_c_cast_semantics() {
    let t = Tensor::from_f64(Scalar::U8, vec![4], &[256.0, -1.0, 3.9, f64::NAN]).unwrap();
    assert_eq!(t.bytes(), [0, 255, 3, 0]);
    let t = Tensor::from_f64(Scalar::I8, vec![2], &[-1.5, 130.0]).unwrap();
    assert_eq!(t.to_i64(), Some(vec![-1, -126]));
    let t = Tensor::from_f64(Scalar::Bool, vec![3], &[2.0, 0.0, -0.5]).unwrap();
    assert_eq!(t.bytes(), [1, 0, 1]);
    let t = Tensor::from_f64(Scalar::F16, vec![2], &[65520.0, 1.0 + 2f64.powi(-12)]).unwrap();
    assert_eq!(t.to_f64(), [f64::INFINITY, 1.0]);
    let t = Tensor::from_i64(Scalar::I8, vec![2], &[300, -129]).unwrap();
    assert_eq!(t.to_i64(), Some(vec![44, 127]));
    assert_eq!(
        Tensor::new(Scalar::Bool, vec![1], vec![7])
            .unwrap()
            .to_f64(),
        [1.0]
    );
}

#[test]
fn u64_values_wrap_as_i64_and_read_as_unsigned_f64() {
    let t = Tensor::from_i64(Scalar::U64, vec![1], &[-1]).unwrap();
    assert_eq!(t.bytes(), [0xff; 8]);
    assert_eq!(t.to_i64(), Some(vec![-1]));
    assert_eq!(t.to_f64(), [u64::MAX as f64]);
}

#[test]
fn integer_and_f32_views_refuse_other_types() {
    let f = Tensor::from_f64(Scalar::F32, vec![2], &[1.0, 2.0]).unwrap();
    assert_eq!((f.to_i64(), f.to_f32()), (None, Some(vec![1.0, 2.0])));
    let i = Tensor::from_i64(Scalar::I32, vec![2], &[1, 2]).unwrap();
    assert_eq!((i.to_i64(), i.to_f32()), (Some(vec![1, 2]), None));
    let b = Tensor::from_f64(Scalar::Bool, vec![1], &[1.0]).unwrap();
    assert_eq!(b.to_i64(), Some(vec![1]));
}

#[test]
fn f32_values_keep_their_bits() {
    let quiet_payload = f32::from_bits(0x7fc0_1234);
    let t = Tensor::from_f32(vec![], &[quiet_payload]).unwrap();
    assert_eq!(t.bytes(), 0x7fc0_1234u32.to_le_bytes());
    assert_eq!(t.to_f32().unwrap()[0].to_bits(), 0x7fc0_1234);
}

#[test]
fn a_vector_is_rank_one() {
    let v = Tensor::vector(Scalar::I64, &[3.0, -1.0]);
    assert_eq!(v, Tensor::from_i64(Scalar::I64, vec![2], &[3, -1]).unwrap());
    assert_eq!(Tensor::vector(Scalar::U8, &[]).shape(), [0]);
}

#[test]
fn scalars_and_empty_tensors() {
    let scalar = Tensor::from_f64(Scalar::F32, vec![], &[2.5]).unwrap();
    assert_eq!((scalar.shape(), scalar.numel()), (&[][..], 1));
    let empty = Tensor::new(Scalar::I64, vec![0, 3], vec![]).unwrap();
    assert_eq!((empty.numel(), empty.to_i64()), (0, Some(vec![])));
}

#[test]
fn data_that_does_not_fill_the_shape_is_an_error() {
    let err = Tensor::new(Scalar::F32, vec![2, 3], vec![0; 5]).unwrap_err();
    assert_eq!(
        err,
        TensorError::ByteLength {
            dtype: Scalar::F32,
            shape: vec![2, 3],
            got: 5,
            want: 24
        }
    );
    assert_eq!(
        err.to_string(),
        "f32 tensor of shape [2, 3]: 5 bytes, the shape needs 24"
    );
    let err = Tensor::from_f64(Scalar::I32, vec![2], &[1.0]).unwrap_err();
    assert!(
        matches!(
            err,
            TensorError::ValueCount {
                got: 1,
                want: 2,
                ..
            }
        ),
        "{err}"
    );
    let err = Tensor::from_f32(vec![3], &[1.0]).unwrap_err();
    assert!(
        matches!(
            err,
            TensorError::ValueCount {
                got: 1,
                want: 3,
                ..
            }
        ),
        "{err}"
    );
    let err = Tensor::from_i64(Scalar::I8, vec![], &[]).unwrap_err();
    assert!(
        matches!(
            err,
            TensorError::ValueCount {
                got: 0,
                want: 1,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn a_shape_too_large_to_address_is_an_error() {
    let err = Tensor::new(Scalar::U8, vec![usize::MAX, 2], vec![]).unwrap_err();
    assert!(matches!(err, TensorError::TooLarge { .. }), "{err}");
    let err = Tensor::from_f64(Scalar::F64, vec![usize::MAX / 4], &[]).unwrap_err();
    assert!(matches!(err, TensorError::TooLarge { .. }), "{err}");
}

#[test]
fn bytes_change_in_place_but_keep_their_length() {
    let mut t = Tensor::new(Scalar::U8, vec![2], vec![1, 2]).unwrap();
    t.bytes_mut().reverse();
    assert_eq!(t.bytes(), [2, 1]);
}
