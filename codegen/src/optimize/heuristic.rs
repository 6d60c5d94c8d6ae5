//! Hand-coded optimizations for targets without threads (CPUs and microcontrollers), in the
//! spirit of tinygrad's: upcast the output axes along which some input is broadcast (so each
//! loaded value is reused from a register), unroll short reduces, and upcast something when
//! nothing else applies. Every opt goes through [`Kernel::apply_opt`], so an opt that does not
//! apply is simply skipped.

use crate::kernel::{Kernel, Opt, OptOp};

/// The most values one thread computes at once (accumulators live in registers).
const MAX_UPCAST: usize = 16;
/// Reduces up to this long are unrolled completely.
const FULL_UNROLL: usize = 8;

fn upcast_size(k: &Kernel) -> usize {
    let n = k.shape_len();
    k.full_shape()[n - k.upcasted..].iter().product()
}

/// Whether `k`'s reduce runs over more than one axis (a convolution's input channels and its
/// window): each input is then read at several positions of the output.
fn windowed(k: &Kernel) -> bool {
    k.full_shape()[k.first_reduce()..k.shape_len() - k.upcasted]
        .iter()
        .filter(|&&n| n > 1)
        .count()
        > 1
}

/// `k` with the output axis upcast to `lanes` that the reduces compute as vector lanes best
/// (fewest gathers, then the most buffers broadcast along it), its number of gathers and that
/// axis (of `k`).
fn lanes_of(k: &Kernel, lanes: usize) -> Option<(usize, usize, Kernel)> {
    let mut best: Option<((std::cmp::Reverse<usize>, usize), usize, Kernel)> = None;
    for axis in 0..k.first_reduce() {
        if !k.full_shape()[axis].is_multiple_of(lanes) {
            continue;
        }
        let mut v = k.clone();
        if v.apply_opt(Opt::new(OptOp::Upcast, axis, lanes)).is_err() {
            continue;
        }
        let Some(lane_axis) = v.vector_axis() else {
            continue;
        };
        let gathers = v.lane_gathers(lane_axis).unwrap_or(usize::MAX);
        let reuse = k
            .sts
            .iter()
            .filter(|st| st.real_strides(false)[axis] == Some(0))
            .count();
        let score = (std::cmp::Reverse(gathers), reuse);
        if best.as_ref().is_none_or(|b| score > b.0) {
            best = Some((score, axis, v));
        }
    }
    best.map(|((g, _), axis, v)| (g.0, axis, v))
}

/// Whether the fresh kernel `k` multiplies matrices: besides `lane_axis`, an output axis longer
/// than one along which some input is broadcast (a 1×1 convolution's pixels, along which its
/// weights are), so each loaded vector meets several others in registers.
fn matrix_product(k: &Kernel, lane_axis: usize) -> bool {
    (0..k.first_reduce()).any(|axis| {
        axis != lane_axis
            && k.full_shape()[axis] > 1
            && k.sts
                .iter()
                .any(|st| st.real_strides(false)[axis] == Some(0))
    })
}

/// On a target with float vectors, upcasts the output axis that the reduces can compute as
/// vector lanes (see [`Kernel::vector_axis`]). Returns the lane count, or 0 when no axis
/// qualifies. Eight lanes, or sixteen where the vectors hold them and the reduce reads them
/// all without gathers in a windowed reduce or a matrix product: there the wider vectors halve
/// the broadcasts per product, where a plain dot product (a dense layer on one input vector,
/// bound by its weights' bandwidth) gains nothing from them (the BEAM search tries both
/// everywhere).
fn vector_lanes(k: &mut Kernel) -> usize {
    if k.target.simd_lanes < 8 || k.reduceops.is_empty() {
        return 0;
    }
    let wide = (k.target.simd_lanes >= 16)
        .then(|| lanes_of(k, 16))
        .flatten()
        .filter(|&(gathers, axis, _)| gathers == 0 && (windowed(k) || matrix_product(k, axis)));
    if let Some((_, _, v)) = wide {
        *k = v;
        return 16;
    }
    match lanes_of(k, 8) {
        Some((_, _, v)) => {
            *k = v;
            8
        }
        None => 0,
    }
}

