//! Memory layouts of the buffers between kernels.
//!
//! The graph is channel-first, as ONNX is: an image `[N, C, H, W]` is stored a plane per
//! channel. On a target with float vectors the kernels compute eight or sixteen channels per
//! vector, so channel-first costs a gather per lane wherever a depthwise convolution reads its
//! input, and a scalar store per lane wherever a convolution writes its output. There, each
//! image-like intermediate buffer (one channel axis followed by spatial axes) is stored
//! channels-last instead: its layout is a view over its shape whose strides put the channels
//! innermost, and every load and store of it in every kernel is composed with that view. What
//! the kernels compute is unchanged, so only speed depends on the choice; the model's inputs
//! and outputs, the weights and the buffers a loop moves windows over keep their layout.

use super::Schedule;
use crate::shape::{ShapeTracker, View};
use crate::target::Target;

/// The fewest channels worth moving innermost: one vector's worth of the narrowest lanes.
const MIN_CHANNELS: usize = 8;

/// The channels-last layout of a buffer of `shape`: its axes of size 1 dropped, an image is
/// a channel axis of at least 8 (one vector's worth) followed by two or more spatial axes of more
/// than one element, or by one where the channel axis is the second of four or more (an
/// `[N, C, L, 1]` buffer: a 1-D convolution's, exported as a 2-D one). `None` for any other
/// shape.
pub fn channels_last(shape: &[usize]) -> Option<ShapeTracker> {
    let axes: Vec<usize> = (0..shape.len()).filter(|&a| shape[a] > 1).collect();
    let (&channel, spatial) = axes.split_first()?;
    // An `[N, C, H, W, …]` image with one spatial axis left (a 1-D convolution exported as a
    // 2-D one, as audio models are) is an image too.
    let image = spatial.len() >= 2 || (shape.len() >= 4 && channel == 1 && !spatial.is_empty());
    if !image || shape[channel] < MIN_CHANNELS {
        return None;
    }
    let mut strides = vec![0i64; shape.len()];
    strides[channel] = 1;
    let mut step = shape[channel] as i64;
    for &a in spatial.iter().rev() {
        strides[a] = step;
        step *= shape[a] as i64;
    }
    Some(ShapeTracker {
        views: vec![View::new(shape, Some(&strides), 0, None)],
    })
}

/// `st`, which reads a buffer of `shape` stored in the graph's order, reading it stored as
/// `layout` (a view of `shape`, see [`channels_last`]) instead. The view that reads memory is
/// rewritten in place where every step it takes moves along one axis of `shape` without
/// carrying into the next: one view still, with the same mask. Otherwise
/// the layout goes below it as a view of its own.
pub fn relaid(layout: &ShapeTracker, shape: &[usize], st: &ShapeTracker) -> ShapeTracker {
    let [l] = layout.views.as_slice() else {
        return layout.compose(st);
    };
    match st
        .views
        .first()
        .and_then(|v| onto_layout(v, shape, &l.strides))
    {
        Some(v) => {
            let mut views = st.views.clone();
            views[0] = v;
            ShapeTracker { views }
        }
        None => layout.compose(st),
    }
}

