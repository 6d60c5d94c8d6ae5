//! The linearizer: a [`Kernel`] → a UOp graph built from its final stores → a linear program.
//!
//! The semantics follow tinygrad 0.9.1's Linearizer: global and local dims are mapped with
//! [`grouped_dims`](mod@grouped_dims) (or become loops when the target has no threads), each reduce gets its own
//! loop and accumulators, grouped reduces go through local memory with a barrier and a
//! first-thread `IF`, and upcast axes are expanded into several values per index.

pub mod expand;
pub mod grouped_dims;
mod idx;
mod load_store;
mod packed;
mod parse;
mod reduce;

use crate::kernel::{Kernel, KernelBuffer, KernelError};
use crate::schedule::ast::{LazyOp, Op};
use crate::shape::{Node, ShapeTracker};
use crate::uop::{Linear, OrderError, UOpGraph, UOpId, UOpKind};
use expand::UPCAST_PREFIX;
pub use grouped_dims::{grouped_dims, GroupedDims, GroupedDimsError};
use std::collections::HashMap;

/// Why a kernel could not be linearized or rendered. Each names the kernel.
#[derive(Debug, thiserror::Error)]
pub enum LinearizeError {
    #[error(transparent)]
    Kernel(#[from] KernelError),
    #[error("kernel {kernel}")]
    Dims {
        kernel: String,
        #[source]
        source: GroupedDimsError,
    },
    /// A weight stored widened or paired for packed dot products ([`Kernel::widened`],
    /// [`Kernel::paired`]) in a kernel whose products did not pack: it cannot be read one
    /// value at a time.
    #[error(
        "kernel {kernel}: buffer {buf} is stored widened or reordered for packed dot products, \
         but the kernel's products do not pack into words"
    )]
    Unpacked { kernel: String, buf: usize },
    #[error("kernel {kernel}")]
    Order {
        kernel: String,
        #[source]
        source: OrderError,
    },
}

/// A linearized kernel: its name, program and launch sizes (none for loop-only targets).
#[derive(Debug, Clone)]
pub struct Linearized {
    pub name: String,
    pub uops: Linear,
    pub global_size: Option<Vec<usize>>,
    pub local_size: Option<Vec<usize>>,
    /// The kernel as linearized (with its temp buffers).
    pub kernel: Kernel,
}

type Accs = HashMap<*const crate::schedule::ast::LazyNode, Vec<UOpId>>;
type Loaded = HashMap<usize, Vec<UOpId>>;

struct Lin {
    k: Kernel,
    g: UOpGraph,
    buf_uops: Vec<Option<UOpId>>,
    loop_uops: HashMap<String, UOpId>,
    load_cache: HashMap<String, UOpId>,
    /// The barrier that ends the previous grouped reduce: the next one starts after it, so
    /// that each reduce's first-thread `IF` stands alone.
    last_barrier: Option<UOpId>,
    /// The upcast axis computed as vector lanes, and the accumulators of each reduce grouped
    /// into lanes along it (see [`crate::kernel::lanes`]).
    vector_axis: Option<usize>,
    vector_groups: Vec<Vec<UOpId>>,
    /// The loop nest being built (see [`crate::kernel::interior`]).
    region: u32,
}

/// The global dims of each loop nest of `k`: its global variables narrowed to each of its
/// INTERIOR regions, or the dims as they are when the kernel is one nest. Falls back to one
/// nest where a split axis is not a plain loop variable (it always is without threads).
fn narrowed_regions(k: &Kernel, gg: &GroupedDims) -> Vec<GroupedDims> {
    let regions = k.interior_regions();
    let narrow = |region: &crate::kernel::interior::Region| -> Option<GroupedDims> {
        let mut map = HashMap::new();
        for (axis, range) in region {
            let crate::shape::NodeKind::Var { name, .. } = gg.idxs.get(*axis)?.kind() else {
                return None;
            };
            let var = Node::var(name, range.start as i64, range.end as i64 - 1);
            map.insert(name.to_string(), var);
        }
        let sub = |v: &[Node]| v.iter().map(|x| x.substitute(&map)).collect();
        Some(GroupedDims {
            idxs: sub(&gg.idxs),
            loop_vars: sub(&gg.loop_vars),
            sizes: gg.sizes.clone(),
        })
    };
    regions
        .iter()
        .map(narrow)
        .collect::<Option<Vec<_>>>()
        .unwrap_or_else(|| vec![gg.clone()])
}

fn zeros_like(v: &[Node]) -> Vec<Node> {
    v.iter().map(|_| Node::num(0)).collect()
}

fn cat(parts: &[&[Node]]) -> Vec<Node> {
    parts.iter().flat_map(|p| p.iter().cloned()).collect()
}

