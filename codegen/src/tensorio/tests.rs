use std::path::{Path, PathBuf};

use proptest::prelude::*;

use super::{npy, read_dir_tensors, read_tensor, write_npy, TensorIoError};
use crate::dtype::Scalar;
use crate::onnx::proto::TensorProto;
use crate::onnx::{ElemType, OnnxError};
use crate::tensor::Tensor;

/// The fixtures `scripts/make_tensor_fixtures.py` writes, by element type name.
const FIXTURES: [&str; 12] = [
    "f32", "f64", "f16", "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "bool",
];

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data")
}

fn fixture(sub: &str, name: &str) -> PathBuf {
    data_dir().join(sub).join(name)
}

/// The values every fixture of type `name` holds, in shape (2, 3).
fn fixture_values(name: &str) -> Vec<f64> {
    match name {
        "bool" => vec![0.0, 1.0, 0.0, 1.0, 0.0, 1.0],
        n if n.starts_with('u') => (0..6).map(f64::from).collect(),
        _ => (-3..3).map(f64::from).collect(),
    }
}

fn scalar_named(name: &str) -> Scalar {
    *Scalar::ALL.iter().find(|s| s.name() == name).unwrap()
}

#[test]
fn reads_npy_files_written_by_numpy() {
    for name in FIXTURES {
        let t = read_tensor(&fixture("npy", &format!("{name}.npy"))).unwrap();
        assert_eq!(t.dtype(), scalar_named(name), "{name}");
        assert_eq!(t.shape(), [2, 3], "{name}");
        assert_eq!(t.to_f64(), fixture_values(name), "{name}");
    }
}

#[test]
fn reads_pb_files_written_by_onnx_raw_and_typed() {
    for name in FIXTURES {
        let npy = read_tensor(&fixture("npy", &format!("{name}.npy"))).unwrap();
        for kind in ["raw", "typed"] {
            let t = read_tensor(&fixture("pb", &format!("{kind}_{name}.pb"))).unwrap();
            assert_eq!(t, npy, "{kind}_{name}.pb");
        }
    }
}

#[test]
fn reads_scalar_empty_rank4_and_version2_npy() {
    let scalar = read_tensor(&fixture("npy", "scalar_f32.npy")).unwrap();
    assert_eq!(
        (scalar.shape().len(), scalar.to_f32().unwrap()),
        (0, vec![2.5])
    );
    let empty = read_tensor(&fixture("npy", "empty_f32.npy")).unwrap();
    assert_eq!((empty.shape(), empty.bytes().len()), (&[0, 3][..], 0));
    let rank4 = read_tensor(&fixture("npy", "rank4_f32.npy")).unwrap();
    assert_eq!(rank4.shape(), [1, 2, 2, 3]);
    assert_eq!(
        rank4.to_f32().unwrap(),
        (0..12).map(|v| v as f32).collect::<Vec<_>>()
    );
    let v2 = read_tensor(&fixture("npy", "v2_i32.npy")).unwrap();
    assert_eq!(
        (v2.dtype(), v2.to_f64()),
        (Scalar::I32, fixture_values("i32"))
    );
}

#[test]
fn refuses_big_endian_and_fortran_order() {
    for (name, why) in [
        ("big_endian_f32.npy", "big-endian"),
        ("fortran_f32.npy", "Fortran"),
    ] {
        match read_tensor(&fixture("npy", name)) {
            Err(TensorIoError::BadNpy { reason, .. }) => assert!(reason.contains(why), "{reason}"),
            other => panic!("{name}: {other:?}"),
        }
    }
}

#[test]
fn writes_npy_byte_for_byte_as_numpy_does() {
    let names = FIXTURES.iter().map(|n| format!("{n}.npy"));
    for name in names.chain(["scalar_f32.npy", "empty_f32.npy", "rank4_f32.npy"].map(String::from))
    {
        let original = std::fs::read(fixture("npy", &name)).unwrap();
        let tensor = npy::decode(&original).unwrap();
        assert_eq!(npy::encode(&tensor).unwrap(), original, "{name}");
    }
}

