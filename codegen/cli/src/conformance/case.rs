//! One case, in this process: import, compile, run on the host and compare.

use std::path::Path;

use super::Outcome;
use kiln_codegen::bundle::Bundle;
use kiln_codegen::compile::{compile_graph, CompileError};
use kiln_codegen::dtype::{DType, Scalar};
use kiln_codegen::error::chain;
use kiln_codegen::onnx::{self, ops::OpError, AttrProblem, ImportError, OnnxError};
use kiln_codegen::render::{ProgramError, RenderError};
use kiln_codegen::target::Target;
use kiln_codegen::tensor::Tensor;
use kiln_codegen::tensorio::{self, TensorIoError};
use kiln_runners::{Case, CaseError, CaseOutcome, RunnerOptions};

/// Relative tolerance of float outputs.
pub const RTOL: f64 = 1e-3;
/// Absolute tolerance of float outputs.
pub const ATOL: f64 = 1e-7;

pub(super) fn fail(reason: impl Into<String>, detail: impl Into<String>) -> Outcome {
    Outcome::Fail {
        reason: reason.into(),
        detail: detail.into(),
    }
}

pub(super) fn skip(reason: impl Into<String>) -> Outcome {
    Outcome::Skip {
        reason: reason.into(),
    }
}

/// The name of an ONNX element type code Kiln does not know.
fn elem_name(code: i32) -> String {
    match code {
        14 => "complex64".to_string(),
        15 => "complex128".to_string(),
        _ => format!("code {code}"),
    }
}

/// A skip for an element type or value type Kiln does not have, else `None`.
fn unsupported_type(e: &OnnxError) -> Option<Outcome> {
    match e {
        OnnxError::UnsupportedElemType { elem, .. } => {
            Some(skip(format!("unsupported element type {elem}")))
        }
        OnnxError::UnknownElemType { code, .. } => Some(skip(format!(
            "unsupported element type {}",
            elem_name(*code)
        ))),
        OnnxError::UnsupportedValueType { what, .. } => {
            Some(skip(format!("unsupported value type ({what})")))
        }
        OnnxError::ExternalData { .. } => Some(skip("external tensor data")),
        _ => None,
    }
}

/// A test data file Kiln cannot read: a skip when its element type is one Kiln lacks.
fn classify_read(what: &str, e: &TensorIoError) -> Outcome {
    match e {
        TensorIoError::BadPb { source, .. } => unsupported_type(source),
        _ => None,
    }
    .unwrap_or_else(|| fail(what, chain(e)))
}

/// Reads the case's `prefix` files from `data`; the outcome when one cannot be read. Data of a
/// type Kiln lacks (strings) is refused as it is read; a model that also has ops Kiln lacks is
/// skipped for those, which its import names first.
fn read_data(
    model: &onnx::OnnxModel,
    data: &Path,
    prefix: &str,
    what: &str,
) -> Result<Vec<Tensor>, Outcome> {
    tensorio::read_dir_tensors(data, prefix).map_err(|e| {
        let typed = match &e {
            TensorIoError::BadPb { source, .. } => {
                matches!(source.as_ref(), OnnxError::UnsupportedElemType { .. })
            }
            _ => false,
        };
        match typed.then(|| onnx::import(model, &[])) {
            Some(Err(ops @ ImportError::UnsupportedOps { .. })) => classify_import(&ops),
            _ => classify_read(what, &e),
        }
    })
}

