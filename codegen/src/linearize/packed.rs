//! Packed int8 words: four int8 values of a buffer read as one 32-bit word (sixteen as one
//! 128-bit vector, with Helium's dot products), on a target with packed dot products; along an
//! upcast reduce axis the products of two such words are one [`UOpKind::Dot`].

use super::{expand, Lin, Loaded};
use crate::dtype::DType;
use crate::shape::{Node, NodeKind};
use crate::uop::{UOpId, UOpKind};

impl Lin {
    /// The reduce's int8 products summed as packed dot products along the upcast reduce
    /// `axis` (see [`Kernel::packed_dot_axis`](crate::kernel::Kernel::packed_dot_axis)): for
    /// each accumulator, each group of the axis's lanes (all of them: 4 or 16) is one
    /// [`UOpKind::Dot`] of a packed load of each operand. `loaded` holds the operands' loads
    /// at `idxs`, one per upcast combination, and `offs` each combination's accumulator. Returns false, with nothing
    /// changed, when some lanes are not one word in memory (the caller then sums them one by
    /// one).
    pub(super) fn packed_dots(
        &mut self,
        axis: usize,
        idxs: &[Node],
        loaded: &Loaded,
        offs: &[usize],
        acc: &mut [UOpId],
    ) -> bool {
        let Some([a, b]) = self.k.dot_operands() else {
            return false;
        };
        let (Some(la), Some(lb)) = (loaded.get(&a), loaded.get(&b)) else {
            return false;
        };
        let n = self.k.shape_len();
        let name = format!("{}{}", expand::UPCAST_PREFIX, axis - (n - self.k.upcasted));
        let vars = expand::expand_idxs(idxs);
        let Some(at) = vars
            .iter()
            .position(|v| matches!(v.kind(), NodeKind::Var { name: m, .. } if **m == *name))
        else {
            return false;
        };
        let combos = expand::iter_idxs(&vars);
        let sizes_ok = [la.len(), lb.len(), offs.len()]
            .iter()
            .all(|&l| l == combos.len());
        let width = self.k.full_shape()[axis];
        if !sizes_ok || vars[at].min() != 0 || vars[at].max() != width as i64 - 1 {
            return false;
        }
        let stride = lane_stride(&vars, at);
        let input = acc.to_vec();
        let mut updated = input.clone();
        for (j, combo) in combos.iter().enumerate() {
            if combo[at] != 0 {
                continue;
            }
            let lanes: Vec<usize> = (0..width).map(|k| j + k * stride).collect();
            let off = offs[j];
            if lanes.iter().any(|&l| offs[l] != off) {
                return false;
            }
            let wide = |b: usize| self.k.operand_dtype(b) == DType::I16;
            let (wide_a, wide_b) = (wide(a), wide(b));
            let (Some(wa), Some(wb)) = (
                self.packed_word(la, &lanes, wide_a),
                self.packed_word(lb, &lanes, wide_b),
            ) else {
                return false;
            };
            updated[off] = self
                .g
                .node(UOpKind::Dot, Some(DType::I32), vec![updated[off], wa, wb]);
        }
        acc.copy_from_slice(&updated);
        self.close_accumulators(&input, acc);
        true
    }

    /// The loads `lanes` of `loads` as one packed load, when they are ungated loads of one
    /// buffer at consecutive indices: int8 lanes, or int16 lanes from a `wide` buffer (a
    /// widened weight or an activation stored as int16).
    fn packed_word(&mut self, loads: &[UOpId], lanes: &[usize], wide: bool) -> Option<UOpId> {
        let first = self.g.get(loads[lanes[0]]).clone();
        let (base, start) = self.g.base_and_offset(*first.src.get(1)?);
        for (k, &lane) in lanes.iter().enumerate() {
            let u = self.g.get(loads[lane]);
            if u.kind != UOpKind::Load || u.src.len() != 2 || u.src[0] != first.src[0] {
                return None;
            }
            if self.g.base_and_offset(u.src[1]) != (base, start + k as i64) {
                return None;
            }
        }
        let lane = match wide {
            true => DType::I16,
            false => DType::I8,
        };
        let width = lanes.len() as u8;
        Some(self.g.node(UOpKind::Load, Some(lane.vec(width)), first.src))
    }
}

/// How far apart two settings of `vars[at]` are in the combinations' numbering (the first
/// variable varies fastest).
fn lane_stride(vars: &[Node], at: usize) -> usize {
    vars[..at]
        .iter()
        .map(|v| (v.max() - v.min() + 1) as usize)
        .product()
}
