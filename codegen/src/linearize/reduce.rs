//! Reduces: the reduce loop and its accumulators, and the second, local-memory stage of a
//! grouped reduce.

use super::{cat, expand, zeros_like, Accs, Lin, LinearizeError, Loaded};
use crate::ops::AluOp;
use crate::schedule::ast::{LazyOp, Op};
use crate::shape::Node;
use crate::uop::{UOpId, UOpKind};
use std::collections::HashMap;

impl Lin {
    pub(super) fn render_reduceop(
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
        let packed = match self.k.packed_dot_axis() {
            Some(axis) => self.packed_dots(axis, &early_idxs, &loaded, &offs, &mut acc),
            None => false,
        };
        if let (false, Some(&buf)) = (packed, self.k.widened.iter().chain(&self.k.paired).next()) {
            return Err(LinearizeError::Unpacked {
                kernel: self.k.label(),
                buf,
            });
        }
        if !packed {
            let gated = self.gate_accs(accs, &early_idxs, &offs);
            self.ast_parse(
                r,
                &gated,
                Some(&offs),
                &loaded,
                Some(&mut acc),
                &mut HashMap::new(),
            );
        }
        self.load_cache.clear();
        self.group_lanes(&acc_idxs, &acc);
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

    /// After a reduce's loop body: each accumulator `acc` that was updated becomes a loop-carried
    /// update of its definition in `input`; one left as defined (its values folded away) is
    /// its initial value.
    pub(super) fn close_accumulators(&mut self, input: &[UOpId], acc: &mut [UOpId]) {
        for off in 0..acc.len() {
            let u = self.g.get(input[off]);
            if !matches!(u.kind, UOpKind::DefineAcc { .. }) {
                continue;
            }
            if input[off] == acc[off] {
                acc[off] = u.src[0];
            } else {
                let dt = u.dtype;
                acc[off] = self.g.node(UOpKind::Phi, dt, vec![input[off], acc[off]]);
            }
        }
    }

    /// Groups the accumulators `acc` (one per upcast combination of `acc_idxs`) into lanes
    /// along the vector axis: each group holds the accumulators that differ only there, in
    /// lane order.
    fn group_lanes(&mut self, acc_idxs: &[Node], acc: &[UOpId]) {
        let Some(axis) = self.vector_axis else {
            return;
        };
        let n = self.k.shape_len();
        let name = format!("{}{}", expand::UPCAST_PREFIX, axis - (n - self.k.upcasted));
        let vars = expand::expand_idxs(acc_idxs);
        let Some(at) = vars.iter().position(
            |v| matches!(v.kind(), crate::shape::NodeKind::Var { name: m, .. } if **m == *name),
        ) else {
            return;
        };
        let combos = expand::iter_idxs(&vars);
        if combos.len() != acc.len() {
            return;
        }
        // Keyed by the other upcast positions (the lane's own set to 0): (lane, accumulator).
        let mut groups: std::collections::BTreeMap<Vec<i64>, Vec<(i64, UOpId)>> =
            Default::default();
        for (mut key, &a) in combos.into_iter().zip(acc) {
            let lane = std::mem::replace(&mut key[at], 0);
            groups.entry(key).or_default().push((lane, a));
        }
        for (_, mut lanes) in groups {
            lanes.sort_by_key(|l| l.0);
            self.vector_groups
                .push(lanes.into_iter().map(|l| l.1).collect());
        }
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
        let (ld, gfr, gd) = (
            self.k.local_dims,
            self.k.group_for_reduces,
            self.k.global_dims(),
        );
        let fake_global = zeros_like(global_idxs);
        let fake_reduce = zeros_like(&self.reduce_idxs());
        let idxs = cat(&[&fake_global, local_idxs, &fake_reduce, upcast_idxs]);
        let barrier = self.store_partials(out_buf, &idxs, &acc, &local_idxs[ld..]);
        let end_local = self.end_local_idxs();
        let mut late_local: Vec<Node> = local_idxs[..ld].to_vec();
        late_local.extend_from_slice(&end_local[gd + ld..]);
        let loop_ctx = self.render_loop(&end_local, i as u32 * 2 + 3, true);
        let idxs = cat(&[&fake_global, &late_local, &fake_reduce, upcast_idxs]);
        let mut acc = self.reduce_partials(r, out_buf, &idxs, barrier, &loop_ctx);
        if i + 1 < self.k.reduceops.len() {
            // The next reduce reads this one's result from local memory, after a barrier.
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

    /// Stores each thread's partial results `acc` into the temp buffer `out_buf` at `idxs`,
    /// then a barrier; on a target with threads, the rest runs in the first thread of the group
    /// only (`group_idxs`: the grouped local indices). Returns what the loads must follow.
    fn store_partials(
        &mut self,
        out_buf: usize,
        idxs: &[Node],
        acc: &[UOpId],
        group_idxs: &[Node],
    ) -> UOpId {
        let (ld, gd) = (self.k.local_dims, self.k.global_dims());
        let mut stores = self.global_store(out_buf, idxs, acc);
        stores.extend(self.last_barrier);
        let barrier = self.g.node(UOpKind::Barrier, None, stores);
        if !self.k.target.has_local {
            return barrier;
        }
        let temp_st = self.k.sts.last().expect("temp buffer").clone();
        let mut fake = vec![Node::num(0); temp_st.shape().len()];
        for (j, l) in group_idxs.iter().enumerate() {
            fake[gd + ld + j] = l.clone();
        }
        let cond_node = temp_st.expr_idxs(&fake).0.lt_i(1);
        let cond = self.render(&cond_node);
        self.g.node(UOpKind::If, None, vec![cond, barrier])
    }

    /// The loop variables over the grouped axes (`tidx{j}`), the others fixed at 0.
    fn end_local_idxs(&self) -> Vec<Node> {
        let (gfr, fr) = (self.k.group_for_reduces, self.k.first_reduce());
        let full = self.k.full_shape();
        let mid = self.k.upcast_in_mid_reduce_axes();
        (0..fr + gfr)
            .map(|j| {
                let max = if j >= fr && !mid.contains(&j) {
                    full[j] as i64 - 1
                } else {
                    0
                };
                Node::var(&format!("tidx{j}"), 0, max)
            })
            .collect()
    }

    /// Reduces the partial results in the temp buffer `out_buf` (read at `idxs` after
    /// `barrier`) with `r`'s op, in the loop `loop_ctx`: the new accumulators.
    fn reduce_partials(
        &mut self,
        r: &LazyOp,
        out_buf: usize,
        idxs: &[Node],
        barrier: UOpId,
        loop_ctx: &[UOpId],
    ) -> Vec<UOpId> {
        let mut acc = self.global_load(0, idxs, Some(r), None, loop_ctx);
        let partials = self.global_load(out_buf, idxs, None, Some(barrier), &[]);
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
        acc
    }
}
