//! The AST → UOps walk, and the final stores.

use super::{cat, zeros_like, Accs, Lin, Loaded};
use crate::kernel::KernelBuffer;
use crate::ops::AluOp;
use crate::schedule::ast::{LazyOp, Op};
use crate::shape::Node;
use crate::uop::{UOpId, UOpKind};
use std::collections::HashMap;

impl Lin {
    pub(super) fn render_stores(
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

    pub(super) fn ast_parse(
        &mut self,
        x: &LazyOp,
        accs: &Accs,
        offs: Option<&[usize]>,
        loaded: &Loaded,
        reduce_acc: Option<&mut Vec<UOpId>>,
        cache: &mut HashMap<*const crate::schedule::ast::LazyNode, Vec<UOpId>>,
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
                self.close_accumulators(&input, acc);
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
}
