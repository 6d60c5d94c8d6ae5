use super::*;
use crate::dtype::DType;
use crate::graph::{Graph, Lazy};
use crate::interpret::run_schedule;
use crate::ops::BinaryOp;
use crate::schedule::schedule_for;
use crate::target::{Memory, Target};
use crate::tensor::Tensor;

/// On a `[1, 8, 12, 12]` input: a pointwise convolution, a padding with 0.5 (a buffer of its
/// own, as an int8 model's padding with its zero point is), a 3x3 depthwise convolution with
/// `stride`, then a pointwise one.
fn block(g: &mut Graph, stride: usize) -> Lazy {
    let c = 8;
    let w = |g: &mut Graph, name: &str, shape: Vec<usize>| {
        let n: usize = shape.iter().product();
        let v: Vec<f32> = (0..n).map(|i| ((i * 7 % 11) as f32 - 5.0) / 8.0).collect();
        g.weight(name, Tensor::from_f32(shape, &v).unwrap())
    };
    let x = g.input("x", DType::F32, &[1, c, 12, 12]);
    let pw0 = w(g, "pw0", vec![c, c, 1, 1]);
    let dw = w(g, "dw", vec![c, 1, 3, 3]);
    let pw1 = w(g, "pw1", vec![c, c, 1, 1]);
    let one = [(0, 0), (0, 0)];
    let y = g.conv(&x, &pw0, None, &[1, 1], &[1, 1], &one, 1).unwrap();
    let p = g
        .pad_value(&y, &[(0, 0), (0, 0), (1, 1), (1, 1)], 0.5)
        .unwrap();
    let y = g
        .conv(&p, &dw, None, &[stride, stride], &[1, 1], &one, c)
        .unwrap();
    g.conv(&y, &pw1, None, &[1, 1], &[1, 1], &one, 1).unwrap()
}

fn schedule(stride: usize) -> Schedule {
    let mut g = Graph::new();
    let y = block(&mut g, stride);
    let target = Target::host().with_memory(Memory::Min);
    schedule_for(&g, std::slice::from_ref(&y), &target).unwrap()
}

fn input() -> Tensor {
    let v: Vec<f32> = (0..8 * 144)
        .map(|i| ((i * 13 % 29) as f32 - 14.0) / 4.0)
        .collect();
    Tensor::from_f32(vec![1, 8, 12, 12], &v).unwrap()
}

#[test]
fn row_tiles_compute_what_the_untiled_kernels_do() {
    for stride in [1, 2] {
        let s = schedule(stride);
        let want = run_schedule(&s, &[input()]).unwrap();
        for (run, band) in [(0..3, 1), (0..3, 2), (0..3, 5), (1..3, 1), (0..2, 3)] {
            for keep in [false, true] {
                let tiled = tile_rows(&s, run.clone(), band, keep).unwrap();
                let got = run_schedule(&tiled, &[input()]).unwrap();
                let form = format!("stride {stride}, run {run:?}, bands of {band}, keep {keep}");
                assert_eq!(got, want, "{form}");
            }
        }
    }
}

#[test]
fn the_bands_clear_of_the_border_run_as_one_loop() {
    // The pointwise convolution, the padding and the depthwise convolution, a row of the
    // last's 12 at a time: the first and last bands read the padded border and run once
    // each, the ten between them as one loop of windows that move a row at each iteration.
    let s = schedule(1);
    let tiled = tile_rows(&s, 0..3, 1, false).unwrap();
    let counts: Vec<(usize, usize)> = (tiled.loops.iter())
        .map(|l| (l.items.len(), l.count))
        .collect();
    assert_eq!(counts, [(3, 1), (3, 10), (3, 1)]);
    assert_eq!(tiled.items.len(), s.items.len() + 6);
    // Between the kernels, buffers of one band: 3 rows of the pointwise output and of the
    // padded image (12 and 14 wide, 8 channels).
    let middle = &tiled.items[3..6];
    let written: Vec<usize> = (middle.iter())
        .map(|item| {
            let b = item.bufs[item.single_store().unwrap().idx.0 as usize];
            tiled.buffers[b.0 as usize].numel()
        })
        .collect();
    assert_eq!(written[..2], [3 * 12 * 8, 3 * 14 * 8]);
    let out = &tiled.buffers[middle[2].bufs[0].0 as usize];
    assert!(
        matches!(out.kind, BufKind::Window { step: 96, .. }),
        "{out:?}"
    );
}

