//! Inputs bound at compile time. `--const NAME=VALUE` makes an input a constant, so that
//! folding, `If` and shape inference see its value; `--state OUT=IN` makes output OUT the value
//! input IN holds on the next run, a state the device keeps between runs (zeros before the
//! first). Either way the compiled model no longer has that input, and a state's output is no
//! longer an output.

use crate::dtype::Scalar;
use crate::graph::{Graph, Imported};
use crate::tensor::Tensor;
use std::path::PathBuf;
use thiserror::Error;

/// Where a `--const` input's value comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum ConstSource {
    /// Numbers as written, comma-separated (`16000`, `1,0,0`), read in the input's type.
    Literal(String),
    /// A `.npy` or `.pb` tensor file, read by [`Bindings::read_files`] before an import.
    File(PathBuf),
    /// A tensor (a file's, once read).
    Tensor(Tensor),
}

/// `--const NAME=VALUE`: input NAME fixed at compile time.
#[derive(Clone, Debug, PartialEq)]
pub struct ConstInput {
    pub name: String,
    pub value: ConstSource,
}

/// `--state OUT=IN`: output OUT becomes the value input IN has on the next run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StateLink {
    pub output: String,
    pub input: String,
}

/// The inputs a model is compiled with bound: constants and states.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Bindings {
    pub consts: Vec<ConstInput>,
    pub states: Vec<StateLink>,
}

/// How an importer creates a bound input.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Binding<'a> {
    Const(&'a ConstSource),
    State,
}

/// Why an input could not be bound.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum BindError {
    #[error("--{flag} {given:?}: {reason}")]
    BadFlag {
        flag: &'static str,
        given: String,
        reason: String,
    },
    #[error("--{flag} names input {name:?}, which the model does not have (its inputs: {known})")]
    UnknownInput {
        flag: &'static str,
        name: String,
        known: String,
    },
    #[error("--state {output}={input}: the model has no output {output:?} (its outputs: {known})")]
    UnknownOutput {
        output: String,
        input: String,
        known: String,
    },
    #[error("input {name:?} is bound twice (by --{first} and --{second})")]
    Twice {
        name: String,
        first: &'static str,
        second: &'static str,
    },
    #[error("--state: output {output:?} is the next value of two inputs")]
    OutputTwice { output: String },
    #[error("--const {name}: {reason}")]
    ConstValue { name: String, reason: String },
    /// The output and the input differ in type or shape (`detail` gives both).
    #[error("--state {output}={input}: {detail}")]
    StateMismatch {
        output: String,
        input: String,
        detail: String,
    },
    #[error("--state {output}={input}: output {output:?} has a length known only at run time")]
    StateBounded { output: String, input: String },
}

/// Splits `NAME=VALUE` at its last `=`.
fn split_flag(flag: &'static str, given: &str) -> Result<(String, String), BindError> {
    let bad = |reason: &str| BindError::BadFlag {
        flag,
        given: given.to_string(),
        reason: reason.to_string(),
    };
    let (name, value) = given.rsplit_once('=').ok_or_else(|| bad("no '='"))?;
    let (name, value) = (name.trim(), value.trim());
    if name.is_empty() || value.is_empty() {
        return Err(bad("expected NAME=VALUE"));
    }
    Ok((name.to_string(), value.to_string()))
}

impl ConstInput {
    /// Parses `NAME=VALUE`; a VALUE ending in `.npy` or `.pb` is a tensor file.
    pub fn parse(given: &str) -> Result<ConstInput, BindError> {
        let (name, value) = split_flag("const", given)?;
        let value = ConstSource::from_text(&value);
        Ok(ConstInput { name, value })
    }
}

impl ConstSource {
    /// A value as written: a path ending in `.npy` or `.pb` is a tensor file, anything else
    /// numbers.
    pub fn from_text(value: &str) -> ConstSource {
        if value.ends_with(".npy") || value.ends_with(".pb") {
            ConstSource::File(PathBuf::from(value))
        } else {
            ConstSource::Literal(value.to_string())
        }
    }
}

impl StateLink {
    /// Parses `OUT=IN`.
    pub fn parse(given: &str) -> Result<StateLink, BindError> {
        let (output, input) = split_flag("state", given)?;
        Ok(StateLink { output, input })
    }
}

