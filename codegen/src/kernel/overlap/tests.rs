use super::*;
use crate::kernel::examples::{conv2d, matvec};
use crate::kernel::{Opt, OptOp};
use crate::target::Target;

/// The shifts [`Kernel::overlap_shift`] defines, worked out element by element: every block
/// in row-major order (no INTERIOR), every element each view reads or the store writes.
fn exact_overlap(k: &Kernel, src: ArgId) -> Overlap {
    let fr = k.first_reduce();
    let full = k.full_shape().to_vec();
    let inner: usize = full[fr..].iter().product();
    let blocks: usize = full[..fr].iter().product();
    let coords = |mut n: usize, dims: &[usize]| -> Vec<usize> {
        let mut c = vec![0; dims.len()];
        for (a, &d) in dims.iter().enumerate().rev() {
            c[a] = n % d;
            n /= d;
        }
        c
    };
    let (mut below, mut above) = (i64::MAX, i64::MIN);
    let (mut later_start, mut later_end) = (i64::MAX, i64::MIN);
    for b in (0..blocks).rev() {
        let g = coords(b, &full[..fr]);
        let (mut read, mut write) = ((i64::MAX, i64::MIN), None::<(i64, i64)>);
        for e in 0..inner {
            let mut at = g.clone();
            at.extend(coords(e, &full[fr..]));
            for (buf, st) in k.bufs.iter().zip(&k.sts) {
                let KernelBuffer::Mem(m) = buf else { continue };
                let size = m.dtype.scalar().size() as i64;
                let local: Vec<usize> = (at.iter().zip(st.shape()))
                    .map(|(&i, &n)| i.min(n - 1))
                    .collect();
                let Some(i) = st.index_of(&local) else {
                    continue;
                };
                let bytes = (i as i64 * size, (i as i64 + 1) * size);
                if m.idx == src {
                    read = (read.0.min(bytes.0), read.1.max(bytes.1));
                } else if std::ptr::eq(st, &k.sts[0]) {
                    write = Some(write.map_or(bytes, |w| (w.0.min(bytes.0), w.1.max(bytes.1))));
                }
            }
        }
        (later_start, later_end) = (later_start.min(read.0), later_end.max(read.1));
        if let (Some(w), true) = (write, later_start < i64::MAX) {
            below = below.min(later_start - w.1);
            above = above.max(later_end - w.0);
        }
    }
    Overlap { below, above }
}

fn exact_shift(k: &Kernel, src: ArgId) -> i64 {
    exact_overlap(k, src).below
}

/// `found` allows no shift that [`exact_overlap`] does not, and misses at most `loose` bytes
/// on either side: a masked view's index range may reach past the bytes it reads.
fn assert_safe(found: Overlap, k: &Kernel, src: ArgId, loose: i64) {
    let exact = exact_overlap(k, src);
    assert!(
        (exact.below - loose..=exact.below).contains(&found.below)
            && (exact.above..=exact.above + loose).contains(&found.above),
        "{found:?} against {exact:?}"
    );
}

/// The outputs of convolution kernel `k` (`[1, cin, h, w]` in, `cout` channels out) in the
/// UOp interpreter, on fixed inputs.
fn run_conv(k: &Kernel, cin: usize, cout: usize, hw: usize, taps: usize) -> Vec<f64> {
    use crate::dtype::{DType, Scalar};
    use crate::ops::ConstValue;
    use crate::uop::interp::{run, HostBuffer};
    use std::collections::HashMap;
    let floats = |n: usize, seed: usize| HostBuffer {
        dtype: Scalar::F32,
        data: (0..n)
            .map(|i| ConstValue::from_f64(DType::F32, ((i * seed % 17) as f64 - 8.0) / 4.0))
            .collect(),
    };
    let p = crate::render::to_program(k).unwrap();
    let mut bufs = HashMap::new();
    bufs.insert(
        crate::uop::ArgId(0),
        HostBuffer::zeros(Scalar::F32, cout * hw * hw),
    );
    bufs.insert(crate::uop::ArgId(1), floats(cin * hw * hw, 7));
    bufs.insert(crate::uop::ArgId(2), floats(cout * cin * taps, 5));
    run(&p.uops, &mut bufs, &HashMap::new()).unwrap();
    bufs[&crate::uop::ArgId(0)]
        .data
        .iter()
        .map(|v| v.as_f64())
        .collect()
}

