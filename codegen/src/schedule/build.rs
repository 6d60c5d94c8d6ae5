//! Building each realized node's kernel AST: unrealized sources are inlined through their
//! views, realized ones become loads.

use super::realize::Realization;
use super::{BufId, BufKind, BufferInfo, Schedule, ScheduleError, ScheduleItem, ScheduleLoop};
use crate::graph::{GOp, Graph, Lazy, NodeId, WeightData};
use crate::schedule::ast::LazyOp;
use crate::shape::ShapeTracker;
use std::collections::HashMap;

/// The schedule being built over a graph and its realization: the buffers made so far, and
/// each node's buffer.
pub(super) struct Scheduler<'a> {
    pub g: &'a Graph,
    realization: &'a Realization,
    pub buffers: Vec<BufferInfo>,
    buf_of: HashMap<NodeId, BufId>,
    /// The graph's weights, then those of loop bodies.
    pub weights: Vec<WeightData>,
    pub items: Vec<ScheduleItem>,
    pub loops: Vec<ScheduleLoop>,
}

impl Scheduler<'_> {
    pub fn buffer(&mut self, id: NodeId, kind: BufKind) -> BufId {
        if let Some(&b) = self.buf_of.get(&id) {
            return b;
        }
        let n = self.g.node(id);
        let b = self.new_buffer(BufferInfo {
            kind,
            dtype: n.dtype,
            shape: n.shape.clone(),
        });
        self.buf_of.insert(id, b);
        b
    }

    /// A buffer of no node.
    pub fn new_buffer(&mut self, info: BufferInfo) -> BufId {
        self.buffers.push(info);
        BufId(self.buffers.len() as u32 - 1)
    }

    pub fn source_buffer(&mut self, id: NodeId) -> BufId {
        let kind = match self.g.node(id).op {
            GOp::Input(i) => BufKind::Input(i),
            GOp::State(i) => BufKind::State(i),
            GOp::Weight(w) => BufKind::Weight(w),
            _ => BufKind::Intermediate,
        };
        self.buffer(id, kind)
    }
}

/// Per-kernel state: the kernel's buffers (`data0` is the output).
struct KernelCtx {
    root: NodeId,
    bufs: Vec<BufId>,
    /// The AST of each (node, view) expanded so far: a value used twice is one shared node,
    /// and a graph that reuses values (as fixed-point arithmetic does) expands in linear time.
    done: HashMap<(NodeId, ShapeTracker), LazyOp>,
}

impl KernelCtx {
    fn index(&mut self, b: BufId) -> u32 {
        match self.bufs.iter().position(|&x| x == b) {
            Some(i) => i as u32,
            None => {
                self.bufs.push(b);
                self.bufs.len() as u32 - 1
            }
        }
    }
}

pub(super) fn build_schedule(
    g: &Graph,
    outputs: &[Lazy],
    next: &[(usize, Lazy)],
    realization: &Realization,
) -> Result<Schedule, ScheduleError> {
    let mut b = Scheduler {
        g,
        realization,
        buffers: vec![],
        buf_of: HashMap::new(),
        weights: g.weights.clone(),
        items: vec![],
        loops: vec![],
    };
    let mut inputs = Vec::new();
    for (id, node) in g.nodes.iter().enumerate() {
        if let GOp::Input(i) = node.op {
            inputs.push((i, b.buffer(NodeId(id as u32), BufKind::Input(i))));
        }
    }
    inputs.sort();
    let states = state_buffers(&mut b);
    let mut outs = Vec::new();
    for (i, o) in outputs.iter().enumerate() {
        let buf = b.buffer(o.base, BufKind::Output(i));
        // An output stored in its node's buffer through a plain reshape has the output's
        // shape, not the node's (a convolution's node has eight dims, its output four).
        let info = &mut b.buffers[buf.0 as usize];
        if info.shape.iter().product::<usize>() == o.shape().iter().product::<usize>() {
            info.shape = o.shape().to_vec();
        }
        outs.push(buf);
    }
    for &id in &realization.order {
        let node = g.node(id);
        if !realization.realized[id.0 as usize] || node.op.is_source_buffer() {
            continue;
        }
        match &node.op {
            GOp::Loop(body) => {
                super::repeat::emit_loop(&mut b, id, body)?;
                continue;
            }
            GOp::LoopResult(_) => {
                // Computed by its loop, which comes first.
                b.buffer(id, BufKind::Intermediate);
                continue;
            }
            _ => {}
        }
        let out = b.buffer(id, BufKind::Intermediate);
        if node.shape.contains(&0) {
            // An empty buffer has nothing to compute.
            continue;
        }
        let space = match realization.fused.get(&id) {
            Some(r) => g.node(*r).shape.clone(),
            None => node.shape.clone(),
        };
        let mut ctx = KernelCtx {
            root: id,
            bufs: vec![out],
            done: HashMap::new(),
        };
        let st = ShapeTracker::from_shape(&node.shape)
            .reshape(&space)
            .map_err(crate::graph::GraphError::from)?;
        let value = expand(&mut b, &mut ctx, id, &st)?;
        let store = LazyOp::store(0, ShapeTracker::from_shape(&space), value);
        b.items.push(ScheduleItem {
            ast: vec![store],
            bufs: ctx.bufs,
        });
    }
    for (n, value) in next {
        store_state(&mut b, states[*n], value)?;
    }
    Ok(Schedule {
        items: b.items,
        loops: b.loops,
        buffers: b.buffers,
        inputs: inputs.into_iter().map(|(_, b)| b).collect(),
        outputs: outs,
        states: (states.into_iter().zip(&g.states))
            .map(|(buf, s)| (buf, s.init.clone()))
            .collect(),
        channels_last: (b.buf_of.iter())
            .filter(|(id, _)| g.channels_last.contains(id))
            .map(|(_, &buf)| buf)
            .collect(),
        weights: b.weights,
    })
}

