//! `IF` and `WHILE` models that Kiln cannot run give errors naming the subgraph, the loop
//! variable or the output at fault, never a panic: the suite's control-flow models, altered.

use kiln_codegen::dtype::Scalar;
use kiln_codegen::tensor::Tensor;
use kiln_codegen::tflite::schema::{BuiltinOptions, IfOptions, WhileOptions};
use kiln_codegen::tflite::{self, TensorId, TfTensor, TfliteModel};
use proptest::prelude::*;

fn bytes(case: &str) -> Vec<u8> {
    let path = format!(
        "{}/../tests/tflite-suite/{case}/model.tflite",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn model(case: &str) -> TfliteModel {
    tflite::load_bytes(&bytes(case)).expect("a suite model reads")
}

/// The import's error with its causes, `a: b: c`.
fn error_chain(m: &TfliteModel) -> String {
    let e = tflite::import(m).expect_err("the import fails");
    kiln_codegen::error::chain(&e)
}

fn set_while(m: &mut TfliteModel, cond: i32, body: i32) {
    m.ops[0].options = Some(BuiltinOptions::WhileOptions(Box::new(WhileOptions {
        cond_subgraph_index: cond,
        body_subgraph_index: body,
    })));
}

#[test]
fn the_suite_models_import() {
    for case in [
        "if_float32_then",
        "while_int8",
        "while_float32_pass_through",
    ] {
        tflite::import(&model(case)).unwrap_or_else(|e| panic!("{case}: {e}"));
    }
}

#[test]
fn a_subgraph_index_out_of_range_is_named() {
    let mut m = model("while_float32");
    set_while(&mut m, 7, 2);
    let e = error_chain(&m);
    assert!(e.contains("operator 0 (WHILE v1)"), "{e}");
    assert!(e.contains("cond subgraph index 7 is out of range"), "{e}");
    let mut m = model("if_int8_then");
    m.ops[0].options = Some(BuiltinOptions::IfOptions(Box::new(IfOptions {
        then_subgraph_index: 0,
        else_subgraph_index: 2,
    })));
    let e = error_chain(&m);
    assert!(e.contains("then subgraph index 0 is out of range"), "{e}");
}

#[test]
fn a_while_counted_by_a_model_input_is_refused_naming_the_variable() {
    let mut m = model("while_float32");
    let counter = m.ops[0].inputs[0].expect("the counter");
    m.tensors[counter.0 as usize].data = None;
    m.inputs.insert(0, counter);
    let e = error_chain(&m);
    assert!(e.contains("reads loop variable 0 (\"i\")"), "{e}");
    assert!(e.contains("not known at compile time"), "{e}");
}

#[test]
fn an_if_whose_branches_disagree_is_refused() {
    let mut m = model("if_float32_then");
    // The condition becomes a run-time input, so both branches are lowered.
    assert!(m.inputs.contains(&m.ops[0].inputs[0].unwrap()));
    let other = &mut m.bodies[1];
    other.tensors.push(TfTensor {
        name: "three".into(),
        dtype: Scalar::F32,
        shape: vec![3],
        quant: None,
        data: Some(Tensor::from_f32(vec![3], &[1.0, 2.0, 3.0]).unwrap()),
    });
    other.outputs = vec![TensorId(other.tensors.len() as u32 - 1)];
    other.ops.clear();
    let e = error_chain(&m);
    assert!(
        e.contains("output 0: the then subgraph 1 gives f32 [2, 3]"),
        "{e}"
    );
    assert!(e.contains("the else subgraph 2 gives f32 [3]"), "{e}");
}

#[test]
fn a_body_that_runs_itself_is_refused() {
    let mut m = model("while_float32");
    let mut op = m.ops[0].clone();
    let body = &mut m.bodies[1];
    op.inputs = body.inputs.iter().map(|&i| Some(i)).collect();
    op.outputs = body.outputs.clone();
    body.ops = vec![op];
    let e = error_chain(&m);
    assert!(e.contains("nests 16 control-flow ops deep"), "{e}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Any byte of a control-flow model changed: an error or a model, never a panic.
    #[test]
    fn corruption_never_panics(case in 0usize..2, at in 8usize..4000, value in any::<u8>()) {
        let mut b = bytes(["if_int8_else", "while_int8_pass_through"][case]);
        let at = at % b.len();
        b[at] = value;
        if let Ok(m) = tflite::load_bytes(&b) {
            let _ = tflite::import(&m);
        }
    }
}
