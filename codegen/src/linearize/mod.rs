//! The linearizer: a [`Kernel`] → a UOp graph built from its final stores → a linear program.
//!
//! The semantics follow tinygrad 0.9.1's Linearizer: global and local dims are mapped with
//! [`grouped_dims`] (or become loops when the target has no threads), each reduce gets its own
//! loop and accumulators, grouped reduces go through local memory with a barrier and a
//! first-thread `IF`, and upcast axes are expanded into several values per index.

pub mod expand;
pub mod grouped_dims;
mod load_store;
pub mod program;

use crate::kernel::ast::{LazyOp, Op};
use crate::kernel::{Kernel, KernelBuffer, KernelError};
use crate::ops::AluOp;
use crate::render::RenderError;
use crate::shape::{render_to, Node, NodeRenderer, ShapeTracker};
use crate::uop::{Linear, OrderError, UOpGraph, UOpId, UOpKind};
use expand::UPCAST_PREFIX;
pub use grouped_dims::{grouped_dims, GroupedDims, GroupedDimsError};
pub use program::{to_program, Program};
use std::cell::RefCell;
use std::collections::HashMap;

/// Why a kernel could not be linearized or rendered. Each names the kernel.
#[derive(Debug, thiserror::Error)]
pub enum LinearizeError {
    #[error(transparent)]
    Kernel(#[from] KernelError),
    #[error("kernel {kernel}: {source}")]
    Dims {
        kernel: String,
        #[source]
        source: GroupedDimsError,
    },
    #[error("kernel {kernel}: {source}")]
    Order {
        kernel: String,
        #[source]
        source: OrderError,
    },
    #[error(transparent)]
    Render(#[from] RenderError),
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

type Accs = HashMap<*const crate::kernel::ast::LazyNode, Vec<UOpId>>;
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
}

/// The index (`Node`) → UOp table, over the graph and the loop/thread variables.
struct IdxRenderer<'a> {
    g: RefCell<&'a mut UOpGraph>,
    vars: &'a HashMap<String, UOpId>,
}

impl NodeRenderer<UOpId> for IdxRenderer<'_> {
    fn num(&self, v: i64) -> UOpId {
        self.g.borrow_mut().const_int(v)
    }
    fn var(&self, name: &str, min: i64, max: i64) -> UOpId {
        match self.vars.get(name) {
            Some(&u) => u,
            None => self.g.borrow_mut().node(
                UOpKind::DefineVar {
                    name: name.to_string(),
                    min,
                    max,
                },
                Some(crate::dtype::DType::I32),
                vec![],
            ),
        }
    }
    fn mul(&self, a: UOpId, b: i64) -> UOpId {
        let c = self.num(b);
        self.g.borrow_mut().binary(crate::ops::BinaryOp::Mul, a, c)
    }
    fn div(&self, a: UOpId, b: i64) -> UOpId {
        let c = self.num(b);
        self.g.borrow_mut().binary(crate::ops::BinaryOp::Div, a, c)
    }
    fn modulo(&self, a: UOpId, b: i64) -> UOpId {
        let c = self.num(b);
        self.g.borrow_mut().binary(crate::ops::BinaryOp::Mod, a, c)
    }
    fn lt(&self, a: UOpId, b: i64) -> UOpId {
        let c = self.num(b);
        self.g
            .borrow_mut()
            .binary(crate::ops::BinaryOp::CmpLt, a, c)
    }
    fn add(&self, a: UOpId, b: UOpId) -> UOpId {
        self.g.borrow_mut().binary(crate::ops::BinaryOp::Add, a, b)
    }
    fn and(&self, a: UOpId, b: UOpId) -> UOpId {
        self.g.borrow_mut().binary(crate::ops::BinaryOp::And, a, b)
    }
}

fn zeros_like(v: &[Node]) -> Vec<Node> {
    v.iter().map(|_| Node::num(0)).collect()
}

fn cat(parts: &[&[Node]]) -> Vec<Node> {
    parts.iter().flat_map(|p| p.iter().cloned()).collect()
}