/// Linearizes `kernel` into a UOp program.
pub fn linearize(kernel: &Kernel) -> Result<Linearized, LinearizeError> {
    let k = kernel.clone();
    let vector_axis = k.vector_axis();
    let lin = Lin {
        k,
        g: UOpGraph::new(),
        buf_uops: vec![],
        loop_uops: HashMap::new(),
        load_cache: HashMap::new(),
        last_barrier: None,
        vector_axis,
        vector_groups: Vec::new(),
        region: 0,
    };
    lin.run()
}

impl Lin {
    fn dims_err(&self, source: GroupedDimsError) -> LinearizeError {
        LinearizeError::Dims {
            kernel: self.k.label(),
            source,
        }
    }

    fn run(mut self) -> Result<Linearized, LinearizeError> {
        let globals = self.define_globals();
        self.define_temps();
        let name = self.k.label();
        let (gg, lg) = self.thread_dims()?;
        let (upcast_idxs, full_upcast_idxs) = self.upcast_idxs();
        let regions = narrowed_regions(&self.k, &gg);
        let (mut global_size, mut local_size) = (None, None);
        let mut sinks = Vec::new();
        for (r, gg) in regions.iter().enumerate() {
            self.region = r as u32;
            self.load_cache.clear();
            (global_size, local_size) = self.open_threads(gg, &lg);
            let global_idxs = &gg.idxs;
            let mut local_idxs = lg.idxs.clone();
            let mut accs: Accs = HashMap::new();
            for r in self.k.reduceops.clone() {
                self.render_reduceop(
                    &r,
                    &mut accs,
                    global_idxs,
                    &mut local_idxs,
                    &upcast_idxs,
                    &full_upcast_idxs,
                )?;
            }
            sinks.extend(self.render_stores(global_idxs, &local_idxs, &upcast_idxs, &accs));
        }
        sinks.extend(globals);
        let sinks = crate::uop::vectorize::vectorize(&mut self.g, &self.vector_groups, &sinks);
        let uops =
            crate::uop::order_uops(&self.g, &sinks).map_err(|source| LinearizeError::Order {
                kernel: name.clone(),
                source,
            })?;
        Ok(Linearized {
            name,
            uops,
            global_size,
            local_size,
            kernel: self.k,
        })
    }

    /// A `DEFINE_GLOBAL` per memory buffer (mutable where the kernel stores into it); returns
    /// them, in buffer order.
    fn define_globals(&mut self) -> Vec<UOpId> {
        let mut globals = Vec::new();
        for (i, b) in self.k.bufs.iter().enumerate() {
            self.buf_uops.push(match b {
                KernelBuffer::Mem(m) => {
                    // A widened weight's memory holds int16 (its packed loads read it so).
                    let dtype = match self.k.widened.contains(&i) {
                        true => crate::dtype::DType::I16,
                        false => m.dtype,
                    };
                    let mutable = self
                        .k
                        .ast
                        .iter()
                        .any(|s| matches!(s.op(), Op::Store(o) if o.idx == m.idx));
                    let u = self.g.node(
                        UOpKind::DefineGlobal {
                            buf: m.idx,
                            mutable,
                        },
                        Some(dtype),
                        vec![],
                    );
                    globals.push(u);
                    Some(u)
                }
                _ => None,
            });
        }
        globals
    }

    /// With grouped reduces: a local-memory temp buffer per reduce (`temp`, or `temp0`,
    /// `temp1`, …), shaped by the grouped and upcast axes, added to the kernel's buffers.
    fn define_temps(&mut self) {
        let k = &self.k;
        let (fr, gd, gfr, n, up) = (
            k.first_reduce(),
            k.global_dims(),
            k.group_for_reduces,
            k.shape_len(),
            k.upcasted,
        );
        if gfr == 0 {
            return;
        }
        let nred = self.k.reduceops.len();
        let dtype = self.k.reduceops[0].dtype();
        let full = self.k.full_shape().to_vec();
        let mut shape = vec![1; gd];
        shape.extend_from_slice(&full[gd..fr + gfr]);
        shape.extend(std::iter::repeat_n(1, n - up - gfr - fr));
        shape.extend(self.k.upcasted_axis(0).iter().map(|a| a.0));
        for i in 0..nred {
            let st = ShapeTracker::from_shape(&shape);
            let name = if nred > 1 {
                format!("temp{i}")
            } else {
                "temp".to_string()
            };
            let size = st.size();
            self.k.sts.push(st);
            self.k.bufs.push(KernelBuffer::Local {
                name: name.clone(),
                size,
                dtype,
            });
            let u = self
                .g
                .node(UOpKind::DefineLocal { name, size }, Some(dtype), vec![]);
            self.buf_uops.push(Some(u));
        }
    }