#[test]
fn a_widening_convolution_run_backwards_leads_its_reads_by_little() {
    // One channel in, four out: the output is four times the input.
    let mut k = conv2d(1, 4, [6, 6], 3, 1, Target::c());
    k.apply_opt(Opt::new(OptOp::Upcast, 2, 2)).unwrap();
    let (input, output) = (6 * 6 * 4, 4 * 6 * 6 * 4);
    let ahead = k.overlap_shift(ArgId(1)).unwrap();
    let back = k.backwards().unwrap();
    let behind = back.overlap_shift(ArgId(1)).unwrap();
    // A row of the image is 24 bytes.
    assert_safe(ahead, &k, ArgId(1), 2 * 24);
    assert_safe(behind, &back, ArgId(1), 2 * 24);
    // Forwards, channel 0's sums read the whole image: the output must end before it. Run
    // backwards, channel 3 is written first, past the image, and each channel after it lands
    // on bytes already read: the two need a few rows more than the output.
    assert!(ahead.below <= input - output, "{ahead:?}");
    assert!((0..=8 * 24).contains(&behind.above), "{behind:?}");
    // The same sums, each computed in the same order.
    assert_eq!(run_conv(&k, 1, 4, 6, 9), run_conv(&back, 1, 4, 6, 9));
}

#[test]
fn interior_boxes_write_across_the_output_early_and_one_nest_does_not() {
    let mut k = conv2d(2, 2, [8, 8], 3, 1, Target::c());
    k.apply_opt(Opt::interior()).unwrap();
    let boxes = k.overlap_shift(ArgId(1)).unwrap();
    let nest = k.in_one_nest().unwrap();
    assert!(!nest.interior && nest.in_one_nest().is_none());
    let one = nest.overlap_shift(ArgId(1)).unwrap();
    // A row of one channel is 32 bytes.
    assert_safe(one, &nest, ArgId(1), 2 * 32);
    // In boxes, column 0 of every row is written before the rows are read.
    assert!(boxes.below < one.below, "{boxes:?} against {one:?}");
    assert_eq!(run_conv(&k, 2, 2, 8, 18), run_conv(&nest, 2, 2, 8, 18));
}

#[test]
fn a_dense_layer_may_write_each_sum_over_the_rows_it_has_read() {
    let k = matvec(6, 5, Target::c());
    // Row i is read before sum i is written; sum 0 must not land on row 0's first element.
    assert_eq!(k.overlap_shift(ArgId(1)).map(|o| o.below), Some(-4));
    assert_eq!(exact_shift(&k, ArgId(1)), -4);
    // Every sum reads the whole vector: the output must end where the vector starts.
    assert_eq!(k.overlap_shift(ArgId(2)).map(|o| o.below), Some(-6 * 4));
}

#[test]
fn upcast_sums_write_their_block_after_reading_it() {
    let mut k = matvec(8, 4, Target::c());
    k.apply_opt(Opt::new(OptOp::Upcast, 0, 4)).unwrap();
    // Block j reads rows 4j..4j+4 and writes sums 4j..4j+4.
    let shift = k.overlap_shift(ArgId(1)).unwrap().below;
    assert_eq!(shift, exact_shift(&k, ArgId(1)));
    assert_eq!(shift, -16);
}

#[test]
fn a_padded_convolution_is_bounded_by_its_exact_shift() {
    for opts in [vec![], vec![Opt::new(OptOp::Upcast, 1, 2)]] {
        let mut k = conv2d(1, 1, [6, 6], 3, 1, Target::c());
        for o in opts {
            k.apply_opt(o).unwrap();
        }
        let shift = k.overlap_shift(ArgId(1)).unwrap().below;
        // Output row r reads input rows r-1..=r+1: it may trail the reads by a row and a
        // block of columns, and the bounds of a masked view add at most a row to that.
        let exact = exact_shift(&k, ArgId(1));
        assert!((-(6 + 3) * 4..=-(6 + 2) * 4).contains(&exact), "{exact}");
        assert!((exact - 6 * 4..=exact).contains(&shift), "{shift}");
    }
}

#[test]
fn a_weight_read_per_output_channel_follows_the_channels() {
    // Output channel c reads weights 18c..18c+18 (two input channels, 3x3): its 16 sums may
    // land on the weights the channels before it read.
    let k = conv2d(2, 3, [4, 4], 3, 1, Target::c());
    let shift = k.overlap_shift(ArgId(2)).unwrap().below;
    assert_eq!(shift, exact_shift(&k, ArgId(2)));
    assert_eq!(shift, -64);
}

#[test]
fn a_kernel_with_threads_offers_no_shift() {
    let k = matvec(6, 5, Target::threaded(vec![64], vec![16]));
    assert_eq!(k.overlap_shift(ArgId(1)), None);
}