/// Sorts an import error into a skip (an op, type or mode the importer says it lacks) or a
/// failure.
fn classify_import(e: &ImportError) -> Outcome {
    match e {
        ImportError::UnsupportedOps { ops } => {
            let mut kinds: Vec<&str> = ops.iter().map(|(op, _)| op.as_str()).collect();
            kinds.sort();
            kinds.dedup();
            skip(format!("unsupported op {}", kinds.join(", ")))
        }
        ImportError::Onnx(o) => {
            unsupported_type(o).unwrap_or_else(|| fail("import: model", chain(e)))
        }
        ImportError::Node { op, source, .. } => match source.as_ref() {
            OpError::Unsupported(what) => skip(format!("{op}: not supported: {what}")),
            OpError::Attribute {
                attr,
                problem: AttrProblem::Unsupported(what),
            } => skip(format!("{op}: attribute {attr}: not supported: {what}")),
            OpError::Onnx(o) => {
                unsupported_type(o).unwrap_or_else(|| fail(format!("import: {op}"), chain(e)))
            }
            _ => fail(format!("import: {op}"), chain(e)),
        },
        _ => fail("import", chain(e)),
    }
}

/// A case compiled to a bundle, with its inputs and what its outputs must be.
pub struct Prepared {
    pub bundle: kiln_codegen::bundle::Bundle,
    /// Each model input, raw little-endian.
    pub inputs: Vec<Vec<u8>>,
    pub expected: Vec<Tensor>,
    /// Each output's type and shape, as compiled.
    pub outputs: Vec<(Scalar, Vec<usize>)>,
    /// The outputs of data-dependent length, cut to it before they are compared.
    pub bounded: Vec<kiln_codegen::graph::Bounded>,
    /// How many times one loaded model runs on the inputs; the last outputs are compared.
    pub invocations: usize,
}

/// Runs the case in folder `dir` on `place` (a runner's name: `host`, `opencl`; the host
/// compiles the kernels quickly), compiled for its target, and says what became of it. A
/// kernel the place cannot render or run (a type or feature it lacks) is a skip that names it.
pub fn run_case(dir: &Path, place: &str) -> Outcome {
    let options = RunnerOptions {
        quick: true,
        ..RunnerOptions::default()
    };
    let mut runner = match kiln_runners::by_name(place, &options) {
        Ok(r) => r,
        Err(e) => return fail(place, chain(&e)),
    };
    let case = match prepare(dir, &runner.target()) {
        Ok(c) => c,
        Err(outcome) => return outcome,
    };
    match runner.run_cases(&[case.as_case()], &mut |_, _| {}) {
        Ok(mut outcomes) => match outcomes.pop() {
            Some(got) => outcome_of(&case, got),
            None => fail(place, "no outcome"),
        },
        Err(e) => fail(place, chain(&e)),
    }
}

/// What became of a case, from what its run gave: its outputs compared, or a skip where the
/// place cannot run it, or a failure.
pub fn outcome_of(case: &Prepared, got: CaseOutcome) -> Outcome {
    match got {
        Ok(outputs) => check_outputs(case, &outputs),
        Err(CaseError::Unsupported(why)) => skip(why),
        Err(e) => fail(e.to_string().lines().next().unwrap_or(""), chain(&e)),
    }
}

/// Compares outputs with the case's expected ones.
pub fn check_outputs(case: &Prepared, got: &[Vec<u8>]) -> Outcome {
    let shapes: Vec<(DType, Vec<usize>)> = (case.outputs.iter())
        .map(|(s, shape)| (DType::from(*s), shape.clone()))
        .collect();
    let got = match kiln_codegen::graph::cut_bounded(&case.bounded, &shapes, got) {
        Ok(cut) => cut,
        Err(detail) => return fail("output length", detail),
    };
    if got.len() != case.expected.len() {
        let detail = format!("{} outputs, expected {}", got.len(), case.expected.len());
        return fail("output count", detail);
    }
    let scalars = (0..case.outputs.len())
        .filter(|k| !case.bounded.iter().any(|b| b.length == *k))
        .map(|k| case.outputs[k].0);
    for (i, (((shape, got), want), scalar)) in
        got.iter().zip(&case.expected).zip(scalars).enumerate()
    {
        if let Err(detail) = compare(got, scalar, shape, want) {
            return fail("wrong answer", format!("output {i}: {detail}"));
        }
    }
    Outcome::Pass
}