/// Whether neighbouring outputs along `axis` read overlapping windows through the innermost
/// reduce axis, short enough to be unrolled, in a reduce over input channels too (a stride-1
/// convolution's columns and its window's columns). A block along `axis` then shares each
/// activation between several accumulators, and with the window unrolled the masks of its
/// padded ends fold to constants, so it needs no border-free interior.
fn slides_along(k: &Kernel, axis: usize) -> bool {
    let last = k.shape_len() - k.upcasted;
    let reduce = &k.full_shape()[k.first_reduce()..last];
    if reduce.iter().filter(|&&n| n > 1).count() < 3 {
        return false;
    }
    let inner = last - 1;
    k.full_shape()[inner] <= FULL_UNROLL
        && k.sts.iter().any(|st| {
            let s = st.real_strides(true);
            s[axis].is_some_and(|x| x != 0) && s[axis] == s[inner]
        })
}

/// The most accumulators of a kernel of packed dot products.
const DOT_MAX_UPCAST: usize = 4;

/// The most accumulators of an integer reduce on a core with packed dot products (a
/// microcontroller's 13 registers also hold the requantization's 64-bit products).
const INT_MAX_UPCAST: usize = 8;

/// Whether `k` sums integers.
fn int_reduce(k: &Kernel) -> bool {
    k.reduceops.iter().any(|r| r.dtype().is_int())
}

/// Whether the innermost reduce axis of the fresh kernel `k` takes packed dot products.
fn packs_dots(k: &Kernel) -> bool {
    let last = k.shape_len() - k.upcasted;
    if !k.target.packed_dot || k.reduceops.is_empty() || last <= k.first_reduce() {
        return false;
    }
    let rel = last - 1 - k.first_reduce();
    (k.target.dot_widths().iter())
        .any(|&w| k.clone().apply_opt(Opt::new(OptOp::Dot, rel, w)).is_ok())
}

/// Two outputs along an axis where each operand of the packed dot products is broadcast: each
/// unpacked word of one operand then meets two of the other's (four accumulators, the most
/// reuse a Cortex-M's registers hold).
fn block_dot_operands(k: &mut Kernel) {
    let Some(operands) = k.dot_operands() else {
        return;
    };
    for b in operands {
        let axis = (0..k.first_reduce()).find(|&a| {
            k.sts[b].real_strides(false)[a] == Some(0) && k.full_shape()[a].is_multiple_of(2)
        });
        if let Some(axis) = axis {
            let _ = k.apply_opt(Opt::new(OptOp::Upcast, axis, 2));
        }
    }
}

/// With x86's int8 dot products of pairs in vector lanes ([`crate::target::Target::lane_dot`]
/// of 2): two vectors of lanes along the output axis the lanes split, where the operand every
/// lane shares (a convolution's activation) stays the same along it. Each pair of that
/// operand is widened and repeated into a vector once per use (`vpbroadcastw`, `vpmovsxbw`),
/// so a second vector of lanes halves that work; a block of pixels only shares the weights,
/// which are loaded once per vector anyway. (AArch64's `SDOT` repeats a four in one `DUP`:
/// there the block costs more registers than it saves, 11–33% more instructions.) Returns
/// whether it applied.
fn block_shared_groups(k: &mut Kernel) -> bool {
    let Some(lane) = k.vector_axis() else {
        return false;
    };
    let shared: Vec<usize> = (k.earlybufs.iter().flatten().copied())
        .filter(|&b| k.sts[b].real_strides(false)[lane] == Some(0))
        .collect();
    let axis = (0..k.first_reduce()).find(|&a| {
        k.full_shape()[a].is_multiple_of(2)
            && k.full_shape()[a] <= 64
            && !shared.is_empty()
            && shared
                .iter()
                .all(|&b| k.sts[b].real_strides(false)[a] == Some(0))
            && (k.earlybufs.iter().flatten())
                .any(|&b| k.sts[b].real_strides(false)[a].is_some_and(|s| s != 0))
    });
    axis.is_some_and(|a| k.apply_opt(Opt::new(OptOp::Upcast, a, 2)).is_ok())
}

