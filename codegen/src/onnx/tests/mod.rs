//! Tests of the ONNX reader: real models (`models`), hand-built broken ones (`malformed`),
//! attributes (`attrs`) and input shapes (`shapes`).

mod attrs;
mod control;
mod malformed;
mod models;
mod protos;
mod qdq;
mod shapes;

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::OnnxGraph;

/// Kiln's own test models, built by `scripts/make_test_models.py`.
pub(super) fn test_model(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../tests/models/{name}.onnx"))
}

/// The MLPerf Tiny models in `tests/models/mlperf-tiny/`.
pub(super) fn mlperf_model(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("../tests/models/mlperf-tiny/onnx/{name}.onnx"))
}

/// Panics unless every node reads only values defined before it.
pub(super) fn assert_sorted(graph: &OnnxGraph) {
    let mut defined: HashSet<&str> = graph.inputs.iter().map(|v| v.name.as_str()).collect();
    defined.extend(graph.initializers.iter().map(|(n, _)| n.as_str()));
    for node in &graph.nodes {
        for input in node.inputs.iter().filter(|i| !i.is_empty()) {
            assert!(
                defined.contains(input.as_str()),
                "{} reads {input} early",
                node.name
            );
        }
        defined.extend(node.outputs.iter().map(String::as_str));
    }
}