impl Bindings {
    /// The bindings of `--const NAME=VALUE` flags `consts` and `--state OUT=IN` flags `states`.
    pub fn parse(
        consts: &[impl AsRef<str>],
        states: &[impl AsRef<str>],
    ) -> Result<Bindings, BindError> {
        Ok(Bindings {
            consts: (consts.iter().map(|c| ConstInput::parse(c.as_ref())))
                .collect::<Result<_, _>>()?,
            states: (states.iter().map(|s| StateLink::parse(s.as_ref())))
                .collect::<Result<_, _>>()?,
        })
    }

    /// The bindings with each constant's file read by `read` (`.npy` or `.pb`).
    pub fn read_files(
        &self,
        read: impl Fn(&std::path::Path) -> Result<Tensor, String>,
    ) -> Result<Bindings, BindError> {
        let mut out = self.clone();
        for c in &mut out.consts {
            if let ConstSource::File(path) = &c.value {
                let t = read(path).map_err(|reason| BindError::ConstValue {
                    name: c.name.clone(),
                    reason,
                })?;
                c.value = ConstSource::Tensor(t);
            }
        }
        Ok(out)
    }

    /// No input bound.
    pub fn is_empty(&self) -> bool {
        self.consts.is_empty() && self.states.is_empty()
    }

    /// Checks that every bound input is one of `inputs`, bound once, and that no output feeds
    /// two states.
    pub fn check_inputs(&self, inputs: &[&str]) -> Result<(), BindError> {
        let named = (self.consts.iter().map(|c| ("const", &c.name)))
            .chain(self.states.iter().map(|s| ("state", &s.input)));
        let mut seen: Vec<(&'static str, &String)> = Vec::new();
        for (flag, name) in named {
            if !inputs.contains(&name.as_str()) {
                return Err(BindError::UnknownInput {
                    flag,
                    name: name.clone(),
                    known: inputs.join(", "),
                });
            }
            if let Some((first, _)) = seen.iter().find(|(_, n)| *n == name) {
                return Err(BindError::Twice {
                    name: name.clone(),
                    first,
                    second: flag,
                });
            }
            seen.push((flag, name));
        }
        for (k, s) in self.states.iter().enumerate() {
            if self.states[..k].iter().any(|t| t.output == s.output) {
                return Err(BindError::OutputTwice {
                    output: s.output.clone(),
                });
            }
        }
        Ok(())
    }

    /// How input `name` is bound, if it is.
    pub fn of_input(&self, name: &str) -> Option<Binding<'_>> {
        if let Some(c) = self.consts.iter().find(|c| c.name == name) {
            return Some(Binding::Const(&c.value));
        }
        (self.states.iter().any(|s| s.input == name)).then_some(Binding::State)
    }

    /// Makes each `--state` output the next value of its input's state, and drops it from the
    /// outputs. `imported` came from an importer that created the bound inputs as states.
    pub fn link_states(&self, mut imported: Imported) -> Result<Imported, BindError> {
        let file_outputs = imported.output_names.clone();
        for link in &self.states {
            let k = (imported.output_names.iter().position(|n| *n == link.output)).ok_or_else(
                || BindError::UnknownOutput {
                    output: link.output.clone(),
                    input: link.input.clone(),
                    known: imported.output_names.join(", "),
                },
            )?;
            let bounded = |b: &crate::graph::Bounded| b.output == k || b.length == k;
            if imported.bounded.iter().any(bounded) {
                return Err(BindError::StateBounded {
                    output: link.output.clone(),
                    input: link.input.clone(),
                });
            }
            let n = state_index(&imported.graph, &link.input);
            let (value, info) = (&imported.outputs[k], &imported.graph.states[n]);
            if value.dtype != info.dtype || value.shape() != info.shape.as_slice() {
                return Err(BindError::StateMismatch {
                    output: link.output.clone(),
                    input: link.input.clone(),
                    detail: format!(
                        "output {:?} is {} {:?}, input {:?} is {} {:?}",
                        link.output,
                        value.dtype,
                        value.shape(),
                        link.input,
                        info.dtype,
                        info.shape
                    ),
                });
            }
            let value = value.clone();
            (imported.graph.set_next_state(n, &value)).expect("type and shape checked");
            imported.outputs.remove(k);
            imported.output_names.remove(k);
            for b in &mut imported.bounded {
                b.output -= usize::from(b.output > k);
                b.length -= usize::from(b.length > k);
            }
            let index = (file_outputs.iter().position(|n| *n == link.output)).expect("an output");
            imported.state_outputs.push((index, link.output.clone()));
        }
        Ok(imported)
    }
}

