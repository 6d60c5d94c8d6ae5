//! The whole pipeline in one function: import's graph → schedule → kernels → optimize →
//! plan → linearize and render → bundle, the same for every target. A target is data the stages
//! read; a BEAM search's cost model is given from outside (the runners implement it), so the
//! compiler never runs a kernel itself.

use crate::bundle::{self, Bundle, PackError};
use crate::dtype::Scalar;
use crate::graph::{Graph, Lazy, WeightId};
use crate::kernel::dot::{pair_fours, widen};
use crate::kernel::lanes::reorder_bytes;
use crate::kernel::{Kernel, KernelBuffer, KernelError};
use crate::linearize::{linearize, LinearizeError};
use crate::optimize::{optimize, Optimize, SearchError, SearchStats};
use crate::plan::{
    in_place_pairs, loop_pairs, oriented, overlap_pairs, plan_arena_min, plan_arena_with,
    ArenaPlan, InPlace,
};
use crate::render::{to_program_aliasing, Program, ProgramError};
use crate::schedule::{schedule_for, BufKind, Schedule, ScheduleError, ScheduleItem};
use crate::target::{Memory, Target};
use crate::tensor::Tensor;
use std::collections::HashMap;

mod file;
mod tiles;
pub use file::{compile_file, io_of, Compiled, FileError, FileOptions, ModelOutput};

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
    Bundle(#[from] PackError),
    #[error(transparent)]
    Search(#[from] SearchError),
}

/// Compiles a graph's `outputs` for `target` into a bundle named `name`, each kernel's opts
/// chosen as `how` says. `progress` is called after each kernel with (done, total).
///
/// Each stage reads the values of the stages before it and makes its own: none is changed
/// after it is made.
pub fn compile(
    name: &str,
    graph: &Graph,
    outputs: &[Lazy],
    target: &Target,
    how: Optimize<'_>,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<(Bundle, SearchStats), CompileError> {
    let schedule = schedule_for(graph, outputs, target)?;
    let mut how = how;
    let mut best = planned(schedule.clone(), target, how.again())?;
    if let (Memory::Min, true) = (target.memory, target.writes_in_place) {
        // Tiles, kept where they make the arena smaller: a loop's kernels lose their vectors
        // across what it tiles.
        for tiled in tiles::candidates(&schedule) {
            let other = planned(tiled, target, how.again())?;
            if other.plan.arena_bytes < best.plan.arena_bytes {
                best = other;
            }
        }
    }
    let Planned {
        schedule,
        kernels,
        weights,
        plan,
        in_place,
        stats,
    } = best;
    let shared: Vec<InPlace> = in_place.iter().chain(&plan.in_place).copied().collect();
    let programs = render_all(&kernels, &aliased_buffers(&schedule, &shared), progress)?;
    let bundle = bundle::build(name, &schedule, &weights, &programs, &plan, target.name)?;
    Ok((bundle, stats))
}

/// A schedule with its kernels optimized and its arena planned: everything but rendering.
struct Planned {
    schedule: Schedule,
    kernels: Vec<Kernel>,
    weights: Vec<Tensor>,
    plan: ArenaPlan,
    in_place: Vec<InPlace>,
    stats: SearchStats,
}

/// `schedule`'s kernels optimized as `how` says, its weights laid out, its arena planned.
fn planned(
    schedule: Schedule,
    target: &Target,
    how: Optimize<'_>,
) -> Result<Planned, CompileError> {
    let kernels = kernels_of(&schedule, target)?;
    let sizes = measured_bytes(&schedule, &kernels);
    let (kernels, stats) = optimize(kernels, &sizes, how, &|k| {
        linearize(&k.laid_out().0).is_ok()
    })?;
    let (kernels, weights) = lay_out_weights(&schedule, &kernels);
    let kernels = turned_for(&schedule, kernels, target);
    let in_place = in_place_steps(&schedule, target);
    let plan = plan_for(&schedule, &kernels, &in_place, target);
    Ok(Planned {
        schedule,
        kernels,
        weights,
        plan,
        in_place,
        stats,
    })
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
        if target.simd_lanes > 0 || target.wide_weights || target.wide_activations {
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

/// Every kernel linearized and rendered, each step's buffers in `aliased` without `restrict`.
fn render_all(
    kernels: &[Kernel],
    aliased: &[Vec<u32>],
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Vec<Program>, CompileError> {
    let mut programs = Vec::with_capacity(kernels.len());
    for (k, aliased) in kernels.iter().zip(aliased) {
        programs.push(to_program_aliasing(k, aliased)?);
        progress(programs.len(), kernels.len());
    }
    Ok(programs)
}

/// The bytes of each kernel's buffers as a BEAM candidate may read them: a free weight that
/// a candidate may widen ([`Kernel::widened`]) counts twice its bytes.
fn measured_bytes(schedule: &Schedule, kernels: &[Kernel]) -> Vec<Vec<usize>> {
    let mut sizes = buffer_bytes(schedule);
    for (bytes, k) in sizes.iter_mut().zip(kernels) {
        if !k.target.wide_weights {
            continue;
        }
        for &(b, _) in &k.free_layout {
            if let KernelBuffer::Mem(m) = &k.bufs[b] {
                bytes[m.idx.0 as usize] *= 2;
            }
        }
    }
    sizes
}

/// The step between optimize and linearize: each kernel reads its free weights in the order
/// its lanes want them, or widened for its dot products ([`Kernel::laid_out`]). Returns those
/// kernels and every weight of the schedule as it is to be stored, in that order.
fn lay_out_weights(schedule: &Schedule, kernels: &[Kernel]) -> (Vec<Kernel>, Vec<Tensor>) {
    let mut weights: Vec<Tensor> = schedule.weights.iter().map(|w| w.tensor.clone()).collect();
    let mut laid = Vec::with_capacity(kernels.len());
    for (item, k) in schedule.items.iter().zip(kernels) {
        let (k, relayouts) = k.laid_out();
        let weight_of = |b: usize| {
            let KernelBuffer::Mem(m) = &k.bufs[b] else {
                return None;
            };
            let buf = item.bufs[m.idx.0 as usize];
            match schedule.buffers[buf.0 as usize].kind {
                BufKind::Weight(w) => Some(w.0 as usize),
                _ => None,
            }
        };
        for r in &relayouts {
            if let Some(w) = weight_of(r.buf) {
                // A relayout is a permutation of the weight's elements: as many bytes.
                let data = &mut weights[w];
                let reordered = reorder_bytes(r, data.bytes(), data.dtype().size());
                data.bytes_mut().copy_from_slice(&reordered);
            }
        }
        for w in k.widened.iter().filter_map(|&b| weight_of(b)) {
            let data = &weights[w];
            let shape = data.shape().to_vec();
            weights[w] = Tensor::new(Scalar::I16, shape, widen(data.bytes()))
                .expect("an int16 for each int8");
        }
        for w in k.paired.iter().filter_map(|&b| weight_of(b)) {
            // Pairing permutes each four elements: as many bytes.
            let data = &mut weights[w];
            let paired = pair_fours(data.bytes(), data.dtype().size());
            data.bytes_mut().copy_from_slice(&paired);
        }
        laid.push(k);
    }
    (laid, weights)
}

/// On a target whose kernels may write over an input, the steps that do so.
fn in_place_steps(schedule: &Schedule, target: &Target) -> Vec<InPlace> {
    match target.writes_in_place {
        true => in_place_pairs(schedule),
        false => Vec::new(),
    }
}

/// The kernels as `target.memory` asks: with `--memory min`, each that may write its output
/// over a dying input in fewer bytes backwards turned so ([`oriented`]).
fn turned_for(schedule: &Schedule, kernels: Vec<Kernel>, target: &Target) -> Vec<Kernel> {
    match (target.memory, target.writes_in_place) {
        (Memory::Min, true) => oriented(schedule, &kernels),
        _ => kernels,
    }
}

/// The arena plan of `schedule` run by `kernels`, as `target.memory` asks, each pair of
/// `in_place` in one place.
fn plan_for(
    schedule: &Schedule,
    kernels: &[Kernel],
    in_place: &[InPlace],
    target: &Target,
) -> ArenaPlan {
    match (target.memory, target.writes_in_place) {
        (Memory::Min, true) => {
            let mut overlaps = overlap_pairs(schedule, kernels);
            overlaps.extend(loop_pairs(schedule));
            plan_arena_min(schedule, in_place, &overlaps)
        }
        _ => plan_arena_with(schedule, in_place),
    }
}

/// Per step, the buffers (by position) that share memory with another one of the step's.
fn aliased_buffers(schedule: &Schedule, in_place: &[InPlace]) -> Vec<Vec<u32>> {
    let mut aliased = vec![Vec::new(); schedule.items.len()];
    for p in in_place {
        let bufs = &schedule.items[p.step].bufs;
        let shared = bufs
            .iter()
            .enumerate()
            .filter(|(_, b)| **b == p.out || **b == p.src);
        aliased[p.step].extend(shared.map(|(j, _)| j as u32));
    }
    aliased
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
