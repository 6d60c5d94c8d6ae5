//! Loads (and accumulator definitions) and stores of one buffer at a set of indices,
//! expanded over the upcast axes, gated by the view's validity, vectorized where possible.

use super::expand::{expand_idxs, expand_node, expand_self, iter_idxs};
use super::Lin;
use crate::ops::{AluOp, ConstValue, TernaryOp};
use crate::schedule::ast::{LazyOp, Op};
use crate::shape::Node;
use crate::uop::{UOpId, UOpKind};

impl Lin {
    /// The vector axis and width for buffer `i` at `idxs`, when the target and alignment allow.
    fn float4_dim(&self, i: usize, idxs: &[Node]) -> Option<(usize, usize, Vec<Node>)> {
        let dims = self.k.float4_upcast_dims(i);
        if dims.len() != 1 {
            return None;
        }
        let d = dims[0];
        let f4 = expand_self(&idxs[d]);
        if f4.len() != 2 && f4.len() != 4 {
            return None;
        }
        Some((d, f4.len(), f4))
    }

    /// Loads buffer `i` at `idxs`, one value per upcast combination. With `acc`, defines the
    /// accumulators of that reduce instead (keyed by the output index they stand for).
    pub(super) fn global_load(
        &mut self,
        i: usize,
        idxs: &[Node],
        acc: Option<&LazyOp>,
        barrier: Option<UOpId>,
        loop_ctx: &[UOpId],
    ) -> Vec<UOpId> {
        let st = self.k.sts[i].clone();
        let buf = self.k.bufs[i].clone();
        let mut localtype = acc.map_or(buf.dtype(), |a| a.dtype());
        let konst = buf.const_value();
        let expand_vars = expand_idxs(idxs);
        let mut vector: Option<(usize, usize)> = None;
        let mut g = None;
        if acc.is_none() {
            if let Some((d, amt, f4)) = self.float4_dim(i, idxs) {
                let mut ii = idxs.to_vec();
                ii[d] = f4[0].clone();
                let (gi, gv) = st.expr_idxs(&ii);
                if gi == gi.div_i(amt as i64).mul_i(amt as i64) {
                    vector = Some((d, amt));
                    g = Some((gi, gv));
                }
            }
        }
        let (g_idx, g_valid) = g.unwrap_or_else(|| st.expr_idxs(idxs));
        if let Some((_, amt)) = vector {
            localtype = localtype.vec(amt as u8);
        }
        let e_idxs = expand_node(&g_idx, &expand_vars);
        let e_valids = expand_node(&g_valid, &expand_vars);
        let reps = iter_idxs(&expand_vars);
        let acc_index = acc.and_then(|a| self.k.reduceops.iter().position(|r| r.key() == a.key()));
        let mut ret = Vec::with_capacity(e_idxs.len());
        for ((idx, valid), rep) in e_idxs.into_iter().zip(e_valids).zip(reps) {
            let (this_const, idx, valid) = if valid.max() == 0 {
                (
                    Some(ConstValue::zero(localtype)),
                    Node::num(0),
                    Node::num(1),
                )
            } else {
                (konst, idx, valid)
            };
            let source = match (this_const, acc) {
                (Some(c), None) => format!("CONST{:?}", c),
                _ => format!("buf{i}"),
            };
            // Separated, so that no two loads share a key (`buf1`, `12` and `buf11`, `2`).
            let key = format!(
                "{}|{localtype}|{source}|{}|{}",
                acc_index.map(|a| a.to_string()).unwrap_or_default(),
                idx.render(),
                valid.render()
            );
            if !self.load_cache.contains_key(&key) {
                let u = self.load_one(
                    i, acc, this_const, localtype, &idx, &valid, barrier, loop_ctx,
                );
                self.load_cache.insert(key.clone(), u);
            }
            let u = self.load_cache[&key];
            ret.push(match vector {
                Some((d, _)) => self.g.gep(u, rep[d] as u8),
                None => u,
            });
        }
        ret
    }

