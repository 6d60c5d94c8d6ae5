//! Lanes into vectors: accumulators that differ only along the vector axis become one vector
//! accumulator, and the loop body that updates them one vector expression.
//!
//! The linearizer expands an upcast axis into one scalar chain per position; for the vector
//! axis it hands those chains over in groups of lanes. A group is vectorized when its lanes are
//! isomorphic all the way down: the same ALU op in every lane, loads of consecutive elements
//! (one vector load), other loads (gathered into a vector), or one value shared by every lane
//! (a broadcast). Anything else (an op the vector types do not have) leaves the group scalar,
//! as it was. After the
//! loop, each lane's result is read out of the vector.
//!
//! A vector accumulator that adds several terms per iteration adds their tree sum once, so the
//! chain that carries it from one iteration to the next is one add long (the float sum is
//! reassociated within an iteration; each iteration still adds to the accumulator in order).

use super::{UOp, UOpGraph, UOpId, UOpKind};
use crate::dtype::DType;
use crate::ops::{AluOp, BinaryOp, TernaryOp, UnaryOp};
use std::collections::HashMap;

/// Vectorizes each group of accumulator results (`Phi` nodes, or the sums themselves where
/// the reduce is unrolled whole; in lane order) that it can and returns the sinks rewritten
/// to read those lanes out of the vectors.
pub fn vectorize(g: &mut UOpGraph, groups: &[Vec<UOpId>], sinks: &[UOpId]) -> Vec<UOpId> {
    let mut v = Vectorizer {
        g,
        memo: HashMap::new(),
    };
    let mut lanes_of: HashMap<UOpId, UOpId> = HashMap::new();
    for group in groups {
        // Accumulators carried through a reduce loop, or, where the whole reduce is
        // unrolled, the sums themselves.
        let phis = group
            .iter()
            .filter(|&&p| v.kind(p) == &UOpKind::Phi)
            .count();
        if group.len() < 2 || (phis != 0 && phis != group.len()) {
            continue;
        }
        let Some(vector) = v.vector(group) else {
            continue;
        };
        // Lanes only packed into a vector (a gather, a broadcast) stay as they are: reading
        // them out of it again would go round in a circle.
        if v.g.get(vector).src.iter().any(|s| group.contains(s)) {
            continue;
        }
        for (lane, &p) in group.iter().enumerate() {
            let d = v.g.get(p).dtype;
            let gep = v.g.node(UOpKind::Gep(lane as u8), d, vec![vector]);
            lanes_of.insert(p, gep);
        }
    }
    if lanes_of.is_empty() {
        return sinks.to_vec();
    }
    let mut done = HashMap::new();
    let sinks: Vec<UOpId> = sinks
        .iter()
        .map(|&s| rewrite(v.g, s, &lanes_of, &mut done))
        .collect();
    let mut widths: Vec<usize> = groups.iter().map(Vec::len).filter(|&n| n > 1).collect();
    widths.sort_unstable_by(|a, b| b.cmp(a));
    widths.dedup();
    v.vector_stores(&sinks, &widths)
}

/// `id` with every node of `lanes_of` replaced by its lane of a vector.
fn rewrite(
    g: &mut UOpGraph,
    id: UOpId,
    lanes_of: &HashMap<UOpId, UOpId>,
    done: &mut HashMap<UOpId, UOpId>,
) -> UOpId {
    if let Some(&r) = done.get(&id) {
        return r;
    }
    let r = match lanes_of.get(&id) {
        Some(&lane) => rewrite(g, lane, lanes_of, done),
        None => {
            let u = g.get(id).clone();
            let src: Vec<UOpId> = u
                .src
                .iter()
                .map(|&s| rewrite(g, s, lanes_of, done))
                .collect();
            if src == u.src {
                id
            } else {
                g.add(UOp { src, ..u })
            }
        }
    };
    done.insert(id, r);
    r
}

/// A store's buffer and the part of its index that is not a constant offset.
type StoreBase = (UOpId, Option<UOpId>);

struct Vectorizer<'a> {
    g: &'a mut UOpGraph,
    memo: HashMap<Vec<UOpId>, Option<UOpId>>,
}