#[test]
fn the_recomputed_halo_is_counted() {
    let s = schedule(1);
    let ops = |k: usize| kernel_ops(&s.items[k]);
    // The depthwise convolution: 9 products per output of 12x12x8.
    assert_eq!(ops(2), 12 * 12 * 8 * 9);
    // A band of one row recomputes 3 rows of the first two kernels for each of the last's:
    // 2 of every 3 are extra, but for the border rows.
    let one = row_tile_extra_ops(&s, 0..3, 1, false).unwrap();
    let (pointwise_row, padded_row) = (ops(0) / 12, ops(1) / 14);
    assert_eq!(one, 22 * pointwise_row + 22 * padded_row);
    assert_eq!(row_tile_extra_ops(&s, 0..3, 12, false), Some(0));
    assert!(row_tile_extra_ops(&s, 0..3, 4, false).unwrap() < one);
}

#[test]
fn row_tiles_refuse_what_they_cannot_tile() {
    let s = schedule(1);
    assert!(tile_rows(&s, 0..1, 1, false).is_none(), "one kernel");
    assert!(tile_rows(&s, 0..9, 1, false).is_none(), "past the end");
    // The last kernel's output is read by nothing in the run: a run cannot go on past it.
    let tiled = tile_rows(&s, 0..3, 1, false).unwrap();
    assert!(
        tile_rows(&tiled, 0..3, 1, false).is_none(),
        "kernels in a loop"
    );
}

#[test]
fn the_runs_output_lands_on_its_input_as_the_rows_die() {
    use crate::plan::{liveness_peak, loop_pair_legal, loop_pairs, plan_arena_min, InPlace};
    // The run's three loops are one chain: its output (the depthwise convolution's, 12 rows
    // of 96 floats) is written a row at each band over the rows of its input (the model's,
    // read whole) that no later band reads.
    let s = schedule(1);
    let tiled = tile_rows(&s, 0..3, 1, false).unwrap();
    let pairs = loop_pairs(&tiled);
    let [p] = pairs.as_slice() else {
        panic!("one pair: {pairs:?}")
    };
    assert_eq!((p.step, p.until), (0, 8));
    assert!(loop_pair_legal(&tiled, p));
    // 16 bytes further ahead lands on elements a later band still reads.
    assert!(!loop_pair_legal(
        &tiled,
        &InPlace {
            shift: p.shift + 16,
            ..*p
        }
    ));
    let plan = plan_arena_min(&tiled, &[], &pairs);
    assert_eq!(plan.find_overlap(), None);
    assert!(plan.in_place.contains(p), "{:?}", plan.in_place);
    let untiled = liveness_peak(&s, &[]).0;
    assert!(plan.arena_bytes < untiled, "{} B", plan.arena_bytes);
}

#[test]
fn a_buffer_read_outside_the_run_ends_it() {
    // The depthwise convolution's output is read by the last kernel: a run of the first two
    // stops short of it, and one that ends at the depthwise convolution is refused if its
    // padding's output were read elsewhere.
    let s = schedule(1);
    assert!(tile_rows(&s, 1..3, 2, false).is_some());
    let mut odd = s.clone();
    let padded = odd.items[1].bufs[0];
    odd.items[3].bufs.push(padded);
    assert!(tile_rows(&odd, 1..3, 2, false).is_none());
    assert!(tile_rows(&odd, 2..4, 2, false).is_some());
}