/// View `v` of a buffer of `shape` in row-major order, rewritten for the same buffer stored
/// with `layout` strides: each axis of `v` must step along one axis of `shape` (its stride a
/// multiple of that axis' row-major stride), and over the elements the mask keeps no
/// coordinate may leave its axis. `None` where that does not hold.
fn onto_layout(v: &View, shape: &[usize], layout: &[i64]) -> Option<View> {
    let rowmajor = crate::shape::strides_for_shape(shape);
    let numel: usize = shape.iter().product();
    let (lo, hi): (Vec<usize>, Vec<usize>) = match &v.mask {
        Some(m) => m.iter().copied().unzip(),
        None => (vec![0; v.shape.len()], v.shape.clone()),
    };
    if lo.iter().zip(&hi).any(|(l, h)| l >= h) {
        // Nothing is read.
        return Some(v.clone());
    }
    let first = v.offset
        + lo.iter()
            .zip(&v.strides)
            .map(|(&l, &s)| l as i64 * s)
            .sum::<i64>();
    if first < 0 || first as usize >= numel {
        return None;
    }
    // The first element read, as coordinates of `shape`; then how far each coordinate moves.
    let mut coord = vec![0i64; shape.len()];
    let mut rest = first;
    for d in 0..shape.len() {
        if rowmajor[d] > 0 {
            coord[d] = rest / rowmajor[d];
            rest %= rowmajor[d];
        }
    }
    let (mut least, mut most) = (coord.clone(), coord.clone());
    let mut strides = vec![0i64; v.shape.len()];
    for i in 0..v.shape.len() {
        let s = v.strides[i];
        if s == 0 || hi[i] - lo[i] == 1 {
            continue;
        }
        // The slowest axis of `shape` that the stride steps along whole.
        let d = (0..shape.len()).find(|&d| {
            rowmajor[d] > 0
                && s % rowmajor[d] == 0
                && (s / rowmajor[d]).unsigned_abs() < shape[d] as u64
        })?;
        let k = s / rowmajor[d];
        let reach = (hi[i] - 1 - lo[i]) as i64 * k;
        least[d] += reach.min(0);
        most[d] += reach.max(0);
        strides[i] = layout[d] * k;
    }
    if (0..shape.len()).any(|d| least[d] < 0 || most[d] >= shape[d] as i64) {
        return None;
    }
    let at_first: i64 = (0..shape.len()).map(|d| layout[d] * coord[d]).sum();
    let offset = at_first
        - lo.iter()
            .zip(&strides)
            .map(|(&l, &s)| l as i64 * s)
            .sum::<i64>();
    Some(View::new(&v.shape, Some(&strides), offset, v.mask.clone()))
}

