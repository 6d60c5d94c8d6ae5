//! The TFLite suite's cases: a folder with `model.tflite`, its inputs `input_N.npy` and the
//! reference's outputs `output_N.npy` (TFLM's, or LiteRT's reference kernels' where TFLM does
//! not run the case), listed with the op each tests in the suite's `cases.tsv`
//! (`scripts/make_tflite_suite.py` writes them into `tests/tflite-suite`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::case::{fail, skip, ImportedCase};
use super::{CaseResult, Outcome};
use kiln_codegen::error::chain;
use kiln_codegen::model::{import_bytes, ImportOptions, ModelError};
use kiln_codegen::tensorio;
use kiln_codegen::tflite::{self, OpError, TfliteError};

/// The model file of a TFLite case.
pub const MODEL_FILE: &str = "model.tflite";

/// A case's count of invocations, where the reference ran the model more than once.
pub const INVOCATIONS: &str = "invocations";

/// The suite's list of cases: `case<TAB>op<TAB>type<TAB>reference<TAB>about`.
pub const MANIFEST: &str = "cases.tsv";

/// Per op and type, whether TFLM runs it: `op<TAB>type<TAB>yes|no<TAB>why`.
pub const TFLM_TYPES: &str = "tflm-types.tsv";

/// Whether `dir` holds a TFLite case.
pub fn is_case(dir: &Path) -> bool {
    dir.join(MODEL_FILE).is_file()
}

/// The op a case tests, as the suite's manifest names it, or else its model's first operator.
pub fn case_op(cases: &Path, name: &str) -> String {
    let listed = std::fs::read_to_string(cases.join(MANIFEST))
        .ok()
        .and_then(|text| manifest_op(&text, name));
    listed
        .or_else(|| first_op(&cases.join(name).join(MODEL_FILE)))
        .unwrap_or_else(|| "?".to_string())
}

/// The op of case `name` in a manifest's text.
fn manifest_op(text: &str, name: &str) -> Option<String> {
    text.lines().skip(1).find_map(|line| {
        let mut cols = line.split('\t');
        (cols.next() == Some(name)).then(|| cols.next().map(str::to_string))?
    })
}

fn first_op(model: &Path) -> Option<String> {
    let bytes = std::fs::read(model).ok()?;
    let model = tflite::load_bytes(&bytes).ok()?;
    model.ops.first().map(|op| op.name())
}

/// TFLM's own list beside Kiln's results, per op: the types TFLM runs it in (the suite's
/// `tflm-types.tsv`: `op<TAB>type<TAB>yes|no<TAB>why`) and the types of the cases that pass.
pub fn parity(cases: &Path, results: &[CaseResult]) -> BTreeMap<String, Vec<String>> {
    let read = |file: &str| std::fs::read_to_string(cases.join(file)).unwrap_or_default();
    let mut tflm: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in read(TFLM_TYPES).lines().skip(1) {
        let cols: Vec<&str> = line.split('\t').collect();
        if let [op, ty, "yes", ..] = cols.as_slice() {
            tflm.entry(op.to_string())
                .or_default()
                .insert(ty.to_string());
        }
    }
    let manifest = read(MANIFEST);
    let type_of = |name: &str| {
        manifest.lines().find_map(|line| {
            let cols: Vec<&str> = line.split('\t').collect();
            (cols.first() == Some(&name)).then(|| cols.get(2).map(|t| t.to_string()))?
        })
    };
    let mut kiln: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for r in results.iter().filter(|r| r.outcome == Outcome::Pass) {
        if let Some(ty) = type_of(&r.name) {
            kiln.entry(r.op.clone()).or_default().insert(ty);
        }
    }
    let ops: BTreeSet<&String> = tflm.keys().chain(kiln.keys()).collect();
    let list = |m: &BTreeMap<String, BTreeSet<String>>, op: &String| {
        m.get(op)
            .map(|s| s.iter().cloned().collect::<Vec<_>>().join(", "))
            .unwrap_or_else(|| "—".to_string())
    };
    ops.into_iter()
        .map(|op| (op.clone(), vec![list(&tflm, op), list(&kiln, op)]))
        .collect()
}

/// The headers of [`parity`]'s columns.
pub const PARITY_HEADERS: [&str; 2] = ["types TFLM runs", "types passing here"];

/// Loads and imports the case in folder `dir`, with its inputs and expected outputs; the
/// outcome when it gets no further.
pub fn import_case(dir: &Path, options: &ImportOptions) -> Result<ImportedCase, Outcome> {
    let path = dir.join(MODEL_FILE);
    let bytes = std::fs::read(&path).map_err(|e| fail("load", e.to_string()))?;
    let imported = match import_bytes(&bytes, options) {
        Ok(i) => i,
        Err(ModelError::Tflite(e)) => return Err(classify(&e)),
        Err(e) => return Err(fail("load", chain(&e))),
    };
    let read = |prefix: &str, what: &str| {
        tensorio::read_dir_tensors(dir, prefix).map_err(|e| fail(what, chain(&e)))
    };
    let inputs = if imported.input_names.is_empty() {
        Vec::new()
    } else {
        read("input", "reading inputs")?
    };
    let expected = read("output", "reading outputs")?;
    if inputs.len() != imported.input_names.len() {
        let detail = format!(
            "{} inputs, {} input files",
            imported.input_names.len(),
            inputs.len()
        );
        return Err(fail("input count", detail));
    }
    let inputs = imported.input_names.iter().cloned().zip(inputs).collect();
    Ok(ImportedCase {
        imported,
        inputs,
        expected,
        invocations: invocations(dir)?,
    })
}

/// How many times the reference ran the model on the inputs: the number in the case's
/// `invocations` file (a stateful op's case), else 1.
fn invocations(dir: &Path) -> Result<usize, Outcome> {
    let path = dir.join(INVOCATIONS);
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(1);
    };
    match text.trim().parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(fail(
            "invocations",
            format!(
                "{}: {:?} is not a count of 1 or more",
                path.display(),
                text.trim()
            ),
        )),
    }
}

/// Sorts an import error into a skip (an op, a type or an option the importer says it lacks)
/// or a failure.
fn classify(e: &TfliteError) -> Outcome {
    match e {
        TfliteError::UnsupportedOps { ops } => {
            let mut kinds: Vec<&str> = ops.iter().map(|(op, _, _)| op.as_str()).collect();
            kinds.sort();
            kinds.dedup();
            skip(format!("unsupported op {}", kinds.join(", ")))
        }
        TfliteError::TensorType { ty, .. } => skip(format!("unsupported tensor type {ty}")),
        TfliteError::Op {
            op,
            source: OpError::Unsupported(what),
            ..
        } => skip(format!("{op}: not supported: {what}")),
        TfliteError::Op { op, .. } => fail(format!("import: {op}"), chain(e)),
        _ => fail("import", chain(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::manifest_op;

    #[test]
    fn the_manifest_names_each_cases_op() {
        let text = "case\top\ttype\treference\tabout\n\
                    prelu_int8\tPRELU\tint8\ttflm\talpha per channel\n\
                    gather_float32_axis1\tGATHER\tfloat32\ttflm\taxis 1\n";
        assert_eq!(manifest_op(text, "gather_float32_axis1").unwrap(), "GATHER");
        assert_eq!(manifest_op(text, "prelu_int8").unwrap(), "PRELU");
        assert_eq!(manifest_op(text, "case"), None);
        assert_eq!(manifest_op(text, "absent"), None);
    }
}
