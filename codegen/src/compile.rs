//! The whole pipeline in one place: graph → schedule → kernels → linearize + render → plan →
//! bundle.

use crate::bundle::{self, Bundle, BundleError};
use crate::graph::{Graph, Lazy};
use crate::kernel::heuristic::hand_coded_optimizations;
use crate::kernel::Kernel;
use crate::linearize::{to_program, LinearizeError, Program};
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
    Ok(bundle::build(name, &schedule, &programs, &plan)?)
}