/// Chooses the layout of each intermediate buffer of `s` for `target`: channels-last for the
/// images (see [`channels_last`]) where the target has float vectors, the graph's order
/// everywhere else.
pub fn choose_layouts(s: &mut Schedule, target: &Target) {
    if target.simd_lanes == 0 {
        return;
    }
    for b in 0..s.buffers.len() {
        // A buffer stored channels-last already (NHWC) keeps its order.
        if !s.free_storage(b) || s.channels_last.contains(&super::BufId(b as u32)) {
            continue;
        }
        let Some(layout) = channels_last(&s.buffers[b].shape) else {
            continue;
        };
        for item in &mut s.items {
            let Some(k) = item.bufs.iter().position(|x| x.0 as usize == b) else {
                continue;
            };
            let shape = &s.buffers[b].shape;
            let view = |m: &super::ast::MemBuffer| {
                (m.idx.0 as usize == k).then(|| relaid(&layout, shape, &m.st))
            };
            item.ast = item.ast.iter().map(|op| op.map_views(&view)).collect();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::BufKind;
    use crate::shape::Node;

    fn offset(st: &ShapeTracker, at: &[i64]) -> i64 {
        let idxs: Vec<Node> = at.iter().map(|&i| Node::num(i)).collect();
        st.expr_idxs(&idxs).0.as_num().expect("a constant offset")
    }

    #[test]
    fn an_image_stores_its_channels_innermost() {
        let st = channels_last(&[1, 16, 5, 7]).expect("an image");
        // Element (c, h, w) is at (h·7 + w)·16 + c.
        assert_eq!(offset(&st, &[0, 3, 2, 4]), (2 * 7 + 4) * 16 + 3);
        assert_eq!(offset(&st, &[0, 0, 0, 1]), 16);
        // A convolution's node has unit axes around the same three.
        let conv = channels_last(&[1, 1, 16, 5, 7, 1, 1, 1]).expect("an image");
        assert_eq!(
            offset(&conv, &[0, 0, 3, 2, 4, 0, 0, 0]),
            (2 * 7 + 4) * 16 + 3
        );
    }

    #[test]
    fn a_one_dimensional_image_stores_its_channels_innermost() {
        // [N, C, L, 1]: a 1-D convolution's buffer, exported as a 2-D one.
        let st = channels_last(&[1, 16, 24, 1]).expect("an image");
        assert_eq!(offset(&st, &[0, 3, 5, 0]), 5 * 16 + 3);
        // A grouped convolution's node, with its unit axes.
        let dw = channels_last(&[1, 16, 1, 24, 1, 1, 1, 1]).expect("an image");
        assert_eq!(offset(&dw, &[0, 3, 0, 5, 0, 0, 0, 0]), 5 * 16 + 3);
    }

    /// Every element a view reads, by its coordinates: the offset in memory, or `None`
    /// where the view masks it.
    fn read(st: &ShapeTracker) -> Vec<Option<i64>> {
        let shape = st.shape().to_vec();
        let n: usize = shape.iter().product();
        (0..n)
            .map(|mut flat| {
                let mut at = vec![0i64; shape.len()];
                for d in (0..shape.len()).rev() {
                    at[d] = (flat % shape[d]) as i64;
                    flat /= shape[d];
                }
                let idxs: Vec<Node> = at.iter().map(|&i| Node::num(i)).collect();
                let (idx, valid) = st.expr_idxs(&idxs);
                (valid.as_num() == Some(1)).then(|| idx.as_num().expect("an offset"))
            })
            .collect()
    }

    #[test]
    fn a_padded_window_stays_one_view_and_reads_the_same_elements() {
        let shape = [1, 8, 4, 6];
        let layout = channels_last(&shape).unwrap();
        // Padded by one on each side of the image, then every other column from the first.
        let st = ShapeTracker::from_shape(&shape)
            .pad(&[(0, 0), (0, 0), (1, 1), (1, 1)])
            .unwrap()
            .shrink(&[(0, 1), (0, 8), (0, 6), (1, 7)])
            .unwrap();
        let moved = relaid(&layout, &shape, &st);
        assert_eq!(moved.views.len(), st.views.len());
        let stacked = layout.compose(&st);
        assert_eq!(read(&moved), read(&stacked));
        assert!(
            read(&moved).iter().any(Option::is_none),
            "the padding stays masked"
        );
    }

    #[test]
    fn a_flattening_view_keeps_the_layout_below_it() {
        let shape = [1, 8, 4, 6];
        let layout = channels_last(&shape).unwrap();
        let flat = ShapeTracker::from_shape(&shape).reshape(&[1, 192]).unwrap();
        let moved = relaid(&layout, &shape, &flat);
        assert_eq!(moved.views.len(), 2, "one step carries across axes");
        assert_eq!(read(&moved), read(&layout.compose(&flat)));
    }

    /// A convolution of 8 → 16 channels, then a depthwise one, on a 6×6 image, padded by 1.
    fn conv_then_depthwise() -> Schedule {
        use crate::dtype::DType;
        use crate::tensor::Tensor;
        let mut g = crate::graph::Graph::new();
        let x = g.input("x", DType::F32, &[1, 8, 6, 6]);
        let weight = |g: &mut crate::graph::Graph, name, shape: Vec<usize>| {
            let n: usize = shape.iter().product();
            let values: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
            g.weight(name, Tensor::from_f32(shape, &values).unwrap())
        };
        let w1 = weight(&mut g, "w1", vec![16, 8, 3, 3]);
        let w2 = weight(&mut g, "w2", vec![16, 1, 3, 3]);
        let pads = [(1, 1), (1, 1)];
        let y = g.conv(&x, &w1, None, &[1, 1], &[1, 1], &pads, 1).unwrap();
        let z = g.conv(&y, &w2, None, &[1, 1], &[1, 1], &pads, 16).unwrap();
        super::super::create_schedule(&g, &[z]).unwrap()
    }

    #[test]
    fn on_a_target_with_vectors_a_depthwise_input_is_read_channels_last() {
        use crate::kernel::Kernel;
        let lanes = |s: &Schedule, target: &Target| {
            let item = &s.items[1];
            let mut k = Kernel::new(item.ast.clone(), target.clone()).unwrap();
            // The weights are the kernel's to lay out, as the compiler decides.
            k.free_layout = (0..k.bufs.len())
                .filter_map(|i| match &k.bufs[i] {
                    crate::kernel::KernelBuffer::Mem(m) => {
                        let info = &s.buffers[item.bufs[m.idx.0 as usize].0 as usize];
                        matches!(info.kind, BufKind::Weight(_)).then_some((i, info.numel()))
                    }
                    _ => None,
                })
                .collect();
            crate::optimize::heuristic::hand_coded_optimizations(&mut k);
            let axis = k.vector_axis().expect("lanes over the channels");
            k.lane_gathers(axis)
        };
        let host = Target::host();
        let mut s = conv_then_depthwise();
        let plain = s.clone();
        assert_eq!(
            lanes(&plain, &host),
            Some(1),
            "channel-first: the input is gathered"
        );
        choose_layouts(&mut s, &host);
        assert_eq!(lanes(&s, &host), Some(0), "channels-last: one vector load");
        // The model's input and output keep theirs, and so does a target without vectors.
        let store = |s: &Schedule| match s.items[1].ast[0].op() {
            crate::schedule::ast::Op::Store(m) => m.st.clone(),
            _ => unreachable!("a store"),
        };
        assert_eq!(store(&s), store(&plain));
        assert_ne!(
            s.items[1].ast[0], plain.items[1].ast[0],
            "the read of y moved"
        );
        let mut c = conv_then_depthwise();
        choose_layouts(&mut c, &Target::c());
        assert_eq!(c.items[0].ast[0], plain.items[0].ast[0]);
    }

    #[test]
    fn other_shapes_keep_their_layout() {
        assert!(channels_last(&[1, 4, 5, 7]).is_none(), "too few channels");
        assert!(channels_last(&[1, 16, 35]).is_none(), "one spatial axis");
        assert!(
            channels_last(&[16, 35, 1, 1]).is_none(),
            "no batch axis before the channels"
        );
        assert!(channels_last(&[1, 10]).is_none());
        assert!(channels_last(&[]).is_none());
    }

    #[test]
    fn a_tflite_models_nhwc_images_keep_their_order() {
        // kws int8: its activations are NHWC, [1, 25, 5, 64]; moving the 25 rows innermost
        // (as if they were an ONNX image's channels) would put the 64 channels 25 apart.
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/models/mlperf-tiny/tflite/kws_ref_model.tflite"
        );
        let bytes = std::fs::read(path).expect("the kws model");
        let imported = crate::model::import_bytes(&bytes, &Default::default()).unwrap();
        let (g, outputs) = (&imported.graph, &imported.outputs);
        let plain = super::super::create_schedule(g, outputs).unwrap();
        let mut host = plain.clone();
        choose_layouts(&mut host, &Target::host());
        let images: Vec<usize> = (0..plain.buffers.len())
            .filter(|&b| plain.free_storage(b) && channels_last(&plain.buffers[b].shape).is_some())
            .collect();
        assert!(images.len() >= 8, "the activations: {images:?}");
        for &b in &images {
            assert!(plain.channels_last.contains(&super::super::BufId(b as u32)));
        }
        assert_eq!(host.items.len(), plain.items.len());
        for (mine, theirs) in host.items.iter().zip(&plain.items) {
            assert_eq!(mine.ast, theirs.ast, "every view as the graph has it");
        }
        // Unmarked, the same buffers would be laid out again.
        let mut unmarked = plain.clone();
        unmarked.channels_last.clear();
        choose_layouts(&mut unmarked, &Target::host());
        assert!(unmarked
            .items
            .iter()
            .zip(&plain.items)
            .any(|(a, b)| a.ast != b.ast));
    }
}
