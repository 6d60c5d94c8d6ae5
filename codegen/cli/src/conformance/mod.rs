//! Conformance suites, each case run through the whole pipeline (import, schedule, linearize,
//! render C, compile, run) and compared with the expected outputs:
//!
//! - the ONNX backend node tests: each case a folder with `model.onnx` and
//!   `test_data_set_0/{input,output}_N.pb`. They are not part of the repository: they ship with
//!   the `onnx` Python package, which `scripts/setup-python.sh` installs into `.venv`;
//!   [`find_cases_dir`] finds them.
//! - the TFLite suite (`tests/tflite-suite`, [`tflite`]): single-op `.tflite` models with
//!   TensorFlow Lite Micro's outputs.
//!
//! [`case`] runs one case in this process; [`children`] runs many, each in a child process so
//! that a crash or a hang fails that case alone; [`report`] summarizes the results.

pub mod case;
pub mod children;
pub mod command;
pub mod report;
pub mod tflite;

use std::path::{Path, PathBuf};
use std::process::Command;

use prost::Message;

use kiln_codegen::onnx::proto::ModelProto;

/// The environment variable that names the folder of node test cases.
pub const CASES_ENV: &str = "KILN_ONNX_NODE_TESTS";

/// A conformance suite.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Suite {
    /// The ONNX backend node tests, against onnxruntime's expected outputs.
    Onnx,
    /// The TFLite suite, against TensorFlow Lite Micro's outputs.
    Tflite,
}

impl Suite {
    /// The folder of its cases: for ONNX, `$KILN_ONNX_NODE_TESTS` or the `onnx` package's.
    pub fn cases_dir(self, root: &Path) -> Result<PathBuf, String> {
        match self {
            Suite::Onnx => find_cases_dir(root),
            Suite::Tflite => Ok(root.join("tests/tflite-suite")),
        }
    }

    /// Its expected-pass list for `board`: `tests/conformance/[tflite-]<board>.pass`.
    pub fn pass_list(self, root: &Path, board: &str) -> PathBuf {
        root.join("tests/conformance")
            .join(format!("{}{board}.pass", self.prefix()))
    }

    /// The prefix of its pass lists and `docs/conformance.md` sections: `tflite-`, nothing for ONNX.
    pub fn prefix(self) -> &'static str {
        match self {
            Suite::Onnx => "",
            Suite::Tflite => "tflite-",
        }
    }
}

/// What became of one case.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Pass,
    /// The importer reports an op, a type or a mode it does not support; `reason` groups cases.
    Skip {
        reason: String,
    },
    /// A wrong answer, an error, a crash or a hang; `reason` groups cases, `detail` explains.
    Fail {
        reason: String,
        detail: String,
    },
}

/// One case's name, its op type and outcome.
#[derive(Clone, Debug)]
pub struct CaseResult {
    pub name: String,
    pub op: String,
    pub outcome: Outcome,
}

/// The folder of node test cases: `$KILN_ONNX_NODE_TESTS`, else the one inside the `onnx`
/// package of `.venv` at the repository root (found by its Python).
pub fn find_cases_dir(repo_root: &Path) -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os(CASES_ENV) {
        return Ok(PathBuf::from(dir));
    }
    let python = repo_root.join(".venv/bin/python");
    let out = Command::new(&python)
        .args([
            "-c",
            "import onnx, os; print(os.path.dirname(onnx.__file__))",
        ])
        .output()
        .map_err(|e| {
            format!(
                "cannot run {} ({e}); run `bash scripts/setup-python.sh` or set {CASES_ENV}",
                python.display()
            )
        })?;
    if !out.status.success() {
        return Err(format!(
            "the Python of .venv has no `onnx`; run `bash scripts/setup-python.sh` or set {CASES_ENV}"
        ));
    }
    let package = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let dir = Path::new(&package).join("backend/test/data/node");
    if dir.is_dir() {
        Ok(dir)
    } else {
        Err(format!("{} does not exist", dir.display()))
    }
}

/// The repository root (this crate is `codegen/cli` in it).
pub fn repo_root() -> PathBuf {
    kiln_runners::board::root()
}

/// The case folders under `dir` (those with a `model.onnx` or a `model.tflite`), sorted by name.
pub fn list_cases(dir: &Path) -> std::io::Result<Vec<String>> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        if path.join("model.onnx").is_file() || tflite::is_case(&path) {
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    names.sort();
    Ok(names)
}

/// The op types of a model's nodes, in file order, or none when it cannot be decoded.
fn node_ops(model: &Path) -> Vec<String> {
    let Ok(bytes) = std::fs::read(model) else {
        return Vec::new();
    };
    let Ok(m) = ModelProto::decode(bytes.as_slice()) else {
        return Vec::new();
    };
    m.graph
        .map(|g| g.node.into_iter().filter_map(|n| n.op_type).collect())
        .unwrap_or_default()
}

/// Lower case without underscores: `test_reduce_sum` and `ReduceSum` meet as `reducesum`.
fn squash(s: &str) -> String {
    s.chars()
        .filter(|c| *c != '_')
        .flat_map(char::to_lowercase)
        .collect()
}

/// The op type a case tests, read from its model: the single node's op; for a model of many
/// nodes, the node op whose name the case name starts with, or else that of the case it expands
/// (`test_x_expanded` → `test_x`); the first node's op when nothing else decides. A TFLite
/// case's op is the one its suite's manifest names.
pub fn case_op(cases: &Path, name: &str) -> String {
    if tflite::is_case(&cases.join(name)) {
        return tflite::case_op(cases, name);
    }
    let ops = node_ops(&cases.join(name).join("model.onnx"));
    if let [only] = ops.as_slice() {
        return only.clone();
    }
    let key = squash(name.strip_prefix("test_").unwrap_or(name));
    let best = ops
        .iter()
        .filter(|op| key.starts_with(&squash(op)))
        .max_by_key(|op| op.len());
    if let Some(op) = best {
        return op.clone();
    }
    if let Some(i) = name.find("_expanded") {
        let base = &name[..i];
        if let [only] = node_ops(&cases.join(base).join("model.onnx")).as_slice() {
            return only.clone();
        }
    }
    ops.first().cloned().unwrap_or_else(|| "?".to_string())
}
