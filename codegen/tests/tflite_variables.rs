//! Resource variables (`VAR_HANDLE`, `READ_VARIABLE`, `ASSIGN_VARIABLE`, `CALL_ONCE`) become
//! the graph's states; a model whose variables Kiln cannot keep is refused naming the
//! variable: microWakeWord's `hey_jarvis` (a real streaming model), altered.

use kiln_codegen::dtype::DType;
use kiln_codegen::tensor::Tensor;
use kiln_codegen::tflite::schema::BuiltinOperator;
use kiln_codegen::tflite::{self, TfliteModel};

fn hey_jarvis() -> TfliteModel {
    let path = format!(
        "{}/../tests/models/tflite-real/hey_jarvis.tflite",
        env!("CARGO_MANIFEST_DIR")
    );
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    tflite::load_bytes(&bytes).expect("the model reads")
}

/// The import's error with its causes, `a: b: c`.
fn error_chain(m: &TfliteModel) -> String {
    let e = tflite::import(m).expect_err("the import fails");
    kiln_codegen::error::chain(&e)
}

#[test]
fn each_variable_is_a_state_typed_by_its_assignments() {
    let imported = tflite::import(&hey_jarvis()).unwrap();
    let states = &imported.graph.states;
    assert_eq!(states.len(), 6);
    assert!(states.iter().all(|s| s.dtype == DType::I8), "{states:?}");
    let first = states.iter().find(|s| s.name == "stream/states").unwrap();
    assert_eq!(first.shape, [1, 2, 1, 40]);
    // CALL_ONCE's subgraph assigns zeros; every state changes in a run.
    assert!(states.iter().all(|s| s.init.is_some() && s.next.is_some()));
    assert_eq!(imported.graph.next_states().len(), 6);
    assert_eq!(imported.graph.inputs.len(), 1);
}

#[test]
fn a_variable_assigned_two_shapes_is_refused() {
    let mut m = hey_jarvis();
    let init = &mut m.bodies[0];
    let assign = init
        .ops
        .iter()
        .find(|o| o.code == BuiltinOperator::AssignVariable)
        .unwrap();
    let value = assign.inputs[1].unwrap();
    let t = &mut init.tensors[value.0 as usize];
    t.shape.push(1);
    if let Some(data) = t.data.take() {
        let (dtype, bytes) = (data.dtype(), data.into_bytes());
        t.data = Some(Tensor::new(dtype, t.shape.clone(), bytes).unwrap());
    }
    let e = error_chain(&m);
    assert!(e.contains("variable \"stream"), "{e}");
    assert!(e.contains("a variable keeps one type and shape"), "{e}");
}

#[test]
fn a_variable_read_but_never_assigned_is_refused() {
    let mut m = hey_jarvis();
    let is_assign = |o: &tflite::TfOp| o.code == BuiltinOperator::AssignVariable;
    m.ops.retain(|o| !is_assign(o));
    m.bodies[0].ops.retain(|o| !is_assign(o));
    let e = error_chain(&m);
    assert!(e.contains("VAR_HANDLE"), "{e}");
    assert!(e.contains("is read but never assigned"), "{e}");
}