/// On a `[1, 8, 12, 12]` input: a pointwise convolution `y`, a 3x3 depthwise convolution of
/// `y` (zero-padded), a pointwise one, and `y` added back (a residual block).
fn residual() -> Schedule {
    let c = 8;
    let mut g = Graph::new();
    let w = |g: &mut Graph, name: &str, shape: Vec<usize>| {
        let n: usize = shape.iter().product();
        let v: Vec<f32> = (0..n).map(|i| ((i * 5 % 13) as f32 - 6.0) / 8.0).collect();
        g.weight(name, Tensor::from_f32(shape, &v).unwrap())
    };
    let x = g.input("x", DType::F32, &[1, c, 12, 12]);
    let (pw0, dw, pw1) = (
        w(&mut g, "pw0", vec![c, c, 1, 1]),
        w(&mut g, "dw", vec![c, 1, 3, 3]),
        w(&mut g, "pw1", vec![c, c, 1, 1]),
    );
    let one = [(0, 0), (0, 0)];
    let y = g.conv(&x, &pw0, None, &[1, 1], &[1, 1], &one, 1).unwrap();
    let z = g
        .conv(&y, &dw, None, &[1, 1], &[1, 1], &[(1, 1), (1, 1)], c)
        .unwrap();
    let z = g.conv(&z, &pw1, None, &[1, 1], &[1, 1], &one, 1).unwrap();
    let out = g.binary(BinaryOp::Add, &z, &y).unwrap();
    let target = Target::host().with_memory(Memory::Min);
    schedule_for(&g, &[out], &target).unwrap()
}

#[test]
fn a_residual_blocks_output_lands_on_its_input_a_band_behind_the_addition() {
    use crate::plan::{loop_pair_legal, loop_pairs, InPlace};
    let s = residual();
    let want = run_schedule(&s, &[input()]).unwrap();
    // The block's input is read by its first kernel and by the addition, the run's last.
    let y = s.items[0].bufs[0];
    let last = s.items.len() - 1;
    assert!(s.items[last].bufs.contains(&y), "{:?}", s.items);
    let tiled = tile_rows(&s, 1..s.items.len(), 1, false).unwrap();
    assert_eq!(run_schedule(&tiled, &[input()]).unwrap(), want);
    let pairs = loop_pairs(&tiled);
    let p = pairs
        .iter()
        .find(|p| p.src == y)
        .expect("a pair over the block's input");
    assert!(loop_pair_legal(&tiled, p));
    // The addition reads row r of the input as it writes row r of the output: the output
    // may not land on the rows the addition reads in the same band.
    assert!(p.shift < 0, "{p:?}");
    assert!(!loop_pair_legal(&tiled, &InPlace { shift: 0, ..*p }));
}

#[test]
fn a_run_that_reads_its_own_output_is_refused() {
    // A state read before the run writes it: its first kernel reading the last one's output
    // would see rows the earlier bands already wrote.
    let s = schedule(1);
    let mut odd = s.clone();
    let out = odd.items[2].bufs[0];
    odd.items[0].bufs.push(out);
    assert!(tile_rows(&odd, 0..3, 1, false).is_none());
    assert!(tile_rows(&s, 0..3, 1, false).is_some());
}

#[test]
fn kept_rows_are_computed_once_and_moved_to_the_band_buffers_start() {
    // Bands of one row: each band computes one new row of the pointwise output and of the
    // padded image. The padded image's buffer keeps the two rows the band before also read,
    // moved to its start (two copies of a row: a row apart); the pointwise output's holds
    // the one row the new padded row reads.
    let s = schedule(1);
    assert_eq!(row_tile_extra_ops(&s, 0..3, 1, true), Some(0));
    let tiled = tile_rows(&s, 0..3, 1, true).unwrap();
    let middle = tiled.loops.iter().find(|l| l.count > 1).expect("a loop");
    let copies = (middle.items.clone())
        .filter(|&k| tiled.items[k].ast[0].lazyops().len() == 2)
        .count();
    assert_eq!((middle.items.len(), copies), (3 + 2, 2));
    // The band buffers are the run's, kept from one iteration to the next.
    let plan = crate::plan::plan_arena(&tiled);
    assert_eq!(plan.find_overlap(), None);
    let want = run_schedule(&s, &[input()]).unwrap();
    assert_eq!(run_schedule(&tiled, &[input()]).unwrap(), want);
    // The residual block too.
    let r = residual();
    let want = run_schedule(&r, &[input()]).unwrap();
    let tiled = tile_rows(&r, 1..r.items.len(), 1, true).unwrap();
    assert_eq!(run_schedule(&tiled, &[input()]).unwrap(), want);
}