    #[allow(clippy::too_many_arguments)]
    fn load_one(
        &mut self,
        i: usize,
        acc: Option<&LazyOp>,
        this_const: Option<ConstValue>,
        localtype: crate::dtype::DType,
        idx: &Node,
        valid: &Node,
        barrier: Option<UOpId>,
        loop_ctx: &[UOpId],
    ) -> UOpId {
        if let Some(a) = acc {
            let Op::Reduce(rop, _) = a.op() else {
                unreachable!("accumulators are for reduces")
            };
            if loop_ctx.is_empty() {
                // Fully unrolled: the reduce is a chain of ALU ops from the identity.
                return self.g.constant(localtype, rop.identity(localtype));
            }
            return self
                .g
                .define_acc(localtype, rop.identity(localtype), loop_ctx);
        }
        if let Some(c) = this_const {
            let cu = self.g.constant(localtype, c);
            if valid.min() == 0 && valid.max() == 1 {
                let v = self.render(valid);
                let zero = self.g.constant(localtype, ConstValue::zero(localtype));
                return self.g.alu(AluOp::Ternary(TernaryOp::Where), &[v, cu, zero]);
            }
            return cu;
        }
        let buf = self.buf_uop(i);
        let idx_u = self.render(idx);
        let mut src = vec![buf, idx_u];
        if valid.min() == 0 {
            let v = self.render(valid);
            let alt = self.g.constant(localtype, ConstValue::zero(localtype));
            src.extend([v, alt]);
        }
        src.extend(barrier);
        self.g.node(UOpKind::Load, Some(localtype), src)
    }

    /// Stores `store` (one value per upcast combination) into buffer `i` at `idxs`.
    pub(super) fn global_store(&mut self, i: usize, idxs: &[Node], store: &[UOpId]) -> Vec<UOpId> {
        let st = self.k.sts[i].clone();
        let buf_dtype = self.k.bufs[i].dtype();
        let expand_vars = expand_idxs(idxs);
        let per_dim: Vec<Vec<Node>> = idxs.iter().map(|x| expand_node(x, &expand_vars)).collect();
        let count = per_dim.first().map_or(1, Vec::len);
        let mut offsets: Vec<(Vec<Node>, UOpId)> = Vec::new();
        for (j, &v) in (0..count).zip(store) {
            let key: Vec<Node> = per_dim.iter().map(|d| d[j].clone()).collect();
            match offsets.iter_mut().find(|(k, _)| *k == key) {
                Some(slot) => slot.1 = v,
                None => offsets.push((key, v)),
            }
        }
        if let Some((d, amt, f4)) = self.float4_dim(i, idxs) {
            let mut grouped: Vec<(Vec<Node>, Vec<UOpId>)> = Vec::new();
            for (k, v) in &offsets {
                let mut k2 = k.clone();
                k2[d] = f4[0].clone();
                match grouped.iter_mut().find(|(g, _)| *g == k2) {
                    Some(slot) => slot.1.push(*v),
                    None => grouped.push((k2, vec![*v])),
                }
            }
            let aligned = grouped.iter().all(|(k, vals)| {
                let (idx, _) = st.expr_idxs(k);
                vals.len() == amt && idx == idx.div_i(amt as i64).mul_i(amt as i64)
            });
            if aligned {
                offsets = grouped
                    .into_iter()
                    .map(|(k, vals)| {
                        let dt = buf_dtype.vec(amt as u8);
                        (k, self.g.node(UOpKind::Cast, Some(dt), vals))
                    })
                    .collect();
            }
        }
        let buf = self.buf_uop(i);
        let mut stores = Vec::new();
        for (k, v) in offsets {
            let (idx, valid) = st.expr_idxs(&k);
            if valid.max() == 0 {
                continue;
            }
            let idx_u = self.render(&idx);
            let mut src = vec![buf, idx_u, v];
            if valid.min() == 0 {
                src.push(self.render(&valid));
            }
            stores.push(self.g.node(UOpKind::Store, None, src));
        }
        stores
    }
}
