//! The compiler's modules depend only on the layers before them: the shared values first, then
//! the stages in the order data flows through them, then what chains them. Read from the
//! sources: every `crate::module` path outside test code must name an earlier layer.

use std::path::{Path, PathBuf};

/// The top-level modules of `kiln-codegen`, each layer after the ones it may use.
const LAYERS: &[&str] = &[
    // Values every stage shares.
    "error",
    "target",
    "dtype",
    "ops",
    "shape",
    "tensor",
    // The stages: import → graph → schedule → kernels → optimize → linearize → render → plan
    // → bundle. The importer builds a graph; `tensorio` reads tensors in ONNX's format, and
    // `model` imports a file of either format, its `--const` files read through `tensorio`.
    "graph",
    // Inputs bound at compile time (`--const`, `--state`), which both importers read.
    "bind",
    "onnx",
    "tflite",
    "tensorio",
    "model",
    "schedule",
    "kernel",
    "optimize",
    "uop",
    "linearize",
    "render",
    "plan",
    "bundle",
    // What chains the stages, and what sits on top of the pipeline.
    "compile",
    "gpu",
    "builder",
    "interpret",
];

/// The `.rs` files under `dir`.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable source folder") {
        let path = entry.expect("a folder entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a source file belongs to (`render` for `src/render/cstyle/body.rs`).
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).expect("under src");
    let first = rel.components().next().expect("a path");
    let name = first.as_os_str().to_string_lossy();
    name.trim_end_matches(".rs").to_string()
}

/// Whether a file holds only tests: `tests.rs`, or anything under a `tests/` folder.
fn is_test_file(src: &Path, file: &Path) -> bool {
    let rel = file.strip_prefix(src).expect("under src");
    rel.components()
        .any(|c| c.as_os_str() == "tests" || c.as_os_str() == "tests.rs")
}

/// `text` without its `#[cfg(test)]` items: a `mod tests;` line, or an inline module up to its
/// closing brace at the start of a line.
fn without_tests(text: &str) -> String {
    let mut out = String::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.trim() != "#[cfg(test)]" {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        let Some(item) = lines.next() else { break };
        if item.trim_end().ends_with('{') {
            for inner in lines.by_ref() {
                if inner.starts_with('}') {
                    break;
                }
            }
        }
    }
    out
}

/// Each `crate::name` in `text`.
fn crate_paths(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("crate::") {
        let after = &rest[at + "crate::".len()..];
        let name: String = after
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let preceded = rest[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        if !preceded && !name.is_empty() {
            found.push(name);
        }
        rest = after;
    }
    found
}

#[test]
fn no_module_uses_a_later_layer() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    files.sort();
    let layer = |m: &str| LAYERS.iter().position(|l| *l == m);
    let mut wrong = Vec::new();
    for file in &files {
        let module = module_of(&src, file);
        if module == "lib" || is_test_file(&src, file) {
            continue;
        }
        let Some(own) = layer(&module) else {
            wrong.push(format!("{}: module {module} has no layer", file.display()));
            continue;
        };
        let text = std::fs::read_to_string(file).expect("a readable source");
        for used in crate_paths(&without_tests(&text)) {
            match layer(&used) {
                Some(l) if l <= own => {}
                Some(_) => wrong.push(format!(
                    "{}: {module} uses the later layer {used}",
                    file.display()
                )),
                None => wrong.push(format!("{}: {used} has no layer", file.display())),
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_check_sees_paths_and_skips_tests() {
    let text =
        "use crate::render::Program;\n#[cfg(test)]\nmod tests {\n    use crate::bundle;\n}\n\
                fn f() { kiln_crate::x(); crate::plan::y() }\n";
    assert_eq!(crate_paths(&without_tests(text)), ["render", "plan"]);
}