    /// The global and the local (and grouped-reduce) dims, mapped onto the target's thread
    /// axes and their limits.
    fn thread_dims(&self) -> Result<(GroupedDims, GroupedDims), LinearizeError> {
        let k = &self.k;
        let (fr, gd, gfr) = (k.first_reduce(), k.global_dims(), k.group_for_reduces);
        let t = &k.target;
        let full = k.full_shape();
        let gl_dims = &full[..fr + gfr];
        let gprefix = if k.dont_use_locals { "idx" } else { "gidx" };
        let gmax = if t.has_local {
            t.global_max.as_deref()
        } else {
            None
        };
        let gg = grouped_dims(gprefix, 0, &gl_dims[..gd], gmax, t.has_local)
            .map_err(|e| self.dims_err(e))?;
        let lmax: Option<&[usize]> = if t.has_local {
            t.local_max.as_deref()
        } else {
            Some(&[])
        };
        let lg =
            grouped_dims("lidx", gd, &gl_dims[gd..], lmax, false).map_err(|e| self.dims_err(e))?;
        Ok((gg, lg))
    }

    /// A variable per upcast axis, over the output's size of it and over the full size.
    fn upcast_idxs(&self) -> (Vec<Node>, Vec<Node>) {
        let (n, up) = (self.k.shape_len(), self.k.upcasted);
        let idxs = |shape: &[usize]| -> Vec<Node> {
            (n - up..n)
                .enumerate()
                .map(|(i, a)| Node::var(&format!("{UPCAST_PREFIX}{i}"), 0, shape[a] as i64 - 1))
                .collect()
        };
        (idxs(self.k.output_shape()), idxs(self.k.full_shape()))
    }

    /// The thread ids (`SPECIAL`s) of a target with threads, with the launch's global and local
    /// sizes; on one without, a loop over every global and local variable instead.
    fn open_threads(
        &mut self,
        gg: &GroupedDims,
        lg: &GroupedDims,
    ) -> (Option<Vec<usize>>, Option<Vec<usize>>) {
        if !self.k.target.has_local {
            let vars: Vec<Node> = gg.loop_vars.iter().chain(&lg.loop_vars).cloned().collect();
            self.render_loop(&vars, 1, false);
            return (None, None);
        }
        for (i, v) in gg.loop_vars.iter().enumerate() {
            self.special(v, false, i);
        }
        if !self.k.dont_use_locals {
            for (i, v) in lg.loop_vars.iter().enumerate() {
                self.special(v, true, i);
            }
        }
        (Some(gg.sizes.clone()), Some(lg.sizes.clone()))
    }

    fn special(&mut self, v: &Node, local: bool, axis: usize) {
        if let crate::shape::NodeKind::Var { name, max, .. } = v.kind() {
            let u = self.g.node(
                UOpKind::Special {
                    local,
                    axis: axis as u8,
                    name: name.to_string(),
                    size: *max as usize + 1,
                },
                Some(crate::dtype::DType::I32),
                vec![],
            );
            self.loop_uops.insert(name.to_string(), u);
        }
    }

    /// Opens a loop per variable (skipping constants); returns the `RANGE`s.
    fn render_loop(&mut self, vars: &[Node], depth: u32, reduce: bool) -> Vec<UOpId> {
        let mut out = Vec::new();
        for (i, v) in vars.iter().enumerate() {
            if let crate::shape::NodeKind::Var { name, min, max } = v.kind() {
                let lo = self.g.const_int(*min);
                let hi = self.g.const_int(*max + 1);
                let r = self.g.node(
                    UOpKind::Range {
                        depth,
                        index: i as u32,
                        reduce,
                        region: self.region,
                    },
                    Some(crate::dtype::DType::I32),
                    vec![lo, hi],
                );
                self.loop_uops.insert(name.to_string(), r);
                out.push(r);
            }
        }
        out
    }

    fn reduce_idxs(&self) -> Vec<Node> {
        let k = &self.k;
        let full = k.full_shape();
        (k.first_reduce() + k.group_for_reduces..k.shape_len() - k.upcasted)
            .map(|i| Node::var(&format!("ridx{i}"), 0, full[i] as i64 - 1))
            .collect()
    }

    /// Positions in `bufs` of the buffers read by `op`'s tree, not looking into reduces below it.
    fn buffers_of(&self, op: &LazyOp) -> Vec<usize> {
        let mut out = Vec::new();
        let mut stack: Vec<LazyOp> = op.src().to_vec();
        let mut seen = std::collections::HashSet::new();
        while let Some(x) = stack.pop() {
            if !seen.insert(x.key()) {
                continue;
            }
            match x.op() {
                Op::Load(m) => out.extend(
                    self.k
                        .bufs
                        .iter()
                        .position(|b| *b == KernelBuffer::Mem(m.clone())),
                ),
                Op::Const(c) => out.extend(
                    self.k
                        .bufs
                        .iter()
                        .position(|b| *b == KernelBuffer::Const(c.clone())),
                ),
                Op::Reduce(..) => {}
                _ => stack.extend(x.src().iter().cloned()),
            }
        }
        out.sort();
        out.dedup();
        out
    }

    fn buf_uop(&self, i: usize) -> UOpId {
        self.buf_uops[i].expect("a global or local buffer")
    }
}
