use super::PackError;
use crate::compile::{compile_graph, CompileError};
use crate::dtype::DType;
use crate::error::chain;
use crate::graph::Graph;
use crate::ops::BinaryOp;
use crate::target::Target;
use kiln_firmware::error::CapacityError;

#[test]
fn a_model_past_the_format_keeps_the_capacity_error_as_its_cause() {
    let mut g = Graph::new();
    let xs: Vec<_> = (0..9)
        .map(|i| g.input(&format!("x{i}"), DType::F32, &[4]))
        .collect();
    let sum = xs[1..]
        .iter()
        .try_fold(xs[0].clone(), |acc, x| g.binary(BinaryOp::Add, &acc, x))
        .unwrap();
    let err = compile_graph("wide", &g, &[sum], &Target::c(), true, &mut |_, _| {}).unwrap_err();
    assert!(
        matches!(
            err,
            CompileError::Bundle(PackError::Capacity(CapacityError::ModelTensors { len: 9 }))
        ),
        "{err:?}"
    );
    assert_eq!(
        chain(&err),
        "the model does not fit the schedule format: the model has 9 inputs or outputs, the \
         format holds 8 of each"
    );
}
