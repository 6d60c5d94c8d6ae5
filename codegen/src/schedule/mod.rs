//! The scheduler: which lazy nodes become buffers, and one kernel AST per buffer computed.
//!
//! Like tinygrad's: elementwise ops are fused into the kernel that consumes them (recomputed
//! through views), a node seen through an expanding view is computed once into a buffer, and a
//! reduce is fused with the elementwise ops after it when they reach exactly one buffer through
//! plain reshapes. Subgraphs that depend only on weights and constants are evaluated at
//! compile time into new weights ([`fold`]).

pub mod ast;
mod build;
pub mod fold;
pub mod layout;
pub(crate) mod realize;
pub use realize::MAX_KERNEL_INPUTS;
mod repeat;
mod state;
pub mod tile;
pub mod widen;

use crate::dtype::DType;
use crate::graph::{Graph, GraphError, Lazy, WeightData, WeightId};
use ast::LazyOp;
use std::collections::BTreeSet;

/// A buffer of the compiled model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BufId(pub u32);

/// Where a buffer's contents come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BufKind {
    /// The model's n-th input (written before a run).
    Input(usize),
    /// The model's n-th state: kept from one run to the next, in a region of the arena of its
    /// own.
    State(usize),
    /// Constant weights (in flash).
    Weight(WeightId),
    /// Computed and consumed during a run.
    Intermediate,
    /// The model's n-th output (read after a run).
    Output(usize),
    /// In a loop's body: this buffer's elements of buffer `of`, from element `start` at the
    /// first iteration, `step` elements further at each next one (a time step's row of a
    /// sequence). It has no memory of its own.
    Window {
        of: BufId,
        start: usize,
        step: isize,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct BufferInfo {
    pub kind: BufKind,
    pub dtype: DType,
    pub shape: Vec<usize>,
}

impl BufferInfo {
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }

    pub fn bytes(&self) -> usize {
        self.numel() * self.dtype.size()
    }
}

/// One kernel launch: its AST (buffer `k` of the AST is `bufs[k]`).
#[derive(Clone, Debug)]
pub struct ScheduleItem {
    pub ast: Vec<LazyOp>,
    pub bufs: Vec<BufId>,
}

impl ScheduleItem {
    /// The store of an item whose AST is one store: its buffer argument and view.
    pub fn single_store(&self) -> Option<&ast::MemBuffer> {
        match self.ast.as_slice() {
            [root] => match root.op() {
                ast::Op::Store(m) => Some(m),
                _ => None,
            },
            _ => None,
        }
    }
}

/// A counted loop: `items` run `count` times in order (window buffers move at each iteration).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScheduleLoop {
    pub items: std::ops::Range<usize>,
    pub count: usize,
}

/// The fixed schedule of a model.
#[derive(Clone, Debug)]
pub struct Schedule {
    pub items: Vec<ScheduleItem>,
    /// The loops over runs of `items`, in order; they do not overlap.
    pub loops: Vec<ScheduleLoop>,
    pub buffers: Vec<BufferInfo>,
    pub inputs: Vec<BufId>,
    pub outputs: Vec<BufId>,
    /// Each state's buffer (the last items write their next values into them), and its
    /// initial value (`None`: zeros).
    pub states: Vec<(BufId, Option<crate::tensor::Tensor>)>,
    /// The weights `BufKind::Weight` refers to (the graph's, after folding).
    pub weights: Vec<WeightData>,
    /// Buffers whose shape already puts an image's channels last (the graph's
    /// [`Graph::channels_last`](crate::graph::Graph::channels_last) nodes).
    pub channels_last: BTreeSet<BufId>,
}

/// Errors of scheduling.
#[derive(Debug, thiserror::Error)]
pub enum ScheduleError {
    #[error(transparent)]
    Graph(#[from] GraphError),
    #[error("folding constants")]
    Fold(#[from] crate::graph::eval::EvalError),
    #[error("scheduler: {0}")]
    Internal(String),
}

/// [`create_schedule`], its buffers then laid out for `target` ([`layout::choose_layouts`])
/// and, where it asks, the activations of its dot products stored as int16
/// ([`widen::widen_dot_activations`]).
pub fn schedule_for(
    graph: &Graph,
    outputs: &[Lazy],
    target: &crate::target::Target,
) -> Result<Schedule, ScheduleError> {
    let mut s = create_schedule(graph, outputs)?;
    layout::choose_layouts(&mut s, target);
    widen::widen_dot_activations(&mut s, target);
    Ok(s)
}

/// Folds constants, decides what to realize, and builds one kernel per realized node.
pub fn create_schedule(graph: &Graph, outputs: &[Lazy]) -> Result<Schedule, ScheduleError> {
    let mut g = graph.clone();
    let mut wanted = outputs.to_vec();
    wanted.extend(g.next_states().into_iter().map(|(_, v)| v));
    fold::fold_constants(&mut g, &wanted)?;
    schedule_unfolded(&g, outputs)
}

/// Schedules without folding (used by folding itself): the `outputs`, and the next value of
/// each of the graph's states.
pub fn schedule_unfolded(graph: &Graph, outputs: &[Lazy]) -> Result<Schedule, ScheduleError> {
    let mut g = graph.clone();
    let outputs: Vec<Lazy> = outputs
        .iter()
        .map(|o| realize::output_view(&mut g, o))
        .collect();
    let next: Vec<(usize, Lazy)> = (g.next_states().into_iter())
        .map(|(n, v)| (n, realize::output_view(&mut g, &v)))
        .collect();
    let mut wanted = outputs.clone();
    wanted.extend(next.iter().map(|(_, v)| v.clone()));
    let realization = realize::realization(&g, &wanted);
    let schedule = build::build_schedule(&g, &outputs, &next, &realization)?;
    Ok(state::update_states_in_place(schedule))
}

impl Schedule {
    /// The loop item `index` runs in, if any.
    pub fn loop_of(&self, index: usize) -> Option<&ScheduleLoop> {
        self.loops.iter().find(|l| l.items.contains(&index))
    }

    /// The item of each kernel call of a run, in order: each loop's items `count` times.
    pub fn call_order(&self) -> Vec<usize> {
        let mut order = Vec::new();
        let mut index = 0;
        while index < self.items.len() {
            match self.loops.iter().find(|l| l.items.start == index) {
                Some(l) => {
                    for _ in 0..l.count {
                        order.extend(l.items.clone());
                    }
                    index = l.items.end;
                }
                None => {
                    order.push(index);
                    index += 1;
                }
            }
        }
        order
    }

    /// Whether the compiler may choose how buffer `b` is stored (its layout, its element
    /// type): an intermediate that no window moves over and that no loop's kernel touches.
    pub fn free_storage(&self, b: usize) -> bool {
        let windowed = (self.buffers.iter())
            .any(|x| matches!(x.kind, BufKind::Window { of, .. } if of.0 as usize == b));
        let in_loop = (self.loops.iter().flat_map(|l| l.items.clone()))
            .any(|i| self.items[i].bufs.iter().any(|x| x.0 as usize == b));
        self.buffers[b].kind == BufKind::Intermediate && !windowed && !in_loop
    }

    /// The buffer whose memory `b` is: itself, or the buffer a window moves over.
    pub fn storage(&self, b: BufId) -> BufId {
        match self.buffers[b.0 as usize].kind {
            BufKind::Window { of, .. } => self.storage(of),
            _ => b,
        }
    }
}
