//! The whole pipeline in one function: import's graph → schedule → kernels → optimize →
//! linearize and render → plan → bundle, the same for every target. A target is data the stages
//! read; a BEAM search's cost model is given from outside (the runners implement it), so the
//! compiler never runs a kernel itself.

use crate::bundle::{self, Bundle, BundleError};
use crate::dtype::DType;
use crate::graph::{Graph, Lazy, WeightId};
use crate::kernel::layout::reorder_bytes;
use crate::kernel::{Kernel, KernelBuffer, KernelError};
use crate::linearize::{linearize, LinearizeError};
use crate::onnx::import::Imported;
use crate::optimize::{optimize, Optimize, SearchError, SearchStats};
use crate::plan::{in_place_pairs, plan_arena_with, InPlace};
use crate::render::{to_program, Program, ProgramError};
use crate::schedule::{create_schedule, BufKind, Schedule, ScheduleError, ScheduleItem};
use crate::target::Target;
use std::collections::HashMap;

/// Errors of compiling a graph.
#[derive(Debug, thiserror::Error)]
pub enum CompileError {
    #[error(transparent)]
    Schedule(#[from] ScheduleError),
    #[error(transparent)]
    Kernel(#[from] KernelError),
    #[error(transparent)]
    Linearize(#[from] LinearizeError),
    /// A kernel did not linearize or render.
    #[error(transparent)]
    Program(#[from] ProgramError),
    #[error(transparent)]
    Bundle(#[from] BundleError),
    #[error(transparent)]
    Search(#[from] SearchError),
}

/// Compiles a graph's `outputs` for `target` into a bundle named `name`, each kernel's opts
/// chosen as `how` says. `progress` is called after each kernel with (done, total).
pub fn compile(
    name: &str,
    graph: &Graph,
    outputs: &[Lazy],
    target: &Target,
    how: Optimize<'_>,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<(Bundle, SearchStats), CompileError> {
    let mut schedule = create_schedule(graph, outputs)?;
    crate::schedule::layout::choose_layouts(&mut schedule, target);
    let mut kernels = kernels_of(&schedule, target)?;
    let sizes = buffer_bytes(&schedule);
    let stats = optimize(&mut kernels, &sizes, how, &|k| linearize(k).is_ok())?;
    let mut programs = render_all(&kernels, progress)?;
    store_relayouts(&mut schedule, &kernels, &programs);
    let in_place = run_in_place(&schedule, target, &mut programs);
    let plan = plan_arena_with(&schedule, &in_place);
    let bundle = bundle::build(name, &schedule, &programs, &plan, target.name)?;
    Ok((bundle, stats))
}

/// [`compile`] with the target's heuristics, or with no opts at all unless `optimize`.
pub fn compile_graph(
    name: &str,
    graph: &Graph,
    outputs: &[Lazy],
    target: &Target,
    optimize: bool,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Bundle, CompileError> {
    let how = if optimize {
        Optimize::Heuristics
    } else {
        Optimize::Off
    };
    compile(name, graph, outputs, target, how, progress).map(|(b, _)| b)
}

/// One kernel per schedule item; on a target with float vectors, the weights only that kernel
/// reads are its to lay out.
fn kernels_of(schedule: &Schedule, target: &Target) -> Result<Vec<Kernel>, CompileError> {
    // How many times the kernels read each weight.
    let mut readers: HashMap<WeightId, usize> = HashMap::new();
    for &b in schedule.items.iter().flat_map(|it| &it.bufs) {
        // A window over a weight reads it too.
        if let BufKind::Weight(w) = schedule.buffers[schedule.storage(b).0 as usize].kind {
            *readers.entry(w).or_default() += 1;
        }
    }
    let mut kernels = Vec::with_capacity(schedule.items.len());
    for item in &schedule.items {
        let mut k = Kernel::new(item.ast.clone(), target.clone())?;
        if target.simd_lanes > 0 {
            k.free_layout = free_weights(schedule, &readers, item, &k);
        }
        kernels.push(k);
    }
    Ok(kernels)
}

/// The bytes of each kernel's buffers, in the kernel's buffer order.
fn buffer_bytes(schedule: &Schedule) -> Vec<Vec<usize>> {
    schedule
        .items
        .iter()
        .map(|item| {
            item.bufs
                .iter()
                .map(|id| schedule.buffers[id.0 as usize].bytes())
                .collect()
        })
        .collect()
}

/// Every kernel linearized and rendered.
fn render_all(
    kernels: &[Kernel],
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Vec<Program>, CompileError> {
    let mut programs = Vec::with_capacity(kernels.len());
    for k in kernels {
        programs.push(to_program(k)?);
        progress(programs.len(), kernels.len());
    }
    Ok(programs)
}

/// The weights the kernels read in a new order (lanes innermost) are stored in that order.
fn store_relayouts(schedule: &mut Schedule, kernels: &[Kernel], programs: &[Program]) {
    let mut reordered = Vec::new();
    for (i, (k, p)) in kernels.iter().zip(programs).enumerate() {
        for r in &p.relayouts {
            if let KernelBuffer::Mem(m) = &k.bufs[r.buf] {
                reordered.push((schedule.items[i].bufs[m.idx.0 as usize], r.clone()));
            }
        }
    }
    for (buf, r) in reordered {
        if let BufKind::Weight(w) = schedule.buffers[buf.0 as usize].kind {
            // A relayout is a permutation of the weight's elements: as many bytes.
            let data = &mut schedule.weights[w.0 as usize].tensor;
            let reordered = reorder_bytes(&r, data.bytes(), data.dtype().size());
            data.bytes_mut().copy_from_slice(&reordered);
        }
    }
}

/// On a target whose kernels may write over an input, the kernels that can do so; they lose
/// `restrict` on those two pointers.
fn run_in_place(schedule: &Schedule, target: &Target, programs: &mut [Program]) -> Vec<InPlace> {
    if !target.writes_in_place {
        return Vec::new();
    }
    let in_place = in_place_pairs(schedule);
    for p in &in_place {
        let item = &schedule.items[p.step];
        for (j, b) in item.bufs.iter().enumerate() {
            if *b == p.out || *b == p.src {
                programs[p.step].drop_restrict(j as u32);
            }
        }
    }
    in_place
}

/// The weights of `item` (positions in `k.bufs`, with their element counts) that no other
/// kernel reads and that are not an output of the model: their layout is the kernel's to
/// choose.
fn free_weights(
    schedule: &Schedule,
    readers: &HashMap<WeightId, usize>,
    item: &ScheduleItem,
    k: &Kernel,
) -> Vec<(usize, usize)> {
    k.bufs
        .iter()
        .enumerate()
        .filter_map(|(i, b)| {
            let KernelBuffer::Mem(m) = b else {
                return None;
            };
            let id = *item.bufs.get(m.idx.0 as usize)?;
            let info = &schedule.buffers[id.0 as usize];
            match info.kind {
                BufKind::Weight(w) if readers[&w] == 1 && !schedule.outputs.contains(&id) => {
                    Some((i, info.numel()))
                }
                _ => None,
            }
        })
        .collect()
}

/// A compiled model with the names, types and shapes of its inputs and outputs.
pub struct Compiled {
    pub bundle: Bundle,
    pub inputs: Vec<(String, DType, Vec<usize>)>,
    /// The bundle's outputs: the model's, then the lengths of those in `bounded`.
    pub outputs: Vec<(String, DType, Vec<usize>)>,
    pub bounded: Vec<crate::graph::Bounded>,
    /// The model file's inputs bound at compile time, and its outputs that only feed a state:
    /// (index among the file's, name).
    pub bound_inputs: Vec<crate::graph::FileTensor>,
    pub state_outputs: Vec<crate::graph::FileTensor>,
}

/// A model output of a run: name, type, shape and bytes.
pub type ModelOutput = (String, DType, Vec<usize>, Vec<u8>);

impl Compiled {
    /// The model's outputs from the `raw` outputs of a run: those of data-dependent length cut
    /// to it, their length outputs left out.
    pub fn model_outputs(&self, raw: &[Vec<u8>]) -> Result<Vec<ModelOutput>, String> {
        let shapes: Vec<(DType, Vec<usize>)> = self
            .outputs
            .iter()
            .map(|(_, d, s)| (*d, s.clone()))
            .collect();
        let cut = crate::graph::cut_bounded(&self.bounded, &shapes, raw)?;
        let kept = (0..self.outputs.len()).filter(|k| !self.bounded.iter().any(|b| b.length == *k));
        Ok(kept
            .zip(cut)
            .map(|(k, (shape, bytes))| {
                let (name, dtype, _) = &self.outputs[k];
                (name.clone(), *dtype, shape, bytes)
            })
            .collect())
    }
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
        bounded: imported.bounded.clone(),
        bound_inputs: imported.bound_inputs.clone(),
        state_outputs: imported.state_outputs.clone(),
    }
}