/// Applies the heuristics to `k` (which must be fresh: no opts applied).
pub fn hand_coded_optimizations(k: &mut Kernel) {
    if k.target.has_local {
        return;
    }
    // With float vectors, the lanes come first; an accumulator vector counts as one value.
    // Packed dot products hold two unpacked halves of each operand word in registers beside
    // the accumulators, so fewer of them fit.
    let dots = packs_dots(k);
    if dots {
        block_dot_operands(k);
    }
    let lanes = vector_lanes(k);
    let max_upcast = match lanes {
        0 if dots => DOT_MAX_UPCAST,
        0 if k.target.packed_dot && int_reduce(k) => INT_MAX_UPCAST,
        0 => MAX_UPCAST,
        lanes => lanes * MAX_UPCAST / 2,
    };
    let shared_block =
        lanes > 0 && k.target.lane_dot == 2 && int_reduce(k) && block_shared_groups(k);
    // Upcast broadcast axes: the buffers with stride 0 there are loaded once per upcast group.
    // With vector lanes and a windowed reduce (a convolution's input channels and kernel
    // window), two more axes: a block of accumulator vectors over two output axes.
    let most_axes = if lanes > 0 && windowed(k) { 3 } else { 2 } + shared_block as usize;
    while upcast_size(k) < max_upcast && k.upcasted < most_axes {
        // (axis, (reuse, a fresh axis, amount)). With a block over two output axes beside the
        // lanes, a second axis before the same one again: a 2×4 block of pixels reads 4×6
        // activations per input channel and tap row, a 1×8 one 3×10.
        let mut best: Option<(usize, (usize, bool, usize))> = None;
        // The padded axes, worked out only when a block of 7 needs them (rarely: few axes
        // divide by 7).
        let padded = std::cell::OnceCell::new();
        let is_padded = |axis: usize| {
            padded
                .get_or_init(|| {
                    k.interior_splits()
                        .iter()
                        .map(|s| s.axis)
                        .collect::<Vec<_>>()
                })
                .contains(&axis)
        };
        let blocked = |axis: usize| {
            k.applied_opts
                .iter()
                .any(|o| o.op == OptOp::Upcast && o.axis == Some(axis))
        };
        for axis in 0..k.first_reduce() {
            let reuse = k
                .sts
                .iter()
                .filter(|st| st.real_strides(false)[axis] == Some(0))
                .count();
            if reuse == 0 {
                continue;
            }
            // 5 before 3: audio models have axes of 25 and 125. 7 (the 7·2ⁿ-pixel images of
            // an ImageNet network) first where, with vector lanes, the window slides along the
            // axis (a row of seven outputs reads nine columns per tap row, shared between
            // them); else only where nothing else divides and the axis is not padded: there a
            // block of a whole 7-pixel row leaves INTERIOR no border-free block.
            let slides = lanes > 0 && slides_along(k, axis);
            let amts = if slides {
                [7, 4, 5, 3, 2]
            } else {
                [4, 5, 3, 2, 7]
            };
            for amt in amts {
                if k.full_shape()[axis].is_multiple_of(amt) && upcast_size(k) * amt <= max_upcast {
                    if amt == 7 && !slides && is_padded(axis) {
                        break;
                    }
                    let score = (reuse, most_axes == 3 && !blocked(axis), amt);
                    if best.is_none_or(|b| score > b.1) {
                        best = Some((axis, score));
                    }
                    break;
                }
            }
        }
        match best {
            Some((axis, (_, _, amt)))
                if k.apply_opt(Opt::new(OptOp::Upcast, axis, amt)).is_ok() => {}
            _ => break,
        }
    }
    // Unroll the innermost reduce axis: by the widest packed dot product the target has that
    // divides it, where the int8 operands are contiguous along it; else fully when short,
    // else by 4.
    let last = k.shape_len() - k.upcasted;
    if !k.reduceops.is_empty() && last > k.first_reduce() {
        let axis = last - 1;
        let size = k.full_shape()[axis];
        let rel = axis - k.first_reduce();
        let packed = (k.target.dot_widths().iter()).find(|&&w| {
            size.is_multiple_of(w) && k.apply_opt(Opt::new(OptOp::Dot, rel, w)).is_ok()
        });
        if let Some(&width) = packed {
            // The rest of a short axis is unrolled too: up to two dot products of four (32
            // products), four of sixteen (64: Helium's loads then overlap its sums); groups in
            // vector lanes as far as the plain sums would be (a short axis whole, else by 2
            // groups, 4 or 8 products).
            let rest = k.full_shape()[axis];
            let lanes = k.target.lane_dot > 0;
            let most = match width {
                16 => 4,
                _ if lanes => FULL_UNROLL / width,
                _ => FULL_UNROLL / 4,
            };
            let more = k.shape_len() - k.upcasted > axis && rest > 1;
            if more && rest <= most {
                let _ = k.apply_opt(Opt::new(OptOp::Unroll, rel, 0));
            } else if more && lanes && rest.is_multiple_of(2) {
                let _ = k.apply_opt(Opt::new(OptOp::Unroll, rel, 2));
            }
        } else if size <= FULL_UNROLL && upcast_size(k) * size <= 4 * max_upcast {
            let _ = k.apply_opt(Opt::new(OptOp::Unroll, rel, 0));
        } else if size.is_multiple_of(4) && upcast_size(k) * 4 <= 4 * max_upcast {
            let _ = k.apply_opt(Opt::new(OptOp::Unroll, rel, 4));
        }
    }
    // Elementwise kernels: four outputs per iteration of the innermost loop.
    if k.upcasted == 0 && k.first_reduce() > 0 {
        let axis = k.first_reduce() - 1;
        if k.full_shape()[axis].is_multiple_of(4) {
            let _ = k.apply_opt(Opt::new(OptOp::Upcast, axis, 4));
        }
    }
    // Masked reads (a padded convolution's): the loops run a border-free interior apart.
    let _ = k.apply_opt(Opt::interior());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::Target;

    /// out[i] = sum_j a[i, j] * b[j] for an `n`×8 matrix `a`.
    fn matvec(n: usize) -> Kernel {
        crate::kernel::examples::matvec(n, 8, Target::c())
    }

    fn upcasts(n: usize) -> Vec<usize> {
        upcasts_of(matvec(n))
            .into_iter()
            .map(|(_, amt)| amt)
            .collect()
    }

    /// A host whose vectors hold 16 floats (AVX-512), whatever this machine has.
    fn sixteen_lanes() -> Target {
        Target {
            simd_lanes: 16,
            ..Target::host()
        }
    }

    /// `k` after the heuristics, its weights (AST buffer `weight`, of `numel` elements) its to
    /// lay out: its vector lane count and how many output axes it upcasts.
    fn lanes_and_axes(mut k: Kernel, weight: u32, numel: usize) -> (usize, usize) {
        use crate::kernel::KernelBuffer;
        k.free_layout = (0..k.bufs.len())
            .filter(|&b| matches!(&k.bufs[b], KernelBuffer::Mem(m) if m.idx.0 == weight))
            .map(|b| (b, numel))
            .collect();
        hand_coded_optimizations(&mut k);
        let lanes = k.vector_axis().map_or(0, |a| k.full_shape()[a]);
        let upcasts = k
            .applied_opts
            .iter()
            .filter(|o| o.op == OptOp::Upcast)
            .count();
        (lanes, upcasts)
    }

    #[test]
    fn a_windowed_reduce_takes_sixteen_lanes_and_blocks_two_more_axes() {
        let wide = sixteen_lanes();
        // A 3×3 convolution of 16 → 32 channels: its output channels are the lanes.
        let conv = crate::kernel::examples::conv2d(16, 32, [8, 8], 3, 1, wide.clone());
        let (lanes, axes) = lanes_and_axes(conv, 2, 32 * 16 * 9);
        assert_eq!(lanes, 16);
        assert_eq!(axes, 3, "the lanes and two output axes");
        // A matrix-vector product (one reduce axis): eight lanes, one more axis at most.
        let (lanes, axes) = lanes_and_axes(matvec_on(32, wide), 1, 32 * 64);
        assert_eq!(lanes, 8);
        assert_eq!(axes, 2, "the lanes and one output axis");
        // Where the vectors hold eight, eight.
        let narrow = crate::kernel::examples::conv2d(16, 32, [8, 8], 3, 1, Target::host());
        if Target::host().simd_lanes == 8 {
            assert_eq!(lanes_and_axes(narrow, 2, 32 * 16 * 9).0, 8);
        }
    }

    #[test]
    fn a_matrix_product_takes_sixteen_lanes_and_a_dense_layer_eight() {
        let wide = sixteen_lanes();
        // A 1×1 convolution of 32 → 64 channels over 8×8 pixels: its weights are broadcast
        // along the pixels, so each weight vector meets several activations in registers.
        let pointwise = crate::kernel::examples::conv2d(32, 64, [8, 8], 1, 0, wide.clone());
        assert_eq!(lanes_and_axes(pointwise, 2, 64 * 32).0, 16);
        // One input vector: nothing but the lanes is reused.
        assert_eq!(lanes_and_axes(matvec_on(64, wide), 1, 64 * 64).0, 8);
    }

    /// The upcasts the heuristics apply to `k`, as (axis, amount).
    fn upcasts_of(mut k: Kernel) -> Vec<(Option<usize>, usize)> {
        hand_coded_optimizations(&mut k);
        k.applied_opts
            .iter()
            .filter(|o| o.op == OptOp::Upcast)
            .map(|o| (o.axis, o.amt))
            .collect()
    }

    #[test]
    fn seven_pixels_are_blocked_only_where_no_padding_needs_the_interior() {
        // A 1×1 convolution over 49 pixels (7×7, as one axis): blocks of seven.
        let pointwise = crate::kernel::examples::conv2d(8, 8, [49, 1], 1, 0, Target::c());
        assert!(upcasts_of(pointwise).iter().any(|&(_, amt)| amt == 7));
        // A padded 3×3 convolution of a 7×7 image: no block of a whole row or column.
        let padded = crate::kernel::examples::conv2d(8, 8, [7, 7], 3, 1, Target::c());
        assert!(upcasts_of(padded).iter().all(|&(_, amt)| amt != 7));
    }

    #[test]
    fn a_windowed_reduce_blocks_pixels_along_two_axes() {
        let host = sixteen_lanes();
        // A 3×3 convolution of a 32×32 image, 16 → 16 channels: the lanes along the output
        // channels, then a block of rows × columns, not a longer run of one of them.
        let mut conv = crate::kernel::examples::conv2d(16, 16, [32, 32], 3, 1, host);
        conv.free_layout = vec![(2, 16 * 16 * 9)];
        let ups = upcasts_of(conv);
        assert_eq!(ups.len(), 3, "{ups:?}");
        assert!(ups[1].0 != ups[2].0, "two pixel axes: {ups:?}");
        // Without vectors (a microcontroller's C) the heuristics are as they were.
        let board = crate::kernel::examples::conv2d(16, 16, [32, 32], 3, 1, Target::c());
        assert_eq!(upcasts_of(board), vec![(Some(0), 4), (Some(0), 4)]);
    }

    #[test]
    fn a_row_of_seven_where_the_window_slides_along_it() {
        let host = sixteen_lanes();
        let sevens = |cin: usize, target: Target| {
            let mut conv = crate::kernel::examples::conv2d(cin, 16, [14, 14], 3, 1, target);
            conv.free_layout = vec![(2, 16 * cin * 9)];
            upcasts_of(conv)
                .iter()
                .filter(|&&(_, amt)| amt == 7)
                .count()
        };
        // A padded 3×3 convolution of a 14×14 image: seven columns share nine per tap row.
        assert_eq!(sevens(16, host.clone()), 1);
        // One input channel: the reduce is the window alone, no row of seven.
        assert_eq!(sevens(1, host), 0);
        // Without vectors, as before.
        assert_eq!(sevens(16, Target::c()), 0);
    }

    /// With x86's int8 dot products of pairs in lanes, the operand the lanes share (a dense
    /// layer's input) meets two vectors of lanes: the output axis the lanes split is upcast by
    /// 2 right after them, before the blocks the other upcasts make. Without lane dot products,
    /// or with NEON's fours, it is not.
    #[test]
    fn int8_lane_dots_take_two_vectors_of_lanes_where_one_operand_is_shared() {
        let shared_block = |target: Target| {
            let mut k = crate::kernel::examples::matvec_i8(64, 24, target);
            k.free_layout = vec![(1, 64 * 24)];
            let ups = upcasts_of(k);
            ups.len() >= 2 && ups[0].1 == 8 && ups[1] == (ups[0].0, 2)
        };
        assert!(shared_block(Target::host()));
        assert!(
            !shared_block(Target::neon()),
            "SDOT repeats a four in one DUP"
        );
        let pairs_alone = Target {
            lane_dot: 0,
            ..Target::host()
        };
        assert!(!shared_block(pairs_alone));
    }

    fn matvec_on(n: usize, target: Target) -> Kernel {
        crate::kernel::examples::matvec(n, 64, target)
    }

    #[test]
    fn broadcast_axes_are_upcast_by_a_divisor_of_their_size() {
        assert_eq!(upcasts(16), vec![4, 4]);
        assert_eq!(upcasts(25), vec![5]);
        assert_eq!(upcasts(9), vec![3, 3]);
    }
}
