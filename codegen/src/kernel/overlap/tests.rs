use super::*;
use crate::kernel::examples::{conv2d, matvec};
use crate::kernel::{Opt, OptOp};
use crate::target::Target;

/// The shift [`Kernel::overlap_shift`] defines, worked out element by element: every block
/// in row-major order (no INTERIOR), every element each view reads or the store writes.
fn exact_shift(k: &Kernel, src: ArgId) -> i64 {
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
    let mut shift = i64::MAX;
    let mut later_read = i64::MAX;
    for b in (0..blocks).rev() {
        let g = coords(b, &full[..fr]);
        let (mut read, mut write) = (i64::MAX, None::<i64>);
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
                if m.idx == src {
                    read = read.min(i as i64 * size);
                } else if std::ptr::eq(st, &k.sts[0]) {
                    let end = (i as i64 + 1) * size;
                    write = Some(write.map_or(end, |w| w.max(end)));
                }
            }
        }
        later_read = later_read.min(read);
        if let (Some(w), true) = (write, later_read < i64::MAX) {
            shift = shift.min(later_read - w);
        }
    }
    shift
}

#[test]
fn a_dense_layer_may_write_each_sum_over_the_rows_it_has_read() {
    let k = matvec(6, 5, Target::c());
    // Row i is read before sum i is written; sum 0 must not land on row 0's first element.
    assert_eq!(k.overlap_shift(ArgId(1)), Some(-4));
    assert_eq!(exact_shift(&k, ArgId(1)), -4);
    // Every sum reads the whole vector: the output must end where the vector starts.
    assert_eq!(k.overlap_shift(ArgId(2)), Some(-6 * 4));
}

#[test]
fn upcast_sums_write_their_block_after_reading_it() {
    let mut k = matvec(8, 4, Target::c());
    k.apply_opt(Opt::new(OptOp::Upcast, 0, 4)).unwrap();
    // Block j reads rows 4j..4j+4 and writes sums 4j..4j+4.
    let shift = k.overlap_shift(ArgId(1)).unwrap();
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
        let shift = k.overlap_shift(ArgId(1)).unwrap();
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
    let shift = k.overlap_shift(ArgId(2)).unwrap();
    assert_eq!(shift, exact_shift(&k, ArgId(2)));
    assert_eq!(shift, -64);
}

#[test]
fn a_kernel_with_threads_offers_no_shift() {
    let k = matvec(6, 5, Target::threaded(vec![64], vec![16]));
    assert_eq!(k.overlap_shift(ArgId(1)), None);
}
