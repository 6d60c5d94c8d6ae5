//! The whole pipeline in one place: graph → schedule → kernels → linearize + render → plan →
//! bundle.

use crate::bundle::{self, Bundle, BundleError};
use crate::dtype::DType;
use crate::graph::{Graph, Lazy};
use crate::kernel::heuristic::hand_coded_optimizations;
#[cfg(feature = "host")]
use crate::kernel::search::{apply_all, cached_beam_search};
use crate::kernel::search::{searchable, Cache, SearchError};
use crate::kernel::Kernel;
use crate::linearize::{to_program, LinearizeError, Program};
use crate::onnx::import::Imported;
use crate::plan::{in_place_pairs, plan_arena_with};
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
    let schedule = create_schedule(graph, outputs)?;
    let mut programs: Vec<Program> = Vec::with_capacity(schedule.items.len());
    let mut stats = SearchStats::default();
    for item in &schedule.items {
        let mut k = Kernel::new(item.ast.clone(), target.clone()).map_err(ScheduleError::from)?;
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
        progress(programs.len(), schedule.items.len());
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