/// A case imported: the graph, each input's name and data, and the expected outputs.
pub struct ImportedCase {
    pub imported: onnx::import::Imported,
    pub inputs: Vec<(String, Tensor)>,
    pub expected: Vec<Tensor>,
    /// How many times the reference ran the model on the inputs (a stateful op's case).
    pub invocations: usize,
}

impl Prepared {
    /// The case as a runner takes it.
    pub fn as_case(&self) -> Case<'_> {
        Case {
            bundle: &self.bundle,
            inputs: &self.inputs,
            invocations: self.invocations,
        }
    }
}

/// Loads, imports and compiles the case in folder `dir` for `target`; the outcome when it gets
/// no further.
pub fn prepare(dir: &Path, target: &Target) -> Result<Prepared, Outcome> {
    let case = load_case(dir, target)?;
    let i = &case.imported;
    let bundle = match compile_graph("case", &i.graph, &i.outputs, target, true, &mut |_, _| {}) {
        Ok(b) => b,
        Err(CompileError::Program(ProgramError::Render(RenderError::Unsupported {
            what, ..
        }))) => return Err(skip(format!("cannot render {what}"))),
        Err(e) => return Err(fail("compile", chain(&e))),
    };
    prepared(case, bundle)
}

/// The compiled case's inputs (checked against the model's types) and outputs.
fn prepared(case: ImportedCase, bundle: Bundle) -> Result<Prepared, Outcome> {
    let ImportedCase {
        imported,
        inputs,
        expected,
        invocations,
    } = case;
    let mut raw = Vec::new();
    for (i, ((_, t), v)) in inputs.iter().zip(&imported.graph.inputs).enumerate() {
        if t.dtype() != v.dtype.scalar {
            let detail = format!(
                "input {i}: file is {}, model wants {:?}",
                t.dtype(),
                v.dtype
            );
            return Err(fail("input type", detail));
        }
        raw.push(t.bytes().to_vec());
    }
    let outputs = imported
        .outputs
        .iter()
        .map(|o| (o.dtype.scalar, o.shape().to_vec()))
        .collect();
    Ok(Prepared {
        bundle,
        inputs: raw,
        expected,
        outputs,
        bounded: imported.bounded.clone(),
        invocations,
    })
}

/// Loads and imports the case in folder `dir` of either suite, as the compiler imports it for
/// `target`: a TFLite case ([`super::tflite`]), or an ONNX node test with its data in
/// `test_data_set_0`.
pub fn load_case(dir: &Path, target: &Target) -> Result<ImportedCase, Outcome> {
    if super::tflite::is_case(dir) {
        let options = kiln_codegen::model::ImportOptions::default().for_target(target);
        super::tflite::import_case(dir, &options)
    } else {
        import_case(dir, &dir.join("test_data_set_0"))
    }
}

/// Loads and imports the ONNX case in folder `dir`, its inputs and expected outputs read from
/// `data` (`input_N`/`output_N`, `.pb` or `.npy`); inputs an op needs at compile time are
/// frozen into the model. The outcome when it gets no further.
pub fn import_case(dir: &Path, data: &Path) -> Result<ImportedCase, Outcome> {
    let model = match onnx::load(&dir.join("model.onnx")) {
        Ok(m) => m,
        Err(e) => {
            return Err(match &e {
                OnnxError::UnsupportedOpset { opset } => skip(format!("opset {opset}")),
                OnnxError::NoDefaultOpset => skip("only other domains than the default one"),
                other => unsupported_type(other).unwrap_or_else(|| fail("load", chain(&e))),
            })
        }
    };
    let inputs = if model.graph.inputs.is_empty() {
        Vec::new()
    } else {
        read_data(&model, data, "input", "reading inputs")?
    };
    let expected = read_data(&model, data, "output", "reading outputs")?;
    if inputs.len() != model.graph.inputs.len() {
        let detail = format!(
            "{} inputs, {} input files",
            model.graph.inputs.len(),
            inputs.len()
        );
        return Err(fail("input count", detail));
    }
    let mut model = model;
    let mut inputs: Vec<(String, Tensor)> = model
        .graph
        .inputs
        .iter()
        .map(|v| v.name.clone())
        .zip(inputs)
        .collect();
    let imported = loop {
        let shapes: Vec<(String, Vec<usize>)> = inputs
            .iter()
            .map(|(n, t)| (n.clone(), t.shape().to_vec()))
            .collect();
        let e = match onnx::import(&model, &shapes) {
            Ok(i) => break i,
            Err(e) => e,
        };
        let wanted = match &e {
            ImportError::Node { source, .. } => match source.as_ref() {
                OpError::NotKnown { name, .. } => Some(name.clone()),
                _ => None,
            },
            _ => None,
        };
        if !wanted.is_some_and(|name| freeze(&mut model, &mut inputs, &name)) {
            return Err(classify_import(&e));
        }
    };
    Ok(ImportedCase {
        imported,
        inputs,
        expected,
        invocations: 1,
    })
}

