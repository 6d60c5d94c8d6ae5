//! Reading TFLite models (`.tflite` flatbuffers) and lowering them to Kiln's lazy tensor graph.
//!
//! `load_bytes` reads the file through the types generated from TFLite's official schema
//! (`kiln-tflite-schema`) into [`TfliteModel`]; `import` lowers its main subgraph operator by
//! operator with the builders of `ops` (and the subgraphs that `IF` and `WHILE` name, through
//! the same lowering). Quantized operators become integer arithmetic that is
//! bit-exact with TensorFlow Lite Micro's reference kernels; float ones, float arithmetic.

mod decode;
mod error;
mod flex;
mod model;
mod ops;
mod sparse;

pub use error::{OpError, TfliteError};
/// The generated types of TFLite's schema (options, op codes), for building models in memory.
pub use kiln_tflite_schema::tflite as schema;
pub use model::{load_bytes, op_name, Quant, TensorId, TfOp, TfTensor, TfliteModel};
pub use ops::softmax_params;

use crate::bind::{Binding, Bindings};
use crate::graph::{FileTensor, Graph, Imported, Lazy};
use std::collections::HashMap;

/// Settings of a TFLite import beyond the file itself.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ImportConfig {
    /// Keep float16 constants behind `DEQUANTIZE` as float16 in flash (half the bytes), widened
    /// to float32 in the kernels that read them (exact), instead of widening them at compile
    /// time.
    pub keep_f16: bool,
    /// Quantized convolutions over `4k + 3` input channels (an RGB image's 3) get one more,
    /// its weights zero, so that their products pack into 32-bit words: for a target with
    /// packed int8 dot products (the import options' `channels_in_words`).
    pub channels_in_words: bool,
}

/// Lowers `model`'s main subgraph. Every operator Kiln lacks is listed in one error.
pub fn import(model: &TfliteModel) -> Result<Imported, TfliteError> {
    import_with(model, &ImportConfig::default())
}

/// [`import`] with the settings of `config`.
pub fn import_with(model: &TfliteModel, config: &ImportConfig) -> Result<Imported, TfliteError> {
    import_bound(model, config, &Bindings::default())
}

/// [`import_with`], the inputs that `bindings` names bound: a constant input becomes a weight,
/// a state input a state whose next value is the output that binds it.
pub fn import_bound(
    model: &TfliteModel,
    config: &ImportConfig,
    bindings: &Bindings,
) -> Result<Imported, TfliteError> {
    check_supported(model)?;
    let mut graph = Graph::new();
    ops::variable::declare(model, &mut graph)?;
    let (inputs, input_names, bound_inputs) = bind_inputs(model, &mut graph, bindings)?;
    let scope = ops::Scope {
        root: model,
        keep_f16: config.keep_f16,
        channels_in_words: config.channels_in_words,
        depth: 0,
        init: false,
    };
    let outputs = lower(&mut graph, scope, model, &inputs)?;
    let output_names = model
        .outputs
        .iter()
        .map(|&id| model.tensor(id).name.clone())
        .collect();
    let imported = Imported {
        graph,
        outputs,
        output_names,
        input_names,
        bounded: Vec::new(),
        bound_inputs,
        state_outputs: Vec::new(),
    };
    Ok(bindings.link_states(imported)?)
}

/// The values of the main subgraph's inputs: graph inputs, or weights and states where
/// `bindings` binds them; the names of the graph's inputs; the bound ones, by index.
type BoundInputs = (Vec<Lazy>, Vec<String>, Vec<FileTensor>);

fn bind_inputs(
    model: &TfliteModel,
    graph: &mut Graph,
    bindings: &Bindings,
) -> Result<BoundInputs, TfliteError> {
    let names: Vec<&str> = (model.inputs.iter())
        .map(|&id| model.tensor(id).name.as_str())
        .collect();
    bindings.check_inputs(&names)?;
    let (mut values, mut graph_inputs, mut bound) = (Vec::new(), Vec::new(), Vec::new());
    for (index, &id) in model.inputs.iter().enumerate() {
        let t = model.tensor(id);
        if t.data.is_some() {
            return Err(TfliteError::Input {
                name: t.name.clone(),
                reason: "has constant contents".into(),
            });
        }
        let value = match bindings.of_input(&t.name) {
            Some(Binding::Const(source)) => {
                let dims: Vec<Option<usize>> = t.shape.iter().map(|&n| Some(n)).collect();
                let value = source.tensor(&t.name, t.dtype, &dims)?;
                graph.weight(&t.name, value)
            }
            Some(Binding::State) => {
                let state = graph.state(&t.name, t.dtype.into(), &t.shape, None);
                state.expect("no initial value to disagree with").0
            }
            None => {
                graph_inputs.push(t.name.clone());
                graph.input(&t.name, t.dtype.into(), &t.shape)
            }
        };
        if bindings.of_input(&t.name).is_some() {
            bound.push((index, t.name.clone()));
        }
        values.push(value);
    }
    Ok((values, graph_inputs, bound))
}

/// Lists every operator of every subgraph that Kiln has no builder for, in one error.
fn check_supported(model: &TfliteModel) -> Result<(), TfliteError> {
    let mut missing: Vec<(String, i32, usize)> = Vec::new();
    for op in model.all_ops() {
        if ops::op_builder(op).is_none() {
            let name = op.name();
            match missing
                .iter_mut()
                .find(|(n, v, _)| *n == name && *v == op.version)
            {
                Some(m) => m.2 += 1,
                None => missing.push((name, op.version, 1)),
            }
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(TfliteError::UnsupportedOps { ops: missing })
    }
}

/// Lowers subgraph `sub` into `graph`, its inputs fed by `inputs` in order: the values of its
/// outputs. Control-flow ops lower the subgraphs they name through it again.
fn lower(
    graph: &mut Graph,
    scope: ops::Scope,
    sub: &TfliteModel,
    inputs: &[Lazy],
) -> Result<Vec<Lazy>, TfliteError> {
    let mut values: HashMap<TensorId, Lazy> = sub
        .inputs
        .iter()
        .copied()
        .zip(inputs.iter().cloned())
        .collect();
    for op in &sub.ops {
        let build = ops::op_builder(op).ok_or_else(|| TfliteError::UnsupportedOps {
            ops: vec![(op.name(), op.version, 1)],
        })?;
        let mut ctx = ops::Ctx {
            graph: &mut *graph,
            model: sub,
            op,
            values: &mut values,
            scope,
        };
        let outs = build(&mut ctx).map_err(|source| TfliteError::Op {
            index: op.index,
            op: op.name(),
            version: op.version,
            source,
        })?;
        for (id, v) in op.outputs.iter().zip(outs) {
            // TFLite's images are NHWC: their buffers need no other layout.
            if v.shape().len() == 4 {
                graph.mark_channels_last(&v);
            }
            values.insert(*id, v);
        }
    }
    let mut outputs = Vec::new();
    for &id in &sub.outputs {
        let t = sub.tensor(id);
        let v = match values.get(&id) {
            Some(v) => v.clone(),
            None => match &t.data {
                Some(data) => graph.weight(&t.name, data.clone()),
                None => {
                    return Err(TfliteError::Input {
                        name: t.name.clone(),
                        reason: "is an output no operator computes".into(),
                    })
                }
            },
        };
        outputs.push(v);
    }
    Ok(outputs)
}