/// Linearizes `kernel` into a UOp program.
pub fn linearize(kernel: &Kernel) -> Result<Linearized, LinearizeError> {
    let lin = Lin {
        k: kernel.clone(),
        g: UOpGraph::new(),
        buf_uops: vec![],
        loop_uops: HashMap::new(),
        load_cache: HashMap::new(),
        last_barrier: None,
    };
    lin.run()
}

impl Lin {
    fn render(&mut self, n: &Node) -> UOpId {
        let r = IdxRenderer {
            g: RefCell::new(&mut self.g),
            vars: &self.loop_uops,
        };
        render_to(n, &r)
    }

    fn dims_err(&self, source: GroupedDimsError) -> LinearizeError {
        LinearizeError::Dims {
            kernel: self.k.label(),
            source,
        }
    }

    fn run(mut self) -> Result<Linearized, LinearizeError> {
        let k = &self.k;
        let (fr, gd, gfr, n, up) = (
            k.first_reduce(),
            k.global_dims(),
            k.group_for_reduces,
            k.shape_len(),
            k.upcasted,
        );
        let mut globals = Vec::new();
        for b in &self.k.bufs {
            self.buf_uops.push(match b {
                KernelBuffer::Mem(m) => {
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
                        Some(m.dtype),
                        vec![],
                    );
                    globals.push(u);
                    Some(u)
                }
                _ => None,
            });
        }
        if gfr > 0 {
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
        let name = self.k.label();
        let t = self.k.target.clone();
        let full = self.k.full_shape().to_vec();
        let gl_dims = &full[..fr + gfr];
        let gprefix = if self.k.dont_use_locals {
            "idx"
        } else {
            "gidx"
        };
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
        let out_shape = self.k.output_shape().to_vec();
        let upcast_idxs: Vec<Node> = (n - up..n)
            .enumerate()
            .map(|(i, a)| Node::var(&format!("{UPCAST_PREFIX}{i}"), 0, out_shape[a] as i64 - 1))
            .collect();
        let full_upcast_idxs: Vec<Node> = (n - up..n)
            .enumerate()
            .map(|(i, a)| Node::var(&format!("{UPCAST_PREFIX}{i}"), 0, full[a] as i64 - 1))
            .collect();
        let (global_size, local_size) = if t.has_local {
            for (i, v) in gg.loop_vars.iter().enumerate() {
                self.special(v, false, i);
            }
            if !self.k.dont_use_locals {
                for (i, v) in lg.loop_vars.iter().enumerate() {
                    self.special(v, true, i);
                }
            }
            (Some(gg.sizes.clone()), Some(lg.sizes.clone()))
        } else {
            let vars: Vec<Node> = gg.loop_vars.iter().chain(&lg.loop_vars).cloned().collect();
            self.render_loop(&vars, 1, false);
            (None, None)
        };
        let global_idxs = gg.idxs;
        let mut local_idxs = lg.idxs;
        let mut accs: Accs = HashMap::new();
        for r in self.k.reduceops.clone() {
            self.render_reduceop(
                &r,
                &mut accs,
                &global_idxs,
                &mut local_idxs,
                &upcast_idxs,
                &full_upcast_idxs,
            )?;
        }
        let stores = self.render_stores(&global_idxs, &local_idxs, &upcast_idxs, &accs);
        let mut sinks = stores;
        sinks.extend(globals);
        let uops =
            crate::uop::linearize(&self.g, &sinks).map_err(|source| LinearizeError::Order {
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
        while let Some(x) = stack.pop() {
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

    fn render_reduceop(
        &mut self,
        r: &LazyOp,
        accs: &mut Accs,
        global_idxs: &[Node],
        local_idxs: &mut Vec<Node>,
        upcast_idxs: &[Node],
        full_upcast_idxs: &[Node],
    ) -> Result<(), LinearizeError> {
        let i = self
            .k
            .reduceops
            .iter()
            .position(|x| x.key() == r.key())
            .expect("known reduce");
        let nred = self.k.reduceops.len();
        let reduce_idxs = self.reduce_idxs();
        let fake_reduce = zeros_like(&reduce_idxs);
        let loop_ctx = self.render_loop(&reduce_idxs, i as u32 * 2 + 2, true);
        let gfr = self.k.group_for_reduces;
        let out_buf = if gfr > 0 {
            self.k.bufs.len() - nred + i
        } else {
            0
        };
        let acc_idxs = cat(&[global_idxs, local_idxs, &fake_reduce, upcast_idxs]);
        let mut acc = self.global_load(out_buf, &acc_idxs, Some(r), None, &loop_ctx);
        let early_idxs = cat(&[global_idxs, local_idxs, &reduce_idxs, full_upcast_idxs]);
        let mut loaded: Loaded = HashMap::new();
        for b in self.buffers_of(r) {
            let v = self.global_load(b, &early_idxs, None, None, &[]);
            loaded.insert(b, v);
        }
        let offs = self.k.acc_offsets(self.k.full_buf_index);
        let gated = self.gate_accs(accs, &early_idxs, &offs);
        self.ast_parse(
            r,
            &gated,
            Some(&offs),
            &loaded,
            Some(&mut acc),
            &mut HashMap::new(),
        );
        self.load_cache.clear();
        if gfr == 0 {
            accs.insert(r.key(), acc);
            if i == nred - 1 {
                local_idxs.truncate(self.k.local_dims);
            }
            return Ok(());
        }
        let acc = self.group_reduce(r, i, out_buf, acc, global_idxs, local_idxs, upcast_idxs)?;
        accs.insert(r.key(), acc);
        Ok(())
    }

    /// The other reduces' accumulators as seen at each upcast position of this reduce's loop
    /// (`offs` maps positions to accumulators), gated where PADTO padded (`gate_acc`).
    fn gate_accs(&mut self, accs: &Accs, idxs: &[Node], offs: &[usize]) -> Accs {
        let (_, valid) = self.k.pad_st.expr_idxs(idxs);
        let valids = expand::expand_node(&valid, &expand::expand_idxs(idxs));
        let mut out = HashMap::new();
        for (key, list) in accs {
            let mut gated = Vec::with_capacity(offs.len());
            for (j, &off) in offs.iter().enumerate() {
                let (a, v) = (list[off], &valids[j.min(valids.len() - 1)]);
                if v.min() == 0 && v.max() == 1 {
                    let c = self.render(v);
                    let dt = self.g.get(a).dtype.expect("typed");
                    let zero = self.g.constant(dt, crate::ops::ConstValue::zero(dt));
                    gated.push(
                        self.g
                            .alu(AluOp::Ternary(crate::ops::TernaryOp::Where), &[c, a, zero]),
                    );
                } else if v.max() == 0 {
                    let dt = self.g.get(a).dtype.expect("typed");
                    gated.push(self.g.constant(dt, crate::ops::ConstValue::zero(dt)));
                } else {
                    gated.push(a);
                }
            }
            out.insert(*key, gated);
        }
        out
    }

    /// The second stage of a grouped reduce: partial results through local memory.
    #[allow(clippy::too_many_arguments)]
    fn group_reduce(
        &mut self,
        r: &LazyOp,
        i: usize,
        out_buf: usize,
        acc: Vec<UOpId>,
        global_idxs: &[Node],
        local_idxs: &mut Vec<Node>,
        upcast_idxs: &[Node],
    ) -> Result<Vec<UOpId>, LinearizeError> {
        let (ld, gfr, gd, fr) = (
            self.k.local_dims,
            self.k.group_for_reduces,
            self.k.global_dims(),
            self.k.first_reduce(),
        );
        let nred = self.k.reduceops.len();
        let fake_global = zeros_like(global_idxs);
        let fake_reduce = zeros_like(&self.reduce_idxs());
        let idxs = cat(&[&fake_global, local_idxs, &fake_reduce, upcast_idxs]);
        let mut stores = self.global_store(out_buf, &idxs, &acc);
        stores.extend(self.last_barrier);
        let mut barrier = self.g.node(UOpKind::Barrier, None, stores);
        if self.k.target.has_local {
            let temp_st = self.k.sts.last().expect("temp buffer").clone();
            let mut fake = vec![Node::num(0); temp_st.shape().len()];
            for (j, l) in local_idxs[ld..].iter().enumerate() {
                fake[gd + ld + j] = l.clone();
            }
            let cond_node = temp_st.expr_idxs(&fake).0.lt_i(1);
            let cond = self.render(&cond_node);
            barrier = self.g.node(UOpKind::If, None, vec![cond, barrier]);
        }
        let full = self.k.full_shape().to_vec();
        let mid = self.k.upcast_in_mid_reduce_axes();
        let end_local: Vec<Node> = (0..fr + gfr)
            .map(|j| {
                let max = if j >= fr && !mid.contains(&j) {
                    full[j] as i64 - 1
                } else {
                    0
                };
                Node::var(&format!("tidx{j}"), 0, max)
            })
            .collect();
        let mut late_local: Vec<Node> = local_idxs[..ld].to_vec();
        late_local.extend_from_slice(&end_local[gd + ld..]);
        let loop_ctx = self.render_loop(&end_local, i as u32 * 2 + 3, true);
        let idxs = cat(&[&fake_global, &late_local, &fake_reduce, upcast_idxs]);
        let mut acc = self.global_load(0, &idxs, Some(r), None, &loop_ctx);
        let partials = self.global_load(out_buf, &idxs, None, Some(barrier), &[]);
        let mut loaded: Loaded = HashMap::new();
        loaded.insert(out_buf, partials);
        let Op::Reduce(rop, _) = r.op() else {
            unreachable!("a reduce")
        };
        let st = self.k.sts[out_buf].clone();
        let temp_load = LazyOp::load(u32::MAX, r.dtype(), st);
        let late = LazyOp::reduce(*rop, vec![], temp_load);
        let offs = self.k.acc_offsets(self.k.bufs.len() - 1);
        let mut cache = HashMap::new();
        cache.insert(late.src()[0].key(), loaded[&out_buf].clone());
        self.ast_parse(
            &late,
            &HashMap::new(),
            Some(&offs),
            &loaded,
            Some(&mut acc),
            &mut cache,
        );
        self.load_cache.clear();
        if i + 1 < nred {
            let fake_local: Vec<Node> = late_local[..ld]
                .iter()
                .cloned()
                .chain(late_local[ld..].iter().map(|_| Node::num(0)))
                .collect();
            let idxs = cat(&[&fake_global, &fake_local, &fake_reduce, upcast_idxs]);
            let stores = self.global_store(out_buf, &idxs, &acc);
            let barrier = self.g.node(UOpKind::Barrier, None, stores);
            self.last_barrier = Some(barrier);
            acc = self.global_load(out_buf, &idxs, None, Some(barrier), &[]);
        } else {
            local_idxs.truncate(ld);
            local_idxs.extend(std::iter::repeat_n(Node::num(0), gfr));
        }
        Ok(acc)
    }

    fn render_stores(
        &mut self,
        global_idxs: &[Node],
        local_idxs: &[Node],
        upcast_idxs: &[Node],
        accs: &Accs,
    ) -> Vec<UOpId> {
        let fake_reduce = zeros_like(&self.reduce_idxs());
        let idxs = cat(&[global_idxs, local_idxs, &fake_reduce, upcast_idxs]);
        let mut loaded: Loaded = HashMap::new();
        let mut stores = Vec::new();
        for s in self.k.ast.clone() {
            for b in self.buffers_of(&s) {
                if let std::collections::hash_map::Entry::Vacant(e) = loaded.entry(b) {
                    let v = self.global_load(b, &idxs, None, None, &[]);
                    e.insert(v);
                }
            }
        }
        let mut cache = HashMap::new();
        let mut vals = Vec::new();
        for s in self.k.ast.clone() {
            vals.push(self.ast_parse(&s.src()[0], accs, None, &loaded, None, &mut cache));
        }
        for (s, v) in self.k.ast.clone().iter().zip(vals) {
            let Op::Store(m) = s.op() else {
                unreachable!("stores")
            };
            let pos = self
                .k
                .bufs
                .iter()
                .position(|b| *b == KernelBuffer::Mem(m.clone()))
                .expect("output buffer");
            stores.extend(self.global_store(pos, &idxs, &v));
        }
        stores
    }

    fn ast_parse(
        &mut self,
        x: &LazyOp,
        accs: &Accs,
        offs: Option<&[usize]>,
        loaded: &Loaded,
        reduce_acc: Option<&mut Vec<UOpId>>,
        cache: &mut HashMap<*const crate::kernel::ast::LazyNode, Vec<UOpId>>,
    ) -> Vec<UOpId> {
        if let Some(v) = cache.get(&x.key()) {
            return v.clone();
        }
        let ret = match x.op() {
            Op::Load(_) | Op::Const(_) => {
                let b = self.buffer_index(x);
                loaded.get(&b).cloned().unwrap_or_default()
            }
            Op::Cast(d) | Op::Bitcast(d) => {
                let bit = matches!(x.op(), Op::Bitcast(_));
                let vals = self.ast_parse(&x.src()[0], accs, offs, loaded, None, cache);
                vals.into_iter()
                    .map(|u| {
                        if bit {
                            self.g.node(UOpKind::Bitcast, Some(*d), vec![u])
                        } else {
                            self.g.cast(*d, u)
                        }
                    })
                    .collect()
            }
            // Inside a reduce, `accs` are already per upcast position.
            Op::Reduce(..) if reduce_acc.is_none() => accs[&x.key()].clone(),
            Op::Reduce(rop, _) => {
                let acc = reduce_acc.expect("checked above");
                let vals = self.ast_parse(&x.src()[0], accs, offs, loaded, None, cache);
                let input = acc.clone();
                let op = AluOp::Binary(rop.binary());
                let mut ret = Vec::new();
                for (v, &off) in vals.iter().zip(offs.unwrap_or(&[0])) {
                    acc[off] = self.g.alu(op, &[acc[off], *v]);
                    ret.push(acc[off]);
                }
                for off in 0..acc.len() {
                    let u = self.g.get(input[off]);
                    if !matches!(u.kind, UOpKind::DefineAcc { .. }) {
                        continue;
                    }
                    if input[off] == acc[off] {
                        // Nothing was accumulated (the values folded away): the initial value.
                        acc[off] = u.src[0];
                    } else {
                        let dt = u.dtype;
                        acc[off] = self.g.node(UOpKind::Phi, dt, vec![input[off], acc[off]]);
                    }
                }
                ret
            }
            Op::Alu(op) => {
                let vals: Vec<Vec<UOpId>> = x
                    .src()
                    .iter()
                    .map(|s| self.ast_parse(s, accs, offs, loaded, None, cache))
                    .collect();
                let n = vals.iter().map(Vec::len).min().unwrap_or(0);
                (0..n)
                    .map(|j| {
                        let args: Vec<UOpId> = vals.iter().map(|v| v[j]).collect();
                        self.g.alu(*op, &args)
                    })
                    .collect()
            }
            Op::Store(_) => unreachable!("stores are roots"),
        };
        cache.insert(x.key(), ret.clone());
        ret
    }

    fn buffer_index(&self, x: &LazyOp) -> usize {
        let b = match x.op() {
            Op::Load(m) => KernelBuffer::Mem(m.clone()),
            Op::Const(c) => KernelBuffer::Const(c.clone()),
            _ => unreachable!("a buffer op"),
        };
        self.k
            .bufs
            .iter()
            .position(|x| *x == b)
            .unwrap_or(usize::MAX)
    }

    fn buf_uop(&self, i: usize) -> UOpId {
        self.buf_uops[i].expect("a global or local buffer")
    }
}