#[test]
fn truncated_or_garbage_npy_is_an_error() {
    let original = std::fs::read(fixture("npy", "rank4_f32.npy")).unwrap();
    for len in 0..original.len() {
        assert!(npy::decode(&original[..len]).is_err(), "cut at {len}");
    }
    let mut longer = original.clone();
    longer.push(0);
    assert!(npy::decode(&longer).is_err());
    assert!(npy::decode(b"\x93NUMPY\x01\x00\x05\x00{'a'}").is_err());
    assert!(npy::decode(b"not a numpy file at all").is_err());
}

#[test]
fn a_pb_of_a_type_kiln_lacks_is_refused_for_its_type() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("input_0.pb");
    let text = TensorProto {
        data_type: Some(ElemType::String.code()),
        dims: vec![1],
        string_data: vec![b"hi".to_vec()],
        ..Default::default()
    };
    std::fs::write(&path, prost::Message::encode_to_vec(&text)).unwrap();
    let err = read_tensor(&path).unwrap_err();
    let TensorIoError::BadPb { source, .. } = &err else {
        panic!("{err}");
    };
    assert!(
        matches!(
            source.as_ref(),
            OnnxError::UnsupportedElemType {
                elem: ElemType::String,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn unknown_extension_missing_and_garbage_files_are_errors() {
    let err = read_tensor(Path::new("x.txt")).unwrap_err();
    assert!(matches!(err, TensorIoError::UnknownExtension { .. }));
    let err = read_tensor(Path::new("does/not/exist.npy")).unwrap_err();
    assert!(matches!(err, TensorIoError::Io { .. }), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let garbage = dir.path().join("input_0.pb");
    std::fs::write(&garbage, b"\xff\xff\xff not a tensor").unwrap();
    let err = read_tensor(&garbage).unwrap_err();
    assert!(matches!(err, TensorIoError::BadPb { .. }), "{err}");
}

fn tensor(value: f32) -> Tensor {
    Tensor::from_f32(vec![1, 2], &[value, -value]).unwrap()
}

#[test]
fn reads_a_directory_of_tensors_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_npy(&d.join("input_0.npy"), &tensor(1.0)).unwrap();
    std::fs::copy(fixture("pb", "raw_i8.pb"), d.join("input_1.pb")).unwrap();
    write_npy(&d.join("input_2.npy"), &tensor(3.0)).unwrap();
    write_npy(&d.join("output_0.npy"), &tensor(9.0)).unwrap();
    write_npy(&d.join("input_01.npy"), &tensor(9.0)).unwrap();
    let read = read_dir_tensors(d, "input").unwrap();
    assert_eq!(read.len(), 3);
    assert_eq!(
        (read[0].clone(), read[1].dtype()),
        (tensor(1.0), Scalar::I8)
    );
    assert_eq!(read[2], tensor(3.0));
    assert_eq!(read_dir_tensors(d, "output").unwrap(), [tensor(9.0)]);

    write_npy(&d.join("input_1.npy"), &tensor(2.0)).unwrap();
    let err = read_dir_tensors(d, "input").unwrap_err();
    assert!(
        matches!(err, TensorIoError::Ambiguous { index: 1, .. }),
        "{err}"
    );

    std::fs::remove_file(d.join("input_1.npy")).unwrap();
    std::fs::remove_file(d.join("input_1.pb")).unwrap();
    let err = read_dir_tensors(d, "input").unwrap_err();
    assert!(
        matches!(err, TensorIoError::Gap { missing: 1, .. }),
        "{err}"
    );
    let err = read_dir_tensors(d, "label").unwrap_err();
    assert!(matches!(err, TensorIoError::NoTensors { .. }), "{err}");
}

fn any_tensor() -> impl Strategy<Value = Tensor> {
    (
        prop::sample::select(Scalar::ALL.to_vec()),
        prop::collection::vec(0usize..5, 0..5),
    )
        .prop_flat_map(|(dtype, dims)| {
            let len = dims.iter().product::<usize>() * dtype.size();
            prop::collection::vec(any::<u8>(), len)
                .prop_map(move |bytes| Tensor::new(dtype, dims.clone(), bytes).unwrap())
        })
}

proptest! {
    #[test]
    fn npy_round_trips(t in any_tensor()) {
        prop_assert_eq!(npy::decode(&npy::encode(&t).unwrap()).unwrap(), t);
    }

    #[test]
    fn npy_decode_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        let mut file = b"\x93NUMPY\x01\x00".to_vec();
        file.extend(&bytes);
        let _ = npy::decode(&file);
        let _ = npy::decode(&bytes);
    }
}