impl Vectorizer<'_> {
    fn kind(&self, id: UOpId) -> &UOpKind {
        &self.g.get(id).kind
    }

    /// One vector node computing `lanes`, or `None` when they are not isomorphic.
    fn vector(&mut self, lanes: &[UOpId]) -> Option<UOpId> {
        if let Some(&done) = self.memo.get(lanes) {
            return done;
        }
        let v = self.build(lanes);
        self.memo.insert(lanes.to_vec(), v);
        v
    }

    fn build(&mut self, lanes: &[UOpId]) -> Option<UOpId> {
        let n = lanes.len();
        let first = self.g.get(lanes[0]).clone();
        let dtype = first.dtype?;
        if dtype.is_vector() {
            return None;
        }
        let vdt = Some(dtype.vec(n as u8));
        if lanes.iter().all(|&l| l == lanes[0]) {
            // One value for every lane: a broadcast.
            return Some(self.g.node(UOpKind::Cast, vdt, vec![lanes[0]; n]));
        }
        let us: Vec<UOp> = lanes.iter().map(|&l| self.g.get(l).clone()).collect();
        let same_kind = |u: &UOp| match (&u.kind, &first.kind) {
            // Each accumulator has its own id, each lane of a vector its index.
            (UOpKind::DefineAcc { .. }, UOpKind::DefineAcc { .. }) => true,
            (UOpKind::Gep(_), UOpKind::Gep(_)) => true,
            (a, b) => a == b,
        };
        if us
            .iter()
            .any(|u| !same_kind(u) || u.dtype != first.dtype || u.src.len() != first.src.len())
        {
            return None;
        }
        match &first.kind {
            UOpKind::DefineAcc { .. } => {
                // The same initial value and loops in every lane.
                if us.iter().any(|u| u.src != first.src) {
                    return None;
                }
                let init = self.vector(&vec![first.src[0]; n])?;
                Some(
                    self.g
                        .define_acc_node(dtype.vec(n as u8), init, &first.src[1..]),
                )
            }
            UOpKind::Phi => {
                let acc = self.vector(&us.iter().map(|u| u.src[0]).collect::<Vec<_>>())?;
                let new = match self.summands(&us) {
                    // acc + (t0 + t1 + …), the terms summed as a tree: one dependent add
                    // per iteration instead of a chain through every term.
                    Some(terms) => {
                        let mut sums = Vec::with_capacity(terms.len());
                        for t in &terms {
                            sums.push(self.vector(t)?);
                        }
                        while sums.len() > 1 {
                            sums = sums
                                .chunks(2)
                                .map(|p| match p {
                                    [a, b] => self.g.binary(BinaryOp::Add, *a, *b),
                                    _ => p[0],
                                })
                                .collect();
                        }
                        self.g.binary(BinaryOp::Add, acc, sums[0])
                    }
                    None => self.vector(&us.iter().map(|u| u.src[1]).collect::<Vec<_>>())?,
                };
                Some(self.g.node(UOpKind::Phi, vdt, vec![acc, new]))
            }
            // A selection by a comparison of 32-bit lanes: the comparison's lane masks pick
            // each lane (C has no `?:` on vectors; the renderer selects with the masks).
            UOpKind::Alu(AluOp::Ternary(TernaryOp::Where)) => self.selection(&us, vdt),
            UOpKind::Alu(op) if lane_wise(*op, dtype) => {
                let mut src = Vec::with_capacity(first.src.len());
                for k in 0..first.src.len() {
                    src.push(self.vector(&us.iter().map(|u| u.src[k]).collect::<Vec<_>>())?);
                }
                Some(self.g.node(UOpKind::Alu(*op), vdt, src))
            }
            // A numeric conversion of each lane: one of the vector of their sources.
            UOpKind::Cast if first.src.len() == 1 => {
                let from = self.vector(&us.iter().map(|u| u.src[0]).collect::<Vec<_>>())?;
                Some(self.g.node(UOpKind::Cast, vdt, vec![from]))
            }
            UOpKind::Dot => self.lane_dot(&us, vdt),
            UOpKind::Load => self
                .consecutive_load(&us, vdt)
                .or_else(|| Some(self.g.node(UOpKind::Cast, vdt, lanes.to_vec()))),
            UOpKind::Gep(_) => {
                // Every lane of one vector, in order: that vector.
                let whole = first.src[0];
                let in_order = us
                    .iter()
                    .enumerate()
                    .all(|(l, u)| u.kind == UOpKind::Gep(l as u8) && u.src[0] == whole);
                (in_order && self.g.get(whole).dtype == vdt).then_some(whole)
            }
            _ => None,
        }
    }

    /// One vector `Where` for lanes `us` that each select by a `CmpLt` of two 32-bit values:
    /// the comparison is made on the vectors of its operands, for this selection alone.
    fn selection(&mut self, us: &[UOp], vdt: Option<DType>) -> Option<UOpId> {
        let less = UOpKind::Alu(AluOp::Binary(BinaryOp::CmpLt));
        let conds: Vec<UOp> = us.iter().map(|u| self.g.get(u.src[0]).clone()).collect();
        let operand = self.g.get(conds[0].src[0]).dtype?;
        let four = |d: Option<DType>| d.is_some_and(|d| d.scalar.size() == 4);
        if conds.iter().any(|c| c.kind != less) || !four(Some(operand)) || !four(vdt) {
            return None;
        }
        let mut cmp = Vec::with_capacity(2);
        for k in 0..2 {
            cmp.push(self.vector(&conds.iter().map(|c| c.src[k]).collect::<Vec<_>>())?);
        }
        let mask = DType::BOOL.vec(us.len() as u8);
        let cond = self.g.node(less, Some(mask), cmp);
        let mut src = vec![cond];
        for k in 1..3 {
            src.push(self.vector(&us.iter().map(|u| u.src[k]).collect::<Vec<_>>())?);
        }
        Some(
            self.g
                .node(UOpKind::Alu(AluOp::Ternary(TernaryOp::Where)), vdt, src),
        )
    }

    /// One vector [`UOpKind::Dot`] for lanes `us` that each add a dot product of two packed
    /// loads to their accumulator: each operand is one load shared by every lane (the narrow
    /// operand of a vector dot product) or the lanes' loads of consecutive packs (one vector
    /// load of all of them).
    fn lane_dot(&mut self, us: &[UOp], vdt: Option<DType>) -> Option<UOpId> {
        let acc = self.vector(&us.iter().map(|u| u.src[0]).collect::<Vec<_>>())?;
        let shared = |k: usize| us.iter().all(|u| u.src[k] == us[0].src[k]);
        // Two shared operands would be one dot product for every lane: not a vector one.
        if shared(1) && shared(2) {
            return None;
        }
        let mut src = vec![acc];
        for k in 1..3 {
            if shared(k) {
                src.push(us[0].src[k]);
                continue;
            }
            let loads: Vec<UOp> = us.iter().map(|u| self.g.get(u.src[k]).clone()).collect();
            let pack = loads[0].dtype?;
            let plain = |l: &UOp| l.kind == UOpKind::Load && l.src.len() == 2;
            if loads.iter().any(|l| !plain(l) || l.dtype != Some(pack)) {
                return None;
            }
            let whole = pack.vec(pack.count * us.len() as u8);
            src.push(self.consecutive_load(&loads, Some(whole))?);
        }
        Some(self.g.node(UOpKind::Dot, vdt, src))
    }

    /// `sinks` with each run of stores into consecutive elements of one buffer (ungated, of
    /// one scalar type, as many as one of `widths`) whose values are isomorphic lanes (the
    /// results read out of the vector accumulators, with what the kernel does to them after
    /// the reduce) replaced by one vector store. The rest stay as they are.
    fn vector_stores(&mut self, sinks: &[UOpId], widths: &[usize]) -> Vec<UOpId> {
        // Stores by (buffer, base index), with their offsets from it.
        let mut runs: Vec<(StoreBase, Vec<(i64, usize)>)> = Vec::new();
        for (pos, &s) in sinks.iter().enumerate() {
            let u = self.g.get(s);
            let scalar =
                u.src.len() == 3 && self.g.get(u.src[2]).dtype.is_some_and(|d| !d.is_vector());
            if u.kind != UOpKind::Store || !scalar {
                continue;
            }
            let (buf, at) = (u.src[0], u.src[1]);
            let (base, off) = self.g.base_and_offset(at);
            match runs.iter_mut().find(|(k, _)| *k == (buf, base)) {
                Some((_, list)) => list.push((off, pos)),
                None => runs.push(((buf, base), vec![(off, pos)])),
            }
        }
        let mut out: Vec<Option<UOpId>> = sinks.iter().copied().map(Some).collect();
        let mut added = Vec::new();
        for (_, mut list) in runs {
            list.sort_unstable();
            if list.windows(2).any(|w| w[0].0 == w[1].0) {
                // An element stored twice keeps its stores in their order.
                continue;
            }
            let mut i = 0;
            'run: while i < list.len() {
                for &n in widths {
                    let chunk = list.get(i..i + n);
                    let Some(chunk) = chunk.filter(|c| c[n - 1].0 - c[0].0 == n as i64 - 1) else {
                        continue;
                    };
                    let values: Vec<UOpId> = chunk
                        .iter()
                        .map(|&(_, p)| self.g.get(sinks[p]).src[2])
                        .collect();
                    let Some(vector) = self.vector(&values) else {
                        continue;
                    };
                    let first = self.g.get(sinks[chunk[0].1]).clone();
                    let store = self.g.node(
                        UOpKind::Store,
                        None,
                        vec![first.src[0], first.src[1], vector],
                    );
                    for &(_, p) in chunk {
                        out[p] = None;
                    }
                    added.push(store);
                    i += n;
                    continue 'run;
                }
                i += 1;
            }
        }
        out.into_iter().flatten().chain(added).collect()
    }

    /// The terms each lane's accumulator is summed with in one iteration, `acc + t0 + t1 + …`
    /// in order, by term then lane; `None` unless every lane is such a chain of the same length.
    fn summands(&self, phis: &[UOp]) -> Option<Vec<Vec<UOpId>>> {
        let add = UOpKind::Alu(AluOp::Binary(BinaryOp::Add));
        let mut per_lane = Vec::with_capacity(phis.len());
        for phi in phis {
            let (acc, mut x) = (phi.src[0], phi.src[1]);
            let mut terms = Vec::new();
            loop {
                let u = self.g.get(x);
                if u.kind != add {
                    return None;
                }
                terms.push(u.src[1]);
                if u.src[0] == acc {
                    break;
                }
                x = u.src[0];
            }
            terms.reverse();
            per_lane.push(terms);
        }
        let n = per_lane[0].len();
        if n < 2 || per_lane.iter().any(|t| t.len() != n) {
            return None;
        }
        Some(
            (0..n)
                .map(|k| per_lane.iter().map(|t| t[k]).collect())
                .collect(),
        )
    }

    /// One vector load for loads of consecutive elements of one buffer (each lane one element,
    /// or one pack of elements), ungated or all under the same gate.
    fn consecutive_load(&mut self, us: &[UOp], vdt: Option<DType>) -> Option<UOpId> {
        let first = &us[0];
        if first.src.len() != 2 && first.src.len() != 4 {
            return None;
        }
        if us
            .iter()
            .any(|u| u.src[0] != first.src[0] || u.src[2..] != first.src[2..])
        {
            return None;
        }
        let (base, start) = self.g.base_and_offset(first.src[1]);
        let step = first.dtype.map_or(1, |d| d.count as usize);
        for (lane, u) in us.iter().enumerate() {
            let (b, off) = self.g.base_and_offset(u.src[1]);
            if b != base || off != start + (lane * step) as i64 {
                return None;
            }
        }
        let mut src = vec![first.src[0], first.src[1]];
        if first.src.len() == 4 {
            // The gate is shared; the alternative becomes a vector.
            let alt = self.vector(&vec![first.src[3]; us.len()])?;
            src.extend([first.src[2], alt]);
        }
        Some(self.g.node(UOpKind::Load, vdt, src))
    }
}

