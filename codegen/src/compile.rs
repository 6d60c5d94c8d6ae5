//! The whole pipeline in one place: graph → schedule → kernels → linearize + render → plan →
//! bundle.

use crate::bundle::{self, Bundle, BundleError};
use crate::dtype::DType;
use crate::graph::WeightId;
use crate::graph::{Graph, Lazy};
use crate::kernel::heuristic::hand_coded_optimizations;
use crate::kernel::layout::{relayouts, reorder_bytes};
#[cfg(feature = "host")]
use crate::kernel::search::{apply_all, cached_beam_search};
use crate::kernel::search::{searchable, Cache, SearchError};
use crate::kernel::{Kernel, KernelBuffer};
use crate::linearize::{to_program, LinearizeError, Program};
use crate::onnx::import::Imported;
use crate::plan::{in_place_pairs, plan_arena_with};
use crate::render::Target;
use crate::schedule::{create_schedule, BufKind, Schedule, ScheduleError, ScheduleItem};

/// Errors of compiling a graph.
#[derive(Debug, thiserror::Error)]
pub enum CompileError {
    #[error(transparent)]
    Schedule(#[from] ScheduleError),
    #[error(transparent)]
    Linearize(#[from] LinearizeError),
    #[error(transparent)]
    Bundle(#[from] BundleError),
    #[error(transparent)]
    Search(#[from] SearchError),
}

/// BEAM search settings: beam width and where results are cached.
#[derive(Clone, Debug)]
pub struct Beam {
    pub width: usize,
    pub cache: Cache,
}

/// What a BEAM search did across a model's kernels.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SearchStats {
    pub searched: usize,
    pub cached: usize,
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
    compile_graph_beam(name, graph, outputs, target, optimize, None, progress).map(|(b, _)| b)
}

/// [`compile_graph`], with each kernel's opts found by a BEAM search measured on this host when
/// `beam` is given (and the target is C); searched kernels are cached in `beam.cache`.
pub fn compile_graph_beam(
    name: &str,
    graph: &Graph,
    outputs: &[Lazy],
    target: &Target,
    optimize: bool,
    beam: Option<&Beam>,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<(Bundle, SearchStats), CompileError> {
    let mut schedule = create_schedule(graph, outputs)?;
    let mut programs: Vec<Program> = Vec::with_capacity(schedule.items.len());
    let mut stats = SearchStats::default();
    let mut reordered = Vec::new();
    for item in &schedule.items {
        let mut k = Kernel::new(item.ast.clone(), target.clone()).map_err(ScheduleError::from)?;
        if target.simd_lanes > 0 {
            k.free_layout = free_weights(&schedule, item, &k);
        }
        match beam {
            Some(b) if optimize && !target.has_local && searchable(&k) => {
                let sizes: Vec<usize> = item
                    .bufs
                    .iter()
                    .map(|id| schedule.buffers[id.0 as usize].bytes())
                    .collect();
                let hit = beam_search(&mut k, b, &sizes)?;
                if hit {
                    stats.cached += 1;
                } else {
                    stats.searched += 1;
                }
            }
            _ if optimize => hand_coded_optimizations(&mut k),
            _ => {}
        }
        programs.push(to_program(&k)?);
        for r in relayouts(&k) {
            let KernelBuffer::Mem(m) = &k.bufs[r.buf] else {
                continue;
            };
            reordered.push((item.bufs[m.idx.0 as usize], r));
        }
        progress(programs.len(), schedule.items.len());
    }
    // The kernels read those weights in their new order: store them so.
    for (buf, r) in reordered {
        if let BufKind::Weight(w) = schedule.buffers[buf.0 as usize].kind {
            let data = &mut schedule.weights[w.0 as usize];
            data.bytes = reorder_bytes(&r, &data.bytes, data.dtype.size());
        }
    }
    // Kernels that write over one of their inputs lose `restrict` on those two pointers.
    let in_place = in_place_pairs(&schedule);
    for p in &in_place {
        let item = &schedule.items[p.step];
        for (j, b) in item.bufs.iter().enumerate() {
            if *b == p.out || *b == p.src {
                programs[p.step].drop_restrict(j as u32);
            }
        }
    }
    let plan = plan_arena_with(&schedule, &in_place);
    Ok((bundle::build(name, &schedule, &programs, &plan)?, stats))
}

/// The weights of `item` (positions in `k.bufs`, with their element counts) that no other
/// kernel reads and that are not an output of the model: their layout is the kernel's to
/// choose.
fn free_weights(schedule: &Schedule, item: &ScheduleItem, k: &Kernel) -> Vec<(usize, usize)> {
    let readers = |w: WeightId| {
        schedule
            .items
            .iter()
            .flat_map(|it| &it.bufs)
            .filter(|b| schedule.buffers[b.0 as usize].kind == BufKind::Weight(w))
            .count()
    };
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
                BufKind::Weight(w) if readers(w) == 1 && !schedule.outputs.contains(&id) => {
                    Some((i, info.numel()))
                }
                _ => None,
            }
        })
        .collect()
}

/// Sets `k`'s opts by a BEAM search measured as wall time on this host (the cached result when
/// there is one: then true), falling back to the hand-coded opts when none applies.
#[cfg(feature = "host")]
fn beam_search(k: &mut Kernel, b: &Beam, sizes: &[usize]) -> Result<bool, CompileError> {
    let label = k.label();
    let mut cost = |ps: &[Program]| {
        crate::host::time_kernels(ps, sizes).map_err(|e| SearchError::Measure {
            kernel: label.clone(),
            reason: e.to_string(),
        })
    };
    let context = format!("host-wall {}", crate::host::HOST_OPT);
    let (opts, hit) = cached_beam_search(k, b.width, &b.cache, &context, &mut cost)?;
    match apply_all(k, &opts) {
        Some(found) => *k = found,
        None => hand_coded_optimizations(k),
    }
    Ok(hit)
}

/// Without the host runner there is nothing to measure a search with.
#[cfg(not(feature = "host"))]
fn beam_search(k: &mut Kernel, _: &Beam, _: &[usize]) -> Result<bool, CompileError> {
    Err(CompileError::Search(SearchError::Measure {
        kernel: k.label(),
        reason: "BEAM search measures kernels on the host: build with feature `host`".into(),
    }))
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
