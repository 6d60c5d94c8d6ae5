//! The whole pipeline in one place: graph → schedule → kernels → linearize + render → plan →
//! bundle.

use crate::bundle::{self, Bundle, BundleError};
use crate::dtype::DType;
use crate::graph::{Graph, Lazy};
use crate::kernel::heuristic::hand_coded_optimizations;
use crate::kernel::Kernel;
use crate::linearize::{to_program, LinearizeError, Program};
use crate::onnx::import::Imported;
use crate::plan::plan_arena;
use crate::render::Target;
use crate::schedule::{create_schedule, ScheduleError};

/// Errors of compiling a graph.
#[derive(Debug, thiserror::Error)]
pub enum CompileError {
    #[error(transparent)]
    Schedule(#[from] ScheduleError),
    #[error(transparent)]
    Linearize(#[from] LinearizeError),
    #[error(transparent)]
    Bundle(#[from] BundleError),
}

/// Compiles a graph's `outputs` for `target` into a bundle named `name`, with the hand-coded
/// optimizations when `optimize`. `progress` is called after each kernel with (done, total).
pub fn compile_graph(
    name: &str,
    graph: &Graph,
    outputs: &[Lazy],
    target: &Target,
    optimize: bool,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Bundle, CompileError> {
    let schedule = create_schedule(graph, outputs)?;
    let mut programs: Vec<Program> = Vec::with_capacity(schedule.items.len());
    for item in &schedule.items {
        let mut k = Kernel::new(item.ast.clone(), target.clone()).map_err(ScheduleError::from)?;
        if optimize {
            hand_coded_optimizations(&mut k);
        }
        programs.push(to_program(&k)?);
        progress(programs.len(), schedule.items.len());
    }
    let plan = plan_arena(&schedule);
    Ok(bundle::build(name, &schedule, &programs, &plan)?)
}

/// A compiled model with the names, types and shapes of its inputs and outputs.
pub struct Compiled {
    pub bundle: Bundle,
    pub inputs: Vec<(String, DType, Vec<usize>)>,
    pub outputs: Vec<(String, DType, Vec<usize>)>,
}

/// The bundle of an imported model, with the model's inputs and outputs.
pub fn io_of(imported: &Imported, bundle: Bundle) -> Compiled {
    let inputs = imported
        .graph
        .inputs
        .iter()
        .map(|i| (i.name.clone(), i.dtype, i.shape.clone()))
        .collect();
    let outputs = imported
        .output_names
        .iter()
        .zip(&imported.outputs)
        .map(|(n, o)| (n.clone(), o.dtype, o.shape().to_vec()))
        .collect();
    Compiled {
        bundle,
        inputs,
        outputs,
    }
}