/// An op needs the value `name` at compile time (an axes, pads or shape input): the test's
/// data for that graph input, or else for every non-float input, or else (a value computed from
/// floats, as a loop's trip count from a float range) for every input, becomes an initializer,
/// as it would be in a model compiled ahead of time. False when there is nothing left to fix.
fn freeze(model: &mut onnx::OnnxModel, inputs: &mut Vec<(String, Tensor)>, name: &str) -> bool {
    let direct = inputs.iter().any(|(n, _)| n == name);
    let integers = inputs.iter().any(|(_, t)| !t.dtype().is_float());
    let fixed = |n: &str, t: &Tensor| {
        if direct {
            n == name
        } else {
            !integers || !t.dtype().is_float()
        }
    };
    let (frozen, kept): (Vec<_>, Vec<_>) = inputs.drain(..).partition(|(n, t)| fixed(n, t));
    *inputs = kept;
    if frozen.is_empty() {
        return false;
    }
    model
        .graph
        .inputs
        .retain(|v| !frozen.iter().any(|(n, _)| *n == v.name));
    model.graph.initializers.extend(frozen);
    true
}

/// Compares one output with its expected tensor: same type and shape; floats within
/// `ATOL + RTOL·|want|` (NaN only where NaN is expected), every other type exactly.
pub fn compare(got: &[u8], scalar: Scalar, shape: &[usize], want: &Tensor) -> Result<(), String> {
    if scalar != want.dtype() {
        return Err(format!("type {scalar}, expected {}", want.dtype()));
    }
    if shape != want.shape() {
        return Err(format!("shape {shape:?}, expected {:?}", want.shape()));
    }
    let got = Tensor::new(scalar, shape.to_vec(), got.to_vec()).map_err(|e| e.to_string())?;
    let (g, w) = (got.to_f64(), want.to_f64());
    if !scalar.is_float() {
        let size = scalar.size();
        let bad = got
            .bytes()
            .chunks_exact(size)
            .zip(want.bytes().chunks_exact(size))
            .position(|(a, b)| a != b);
        return match bad {
            None => Ok(()),
            Some(i) => Err(format!("element {i}: {} expected {}", g[i], w[i])),
        };
    }
    let mut bad = 0;
    let mut first = None;
    for (i, (a, b)) in g.iter().zip(&w).enumerate() {
        let ok = if a.is_nan() || b.is_nan() {
            a.is_nan() && b.is_nan()
        } else if a.is_infinite() || b.is_infinite() {
            a == b
        } else {
            (a - b).abs() <= ATOL + RTOL * b.abs()
        };
        if !ok {
            bad += 1;
            first.get_or_insert((i, *a, *b));
        }
    }
    match first {
        None => Ok(()),
        Some((i, a, b)) => Err(format!(
            "{bad} of {} elements differ; first at {i}: {a} expected {b}",
            g.len()
        )),
    }
}

#[cfg(test)]
mod tests;