/// The index of the state an importer created for input `name`.
fn state_index(graph: &Graph, name: &str) -> usize {
    (graph.states.iter().position(|s| s.name == name)).expect("a --state input is a state")
}

impl ConstSource {
    /// The value of input `name`, of type `dtype`, with `dims` (`None`: a free dim).
    pub fn tensor(
        &self,
        name: &str,
        dtype: Scalar,
        dims: &[Option<usize>],
    ) -> Result<Tensor, BindError> {
        let bad = |reason: String| BindError::ConstValue {
            name: name.to_string(),
            reason,
        };
        let t = match self {
            ConstSource::File(path) => {
                let why =
                    "it was not read (`Bindings::read_files`, which `model::import_file` calls)";
                return Err(bad(format!("{}: {why}", path.display())));
            }
            ConstSource::Tensor(t) => t.clone(),
            ConstSource::Literal(text) => literal(text, dtype, dims).map_err(bad)?,
        };
        if t.dtype() != dtype {
            return Err(bad(format!(
                "the input is {dtype}, the value {}",
                t.dtype()
            )));
        }
        let fits = t.shape().len() == dims.len()
            && (t.shape().iter().zip(dims)).all(|(&n, d)| d.is_none_or(|d| d == n));
        if !fits {
            return Err(bad(format!(
                "the input's shape is {}, the value's {:?}",
                describe_dims(dims),
                t.shape()
            )));
        }
        Ok(t)
    }
}

/// `[2, ?, 128]`.
fn describe_dims(dims: &[Option<usize>]) -> String {
    let each: Vec<String> = (dims.iter())
        .map(|d| d.map_or("?".to_string(), |d| d.to_string()))
        .collect();
    format!("[{}]", each.join(", "))
}

/// The tensor of the comma-separated numbers `text`: of the input's shape, its free dims 1.
fn literal(text: &str, dtype: Scalar, dims: &[Option<usize>]) -> Result<Tensor, String> {
    let shape: Vec<usize> = dims.iter().map(|d| d.unwrap_or(1)).collect();
    let words: Vec<&str> = text.split(',').map(str::trim).collect();
    let not_a = |w: &str| format!("{w:?} is not a {dtype} value");
    let (floats, ints) = if dtype.is_float() {
        let values = (words.iter()).map(|w| w.parse::<f64>().map_err(|_| not_a(w)));
        (values.collect::<Result<Vec<_>, _>>()?, Vec::new())
    } else {
        let int = |w: &&str| match *w {
            "true" if dtype == Scalar::Bool => Ok(1),
            "false" if dtype == Scalar::Bool => Ok(0),
            w => w.parse::<i64>().map_err(|_| not_a(w)),
        };
        let values: Vec<i64> = words.iter().map(int).collect::<Result<_, _>>()?;
        if let Some(v) = values.iter().find(|&&v| !fits_in(dtype, v)) {
            return Err(format!("{v} does not fit in {dtype}"));
        }
        (Vec::new(), values)
    };
    let numel: usize = shape.iter().product();
    if words.len() != numel {
        return Err(format!(
            "{} value(s) given, the input's shape {} needs {numel} (a .npy gives any shape)",
            words.len(),
            describe_dims(dims)
        ));
    }
    let made = if dtype.is_float() {
        Tensor::from_f64(dtype, shape, &floats)
    } else {
        Tensor::from_i64(dtype, shape, &ints)
    };
    made.map_err(|e| e.to_string())
}

/// Whether `v` is a value of the integer type `dtype`.
fn fits_in(dtype: Scalar, v: i64) -> bool {
    let (lo, hi): (i128, i128) = match dtype {
        Scalar::Bool => (0, 1),
        Scalar::I8 => (i8::MIN.into(), i8::MAX.into()),
        Scalar::U8 => (0, u8::MAX.into()),
        Scalar::I16 => (i16::MIN.into(), i16::MAX.into()),
        Scalar::U16 => (0, u16::MAX.into()),
        Scalar::I32 => (i32::MIN.into(), i32::MAX.into()),
        Scalar::U32 => (0, u32::MAX.into()),
        Scalar::U64 => (0, i64::MAX.into()),
        _ => (i64::MIN.into(), i64::MAX.into()),
    };
    (lo..=hi).contains(&i128::from(v))
}