/// The ALU ops that C's vector types compute lane by lane (with the same operators, or a
/// helper for `Max`), the shifts and bitwise ops on integers only; `Where` is
/// [`Vectorizer::selection`].
fn lane_wise(op: AluOp, dtype: DType) -> bool {
    use BinaryOp::*;
    match op {
        AluOp::Binary(Shl | Shr | And | Or | Xor) => dtype.is_int(),
        AluOp::Binary(Add | Sub | Mul | Div | Max) => true,
        AluOp::Unary(UnaryOp::Neg) | AluOp::Ternary(TernaryOp::MulAcc) => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::ConstValue;
    use crate::uop::ArgId;

    /// Two accumulators over one loop, each folding `buf[i·4 + offset + 8·t]` for `t` below
    /// `terms` in with `op`, for its own offset; and the stores of both results.
    fn lanes(offsets: [i64; 2], op: BinaryOp, terms: i64) -> (UOpGraph, Vec<UOpId>, Vec<UOpId>) {
        let mut g = UOpGraph::new();
        let f = DType::F32;
        let buffer = |g: &mut UOpGraph, id: u32, mutable: bool| {
            let kind = UOpKind::DefineGlobal {
                buf: ArgId(id),
                mutable,
            };
            g.node(kind, Some(f), vec![])
        };
        let (buf, out) = (buffer(&mut g, 1, false), buffer(&mut g, 0, true));
        let (lo, hi) = (g.const_int(0), g.const_int(4));
        let kind = UOpKind::Range {
            depth: 2,
            index: 0,
            reduce: true,
            region: 0,
        };
        let range = g.node(kind, Some(DType::I32), vec![lo, hi]);
        let four = g.const_int(4);
        let base = g.binary(BinaryOp::Mul, range, four);
        let (mut phis, mut stores) = (Vec::new(), Vec::new());
        for (lane, off) in offsets.into_iter().enumerate() {
            let acc = g.define_acc(f, ConstValue::zero(f), &[range]);
            let mut folded = acc;
            for t in 0..terms {
                let c = g.const_int(off + 8 * t);
                let idx = g.binary(BinaryOp::Add, base, c);
                let x = g.node(UOpKind::Load, Some(f), vec![buf, idx]);
                folded = g.binary(op, folded, x);
            }
            let phi = g.node(UOpKind::Phi, Some(f), vec![acc, folded]);
            // Every other element: the stores stay apart.
            let at = g.const_int(2 * lane as i64);
            stores.push(g.node(UOpKind::Store, None, vec![out, at, phi]));
            phis.push(phi);
        }
        (g, phis, stores)
    }

    /// The operand the second store's lane was folded with, as a vector.
    fn folded_operand(g: &UOpGraph, sinks: &[UOpId]) -> UOp {
        let value = g.get(g.get(sinks[1]).src[2]);
        assert_eq!(value.kind, UOpKind::Gep(1));
        let vector = g.get(value.src[0]);
        let f2 = Some(DType::F32.vec(2));
        assert_eq!((&vector.kind, vector.dtype), (&UOpKind::Phi, f2));
        let folded = g.get(vector.src[1]);
        g.get(folded.src[1]).clone()
    }

    #[test]
    fn consecutive_lanes_become_one_vector_load_and_accumulator() {
        let (mut g, phis, stores) = lanes([1, 2], BinaryOp::Add, 1);
        let sinks = vectorize(&mut g, &[phis], &stores);
        let load = folded_operand(&g, &sinks);
        let f2 = Some(DType::F32.vec(2));
        assert_eq!((&load.kind, load.dtype), (&UOpKind::Load, f2));
    }

    #[test]
    fn lanes_of_scattered_elements_are_gathered() {
        let (mut g, phis, stores) = lanes([1, 3], BinaryOp::Add, 1);
        let sinks = vectorize(&mut g, &[phis], &stores);
        let pack = folded_operand(&g, &sinks);
        assert_eq!((&pack.kind, pack.src.len()), (&UOpKind::Cast, 2));
        assert!(pack.src.iter().all(|&s| g.get(s).kind == UOpKind::Load));
    }

    #[test]
    fn an_op_the_vector_types_lack_stays_scalar() {
        let (mut g, phis, stores) = lanes([1, 2], BinaryOp::Mod, 1);
        assert_eq!(vectorize(&mut g, &[phis], &stores), stores);
    }

    #[test]
    fn consecutive_stores_of_the_lanes_after_the_reduce_become_one_vector_store() {
        // out[o + lane] = max(acc_lane + bias[lane], 0) for both lanes: a dense layer's
        // epilogue over its lane accumulators.
        let (mut g, phis, _) = lanes([1, 2], BinaryOp::Add, 1);
        let f = DType::F32;
        let out = g.node(
            UOpKind::DefineGlobal {
                buf: ArgId(0),
                mutable: true,
            },
            Some(f),
            vec![],
        );
        let bias = g.node(
            UOpKind::DefineGlobal {
                buf: ArgId(2),
                mutable: false,
            },
            Some(f),
            vec![],
        );
        let zero = g.constant(f, ConstValue::zero(f));
        let stores: Vec<UOpId> = phis
            .iter()
            .enumerate()
            .map(|(lane, &phi)| {
                let at = g.const_int(lane as i64 + 4);
                let b = g.node(UOpKind::Load, Some(f), vec![bias, at]);
                let sum = g.binary(BinaryOp::Add, phi, b);
                let relu = g.binary(BinaryOp::Max, sum, zero);
                g.node(UOpKind::Store, None, vec![out, at, relu])
            })
            .collect();
        let sinks = vectorize(&mut g, &[phis], &stores);
        let [store] = sinks.as_slice() else {
            panic!("one store: {sinks:?}");
        };
        let value = g.get(g.get(*store).src[2]).clone();
        let f2 = Some(f.vec(2));
        assert_eq!(
            (&value.kind, value.dtype),
            (&UOpKind::Alu(AluOp::Binary(BinaryOp::Max)), f2)
        );
        let sum = g.get(value.src[0]).clone();
        assert_eq!(
            g.get(sum.src[0]).kind,
            UOpKind::Phi,
            "the accumulator vector itself"
        );
        assert_eq!(
            (&g.get(sum.src[1]).kind, g.get(sum.src[1]).dtype),
            (&UOpKind::Load, f2)
        );
        // Stores into elements that are not consecutive stay apart.
        let (mut g, phis, stores) = lanes([1, 2], BinaryOp::Add, 1);
        let sinks = vectorize(&mut g, &[phis], &stores);
        assert_eq!(sinks.len(), 2);
    }

    #[test]
    fn the_terms_of_one_iteration_are_summed_before_the_accumulator() {
        let (mut g, phis, stores) = lanes([1, 2], BinaryOp::Add, 3);
        let sinks = vectorize(&mut g, &[phis], &stores);
        let gep = g.get(g.get(sinks[0]).src[2]);
        let phi = g.get(gep.src[0]);
        let update = g.get(phi.src[1]);
        // acc + ((t0 + t1) + t2): the accumulator is added once, last.
        assert_eq!(update.src[0], phi.src[0]);
        let tree = g.get(update.src[1]);
        let add = UOpKind::Alu(AluOp::Binary(BinaryOp::Add));
        assert_eq!(tree.kind, add);
        assert_eq!(g.get(tree.src[0]).kind, add);
        assert_eq!(g.get(tree.src[1]).kind, UOpKind::Load);
    }

    /// An input buffer (`data1`) and an output buffer (`data0`) of `d`.
    fn in_and_out(g: &mut UOpGraph, d: DType) -> (UOpId, UOpId) {
        let mut global = |id: u32, mutable: bool| {
            let kind = UOpKind::DefineGlobal {
                buf: ArgId(id),
                mutable,
            };
            g.node(kind, Some(d), vec![])
        };
        (global(1, false), global(0, true))
    }

    #[test]
    fn sums_of_a_reduce_unrolled_whole_are_vectorized_too() {
        // No loop: each lane's sum is buf[lane] + buf[lane + 8], stored apart.
        let mut g = UOpGraph::new();
        let f = DType::F32;
        let (buf, out) = in_and_out(&mut g, f);
        let (mut sums, mut stores) = (Vec::new(), Vec::new());
        for lane in 0..2 {
            let load = |g: &mut UOpGraph, at: i64| {
                let idx = g.const_int(at);
                g.node(UOpKind::Load, Some(f), vec![buf, idx])
            };
            let (a, b) = (load(&mut g, lane), load(&mut g, lane + 8));
            let sum = g.binary(BinaryOp::Add, a, b);
            let at = g.const_int(2 * lane);
            stores.push(g.node(UOpKind::Store, None, vec![out, at, sum]));
            sums.push(sum);
        }
        let sinks = vectorize(&mut g, &[sums], &stores);
        let value = g.get(g.get(sinks[1]).src[2]);
        assert_eq!(value.kind, UOpKind::Gep(1));
        let vector = g.get(value.src[0]);
        let add = UOpKind::Alu(AluOp::Binary(BinaryOp::Add));
        assert_eq!((&vector.kind, vector.dtype), (&add, Some(f.vec(2))));
        assert!(vector.src.iter().all(|&s| g.get(s).kind == UOpKind::Load));
        // Lanes that are loads themselves, one element apart: packed into a vector they would
        // be read out of it again; they stay as they are.
        let mut g = UOpGraph::new();
        let (buf, out) = in_and_out(&mut g, f);
        let (mut loads, mut stores) = (Vec::new(), Vec::new());
        for lane in 0..2 {
            let idx = g.const_int(3 * lane);
            let x = g.node(UOpKind::Load, Some(f), vec![buf, idx]);
            let at = g.const_int(2 * lane);
            stores.push(g.node(UOpKind::Store, None, vec![out, at, x]));
            loads.push(x);
        }
        assert_eq!(vectorize(&mut g, &[loads], &stores), stores);
    }

    #[test]
    fn a_clamp_of_lanes_is_one_vector_selection() {
        // min(x_lane, 127) as the requantization clamps: where(127 < x, 127, x), x loaded.
        let mut g = UOpGraph::new();
        let i = DType::I32;
        let (buf, out) = in_and_out(&mut g, i);
        let hi = g.const_int(127);
        let (mut clamps, mut stores) = (Vec::new(), Vec::new());
        for lane in 0..2 {
            let at = g.const_int(lane);
            let x = g.node(UOpKind::Load, Some(i), vec![buf, at]);
            let above = g.node(
                UOpKind::Alu(AluOp::Binary(BinaryOp::CmpLt)),
                Some(DType::BOOL),
                vec![hi, x],
            );
            let where_ = UOpKind::Alu(AluOp::Ternary(TernaryOp::Where));
            let clamp = g.node(where_, Some(i), vec![above, hi, x]);
            stores.push(g.node(UOpKind::Store, None, vec![out, at, clamp]));
            clamps.push(clamp);
        }
        let sinks = vectorize(&mut g, &[clamps], &stores);
        let [store] = sinks.as_slice() else {
            panic!("one vector store: {sinks:?}");
        };
        let select = g.get(g.get(*store).src[2]).clone();
        let where_ = UOpKind::Alu(AluOp::Ternary(TernaryOp::Where));
        assert_eq!((&select.kind, select.dtype), (&where_, Some(i.vec(2))));
        let mask = g.get(select.src[0]);
        assert_eq!(
            mask.dtype,
            Some(DType::BOOL.vec(2)),
            "the comparison's lane masks"
        );
        assert_eq!(g.get(select.src[2]).kind, UOpKind::Load, "one vector load");
    }

    /// Each of two lanes adds the dot product of one int8 pair, shared, and its own pair of
    /// weights at `weights[lane]` to 0, and stores it; the lanes' sums and stores.
    fn pair_dots(weights: [i64; 2]) -> (UOpGraph, Vec<UOpId>, Vec<UOpId>) {
        let mut g = UOpGraph::new();
        let (buf, out) = in_and_out(&mut g, DType::I8);
        let pair = DType::I8.vec(2);
        let zero = g.const_int(0);
        let shared = g.node(UOpKind::Load, Some(pair), vec![buf, zero]);
        let (mut dots, mut stores) = (Vec::new(), Vec::new());
        for (lane, at) in weights.into_iter().enumerate() {
            let idx = g.const_int(at);
            let w = g.node(UOpKind::Load, Some(pair), vec![buf, idx]);
            let dot = g.node(UOpKind::Dot, Some(DType::I32), vec![zero, shared, w]);
            let to = g.const_int(lane as i64);
            stores.push(g.node(UOpKind::Store, None, vec![out, to, dot]));
            dots.push(dot);
        }
        (g, dots, stores)
    }

    #[test]
    fn dot_products_of_a_shared_pair_and_consecutive_pairs_are_one_vector_dot() {
        let (mut g, dots, stores) = pair_dots([8, 10]);
        let sinks = vectorize(&mut g, &[dots], &stores);
        let [store] = sinks.as_slice() else {
            panic!("one vector store: {sinks:?}");
        };
        let dot = g.get(g.get(*store).src[2]).clone();
        assert_eq!(
            (&dot.kind, dot.dtype),
            (&UOpKind::Dot, Some(DType::I32.vec(2)))
        );
        let operand = |k: usize| {
            let u = g.get(dot.src[k]);
            (u.kind.clone(), u.dtype)
        };
        let pairs = |n: u8| (UOpKind::Load, Some(DType::I8.vec(n)));
        assert_eq!(operand(1), pairs(2), "the shared pair, as it is");
        assert_eq!(operand(2), pairs(4), "both lanes' pairs, one load");
        // Pairs that are not side by side stay dot products of their own.
        let (mut g, dots, stores) = pair_dots([8, 11]);
        assert_eq!(vectorize(&mut g, &[dots], &stores), stores);
    }
}
