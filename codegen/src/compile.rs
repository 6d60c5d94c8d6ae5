//! The whole pipeline in one place: graph → schedule → kernels → linearize + render → plan →
//! bundle.

use crate::board::BoardInfo;
use crate::bundle::{self, Bundle, BundleError};
use crate::dtype::DType;
use crate::graph::WeightId;
use crate::graph::{Graph, Lazy};
use crate::kernel::heuristic::hand_coded_optimizations;
use crate::kernel::layout::reorder_bytes;
use crate::kernel::search::{apply_all, cached_beam_search_many, Candidates};
use crate::kernel::search::{searchable, Cache, SearchError};
use crate::kernel::Opt;
use crate::kernel::{Kernel, KernelBuffer};
use crate::linearize::{to_program, LinearizeError, Program};
use crate::onnx::import::Imported;
use crate::plan::{in_place_pairs, plan_arena_with};
use crate::render::Target;
use crate::schedule::{create_schedule, BufKind, Schedule, ScheduleError, ScheduleItem};
use std::collections::HashMap;

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

/// BEAM search settings: beam width, where results are cached and what a candidate costs.
#[derive(Clone, Debug)]
pub struct Beam {
    pub width: usize,
    pub cache: Cache,
    pub cost: BeamCost,
}

/// What the BEAM search measures a candidate by.
#[derive(Clone, Debug, Default)]
pub enum BeamCost {
    /// Wall time on this host (its C compiler, [`crate::host::HOST_OPT`]).
    #[default]
    Host,
    /// Instructions executed on an emulated board under QEMU (its C compiler and CPU).
    Board(BoardInfo),
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

/// [`compile_graph`], with each kernel's opts found by a BEAM search when `beam` is given (and
/// the target is C), measured as `beam.cost` says; the kernels are searched together and
/// cached in `beam.cache`.
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
    // How many times the kernels read each weight.
    let mut readers: HashMap<WeightId, usize> = HashMap::new();
    for b in schedule.items.iter().flat_map(|it| &it.bufs) {
        if let BufKind::Weight(w) = schedule.buffers[b.0 as usize].kind {
            *readers.entry(w).or_default() += 1;
        }
    }
    let mut kernels: Vec<Kernel> = Vec::with_capacity(schedule.items.len());
    for item in &schedule.items {
        let mut k = Kernel::new(item.ast.clone(), target.clone()).map_err(ScheduleError::from)?;
        if target.simd_lanes > 0 {
            k.free_layout = free_weights(&schedule, &readers, item, &k);
        }
        kernels.push(k);
    }
    let mut stats = SearchStats::default();
    let searched: Vec<usize> = match beam {
        Some(_) if optimize && !target.has_local => (0..kernels.len())
            .filter(|&i| searchable(&kernels[i]))
            .collect(),
        _ => Vec::new(),
    };
    if let (Some(b), false) = (beam, searched.is_empty()) {
        let fresh: Vec<Kernel> = searched.iter().map(|&i| kernels[i].clone()).collect();
        let sizes: Vec<Vec<usize>> = searched
            .iter()
            .map(|&i| {
                let bufs = &schedule.items[i].bufs;
                bufs.iter()
                    .map(|id| schedule.buffers[id.0 as usize].bytes())
                    .collect()
            })
            .collect();
        let found = search_kernels(b, &fresh, &sizes)?;
        for (&i, (opts, hit)) in searched.iter().zip(found) {
            match apply_all(&kernels[i], &opts) {
                Some(k) => kernels[i] = k,
                None => hand_coded_optimizations(&mut kernels[i]),
            }
            if hit {
                stats.cached += 1;
            } else {
                stats.searched += 1;
            }
        }
    }
    let mut programs: Vec<Program> = Vec::with_capacity(schedule.items.len());
    let mut reordered = Vec::new();
    for (i, k) in kernels.iter_mut().enumerate() {
        if optimize && !searched.contains(&i) {
            hand_coded_optimizations(k);
        }
        let p = to_program(k)?;
        for r in &p.relayouts {
            if let KernelBuffer::Mem(m) = &k.bufs[r.buf] {
                reordered.push((schedule.items[i].bufs[m.idx.0 as usize], r.clone()));
            }
        }
        programs.push(p);
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
    let mut bundle = bundle::build(name, &schedule, &programs, &plan)?;
    bundle.replay = programs
        .iter()
        .map(|p| p.replay_record(target.name))
        .collect();
    Ok((bundle, stats))
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

/// The opts of each of `fresh` (with its buffers' bytes in `sizes`) by a BEAM search with
/// `b`'s cost (the cached result when there is one: then true).
fn search_kernels(
    b: &Beam,
    fresh: &[Kernel],
    sizes: &[Vec<usize>],
) -> Result<Vec<(Vec<Opt>, bool)>, CompileError> {
    let labels: Vec<String> = fresh.iter().map(|k| k.label()).collect();
    let found = match &b.cost {
        BeamCost::Host => {
            let context = host_context()?;
            let mut cost = |groups: &[Candidates]| {
                groups
                    .iter()
                    .map(|g| time_on_host(&g.programs, &sizes[g.kernel], &labels[g.kernel]))
                    .collect()
            };
            cached_beam_search_many(fresh, b.width, &b.cache, &context, &mut cost)?
        }
        BeamCost::Board(board) => {
            let measure_error = |e| SearchError::Board {
                board: board.name.clone(),
                source: Box::new(e),
            };
            let context = crate::board::measure::cost_name(board).map_err(measure_error)?;
            let mut cost = |groups: &[Candidates]| {
                let kernels: Vec<crate::board::measure::KernelCandidates> = groups
                    .iter()
                    .map(|g| crate::board::measure::KernelCandidates {
                        kernel: &labels[g.kernel],
                        programs: &g.programs,
                        buffer_bytes: &sizes[g.kernel],
                    })
                    .collect();
                let counts =
                    crate::board::measure::count_candidates(board, &kernels, &mut |_, _| {})
                        .map_err(measure_error)?;
                Ok(counts
                    .into_iter()
                    .map(|c| c.into_iter().map(|n| n.map(|n| n as f64)).collect())
                    .collect())
            };
            cached_beam_search_many(fresh, b.width, &b.cache, &context, &mut cost)?
        }
    };
    Ok(found)
}

/// The host cost's name, for the cache key.
#[cfg(feature = "host")]
fn host_context() -> Result<String, CompileError> {
    Ok(format!("host-wall {}", crate::host::HOST_OPT))
}

/// Wall time of each program on this host.
#[cfg(feature = "host")]
fn time_on_host(
    programs: &[Program],
    sizes: &[usize],
    label: &str,
) -> Result<Vec<Option<f64>>, SearchError> {
    crate::host::time_kernels(programs, sizes).map_err(|source| SearchError::Host {
        kernel: label.to_string(),
        source,
    })
}

/// Without the host runner there is nothing to measure a host search with.
#[cfg(not(feature = "host"))]
fn host_context() -> Result<String, CompileError> {
    Err(CompileError::Search(SearchError::Measure {
        kernel: "every kernel".into(),
        reason: "BEAM search measures kernels on the host: build with feature `host`".into(),
    }))
}

#[cfg(not(feature = "host"))]
fn time_on_host(_: &[Program], _: &[usize], label: &str) -> Result<Vec<Option<f64>>, SearchError> {
    Err(SearchError::Measure {
        kernel: label.to_string(),
        reason: "BEAM search measures kernels on the host: build with feature `host`".into(),
    })
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
