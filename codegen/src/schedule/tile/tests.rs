use super::*;
use crate::dtype::DType;
use crate::graph::{Graph, Lazy};
use crate::interpret::run_schedule;
use crate::schedule::schedule_for;
use crate::target::{Memory, Target};
use crate::tensor::Tensor;

/// On a `[1, c, 10, 10]` input: a padding with 0.5 (a buffer of its own, as an int8 model's
/// padding with its zero point is), a 3x3 depthwise convolution of it, then a pointwise one.
fn padded_depthwise(g: &mut Graph, c: usize) -> Lazy {
    let w = |g: &mut Graph, name: &str, shape: Vec<usize>| {
        let n: usize = shape.iter().product();
        let v: Vec<f32> = (0..n).map(|i| ((i * 7 % 11) as f32 - 5.0) / 8.0).collect();
        g.weight(name, Tensor::from_f32(shape, &v).unwrap())
    };
    let x = g.input("x", DType::F32, &[1, c, 10, 10]);
    let dw = w(g, "dw", vec![c, 1, 3, 3]);
    let pw = w(g, "pw", vec![c, c, 1, 1]);
    let p = g
        .pad_value(&x, &[(0, 0), (0, 0), (1, 1), (1, 1)], 0.5)
        .unwrap();
    let y = g
        .conv(&p, &dw, None, &[1, 1], &[1, 1], &[(0, 0), (0, 0)], c)
        .unwrap();
    g.conv(&y, &pw, None, &[1, 1], &[1, 1], &[(0, 0), (0, 0)], 1)
        .unwrap()
}

/// The schedule of [`padded_depthwise`], and that schedule tiled.
fn schedules(c: usize) -> (Schedule, Schedule) {
    let mut g = Graph::new();
    let y = padded_depthwise(&mut g, c);
    let target = Target::c().with_memory(Memory::Min);
    let s = schedule_for(&g, std::slice::from_ref(&y), &target).unwrap();
    let tiled = tile_channels(&s);
    (s, tiled)
}

#[test]
fn a_padding_and_its_depthwise_convolution_run_as_a_loop_over_channels() {
    let (speed, min) = schedules(6);
    assert!(speed.loops.is_empty());
    assert_eq!(min.items.len(), speed.items.len());
    let [l] = min.loops.as_slice() else {
        panic!("one loop: {:?}", min.loops)
    };
    assert_eq!((l.count, l.items.len()), (6, 2));
    // The padded tensor is one channel's 12x12 plane; the input and the convolution's
    // output are windows that move a 10x10 plane at each iteration.
    let first = &min.items[l.items.start];
    let plane = first.bufs[first.single_store().unwrap().idx.0 as usize];
    assert_eq!(min.buffers[plane.0 as usize].numel(), 144);
    let last = &min.items[l.items.end - 1];
    let out = last.bufs[last.single_store().unwrap().idx.0 as usize];
    assert!(matches!(
        min.buffers[out.0 as usize].kind,
        BufKind::Window { step: 100, .. }
    ));
}

#[test]
fn a_tiled_schedule_computes_what_the_untiled_one_does() {
    let (speed, min) = schedules(5);
    let v: Vec<f32> = (0..500)
        .map(|i| ((i * 13 % 29) as f32 - 14.0) / 4.0)
        .collect();
    let x = Tensor::from_f32(vec![1, 5, 10, 10], &v).unwrap();
    let want = run_schedule(&speed, std::slice::from_ref(&x)).unwrap();
    let got = run_schedule(&min, &[x]).unwrap();
    assert_eq!(got, want);
}

#[test]
fn a_kernel_that_reads_every_channel_is_not_tiled() {
    // The pointwise convolution reads all channels of the depthwise one's output: only the
    // padding and the depthwise convolution form a loop.
    let (_, min) = schedules(4);
    let [l] = min.loops.as_slice() else {
        panic!("one loop: {:?}", min.loops)
    };
    let pointwise = min.items.len() - 1;
    assert!(!l.items.contains(&pointwise), "{l:?}");
}

#[test]
fn the_loops_output_lands_on_its_input_a_channel_at_a_time() {
    use crate::plan::{loop_pair_legal, loop_pairs, plan_arena, plan_arena_min, InPlace};
    let (speed, min) = schedules(4);
    let pairs = loop_pairs(&min);
    let [p] = pairs.as_slice() else {
        panic!("one pair: {pairs:?}")
    };
    // Iteration c writes channel c of the output over channel c of the input, which only
    // that iteration read; a channel behind is legal too, 16 bytes ahead is not (channel
    // c + 1 is read at the next iteration).
    assert_eq!(p.shift, 0);
    assert!(loop_pair_legal(&min, p));
    assert!(loop_pair_legal(&min, &InPlace { shift: -400, ..*p }));
    assert!(!loop_pair_legal(&min, &InPlace { shift: 16, ..*p }));
    let plan = plan_arena_min(&min, &[], &pairs);
    assert_eq!(plan.find_overlap(), None);
    assert!(plan.in_place.contains(p), "{:?}", plan.in_place);
    assert!(plan.arena_bytes < plan_arena(&speed).arena_bytes);
}