/// One buffer per state of the graph, whether or not a kernel reads it: a state that is only
/// written is still kept.
fn state_buffers(b: &mut Scheduler) -> Vec<BufId> {
    let mut states: Vec<Option<BufId>> = vec![None; b.g.states.len()];
    for (id, node) in b.g.nodes.iter().enumerate() {
        if let GOp::State(n) = node.op {
            states[n] = Some(b.buffer(NodeId(id as u32), BufKind::State(n)));
        }
    }
    (states.into_iter().enumerate())
        .map(|(n, buf)| {
            buf.unwrap_or_else(|| {
                let s = &b.g.states[n];
                b.new_buffer(BufferInfo {
                    kind: BufKind::State(n),
                    dtype: s.dtype,
                    shape: s.shape.clone(),
                })
            })
        })
        .collect()
}

/// The last kernels copy each state's next value (realized in its own buffer) over the state,
/// after every kernel that reads the state's value as the run started.
fn store_state(b: &mut Scheduler, state: BufId, value: &Lazy) -> Result<(), ScheduleError> {
    let from = b.buffer(value.base, BufKind::Intermediate);
    let shape = b.buffers[state.0 as usize].shape.clone();
    let st = ShapeTracker::from_shape(&b.g.node(value.base).shape)
        .reshape(&shape)
        .map_err(crate::graph::GraphError::from)?;
    let load = LazyOp::load(1, value.dtype, st);
    b.items.push(ScheduleItem {
        ast: vec![LazyOp::store(0, ShapeTracker::from_shape(&shape), load)],
        bufs: vec![state, from],
    });
    Ok(())
}

/// The AST computing node `id` seen through `st` (a view over the node's shape).
fn expand(
    b: &mut Scheduler,
    ctx: &mut KernelCtx,
    id: NodeId,
    st: &ShapeTracker,
) -> Result<LazyOp, ScheduleError> {
    let key = (id, st.clone());
    if let Some(op) = ctx.done.get(&key) {
        return Ok(op.clone());
    }
    let op = expand_new(b, ctx, id, st)?;
    ctx.done.insert(key, op.clone());
    Ok(op)
}

fn expand_new(
    b: &mut Scheduler,
    ctx: &mut KernelCtx,
    id: NodeId,
    st: &ShapeTracker,
) -> Result<LazyOp, ScheduleError> {
    let node = b.g.node(id);
    let realized = b.realization.realized[id.0 as usize];
    if (realized && id != ctx.root) || node.op.is_source_buffer() {
        let buf = b.source_buffer(id);
        return Ok(LazyOp::load(ctx.index(buf), node.dtype, st.clone()));
    }
    let through = |b: &mut Scheduler, ctx: &mut KernelCtx, s: &Lazy| {
        expand(b, ctx, s.base, &s.st.compose(st))
    };
    Ok(match &node.op {
        GOp::Const(c) => LazyOp::constant(*c, node.dtype, st.clone()),
        GOp::Alu(op) => {
            let mut src = Vec::with_capacity(node.src.len());
            for s in &node.src {
                src.push(through(b, ctx, s)?);
            }
            LazyOp::alu(*op, src)
        }
        GOp::Cast => LazyOp::cast(node.dtype, through(b, ctx, &node.src[0])?),
        GOp::Bitcast => LazyOp::bitcast(node.dtype, through(b, ctx, &node.src[0])?),
        GOp::Contiguous => through(b, ctx, &node.src[0])?,
        GOp::Reduce(op, axes) => {
            if st.shape() != node.shape.as_slice() || !st.contiguous() {
                return Err(ScheduleError::Internal(format!(
                    "reduce node {} fused through a view {:?} that is not its own shape {:?}",
                    id.0,
                    st.shape(),
                    node.shape
                )));
            }
            let s = &node.src[0];
            let inner = expand(b, ctx, s.base, &s.st)?;
            LazyOp::reduce(*op, axes.clone(), inner)
        }
        GOp::Input(_) | GOp::State(_) | GOp::Weight(_) => unreachable!("handled above"),
        GOp::Loop(_) | GOp::LoopResult(_) => {
            return Err(ScheduleError::Internal(format!(
                "loop node {} read as a value in a kernel",
                id.0
            )))
        }
    })
}
