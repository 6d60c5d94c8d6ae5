//! Generates the Rust types of TFLite's `schema.fbs` (vendored beside this file) with planus,
//! and the builtin ops' names by code, into `OUT_DIR`.
//!
//! planus 1.3 does not read the `(deprecated)` attribute: it is dropped (the fields keep their
//! slots, so the layout is unchanged). The generated serde derives are dropped too: Kiln only
//! reads models.

use std::fmt::Write;
use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=schema.fbs");
    println!("cargo:rerun-if-changed=build.rs");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let schema = std::fs::read_to_string("schema.fbs").expect("schema.fbs beside build.rs");
    write(&out.join("generated.rs"), &types(&schema, &out));
    write(&out.join("names.rs"), &names(&schema));
}

fn write(path: &Path, text: &str) {
    if let Err(e) = std::fs::write(path, text) {
        panic!("writing {}: {e}", path.display());
    }
}

/// The planus-generated types of `schema`.
fn types(schema: &str, out: &Path) -> String {
    let input = out.join("schema.fbs");
    write(&input, &schema.replace(" (deprecated)", ""));
    let declarations =
        planus_translation::translate_files(&[input.as_path()]).expect("schema.fbs translates");
    let code = planus_codegen::generate_rust(&declarations, false).expect("planus generates");
    code.replace("::serde::Serialize, ::serde::Deserialize", "")
        .replace(&input.display().to_string(), "schema.fbs")
}

/// `BUILTIN_OPERATOR_NAMES`: each `NAME = code` of `enum BuiltinOperator`.
fn names(schema: &str) -> String {
    let mut text = String::from(
        "/// Each builtin op's code and name, as `enum BuiltinOperator` of `schema.fbs` spells it.\n\
         pub const BUILTIN_OPERATOR_NAMES: &[(i32, &str)] = &[\n",
    );
    let body = schema
        .split_once("enum BuiltinOperator")
        .and_then(|(_, rest)| rest.split_once('{'))
        .and_then(|(_, rest)| rest.split_once('}'))
        .map(|(body, _)| body)
        .expect("schema.fbs has enum BuiltinOperator");
    for line in body.lines() {
        let line = line.split("//").next().unwrap_or("").trim();
        let Some((name, code)) = line.split_once('=') else {
            continue;
        };
        // `205 (deprecated),`: the number is what comes first.
        let code = code.trim();
        let end = (code.find(|c: char| !(c.is_ascii_digit() || c == '-'))).unwrap_or(code.len());
        if let Ok(code) = code[..end].parse::<i32>() {
            writeln!(text, "    ({code}, {:?}),", name.trim()).expect("a String takes text");
        }
    }
    text.push_str("];\n");
    text
}
