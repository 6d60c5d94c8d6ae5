use super::*;
use crate::compile::compile_graph;
use crate::dtype::DType;
use crate::graph::{Graph, Lazy};
use crate::target::{Memory, Target};
use crate::tensor::Tensor;

/// A depthwise-separable stack on a `[1, c, 12, 12]` input: a 3x3 depthwise convolution, a
/// pointwise one to twice the channels, each followed by a ReLU.
fn separable(g: &mut Graph, c: usize) -> Lazy {
    let w = |g: &mut Graph, name: &str, shape: Vec<usize>| {
        let n: usize = shape.iter().product();
        let v: Vec<f32> = (0..n).map(|i| ((i * 7 % 11) as f32 - 5.0) / 8.0).collect();
        g.weight(name, Tensor::from_f32(shape, &v).unwrap())
    };
    let x = g.input("x", DType::F32, &[1, c, 12, 12]);
    let dw = w(g, "dw", vec![c, 1, 3, 3]);
    let pw = w(g, "pw", vec![2 * c, c, 1, 1]);
    let y = g
        .conv(&x, &dw, None, &[1, 1], &[1, 1], &[(1, 1), (1, 1)], c)
        .unwrap();
    let y = g.relu(&y).unwrap();
    let y = g
        .conv(&y, &pw, None, &[1, 1], &[1, 1], &[(0, 0), (0, 0)], 1)
        .unwrap();
    g.relu(&y).unwrap()
}

#[test]
fn overlapping_kernels_take_less_than_the_liveness_bound() {
    let mut g = Graph::new();
    let x = separable(&mut g, 8);
    let y = separable_from(&mut g, &x);
    let compile = |memory| {
        let target = Target::c().with_memory(memory);
        compile_graph(
            "sep",
            &g,
            std::slice::from_ref(&y),
            &target,
            true,
            &mut |_, _| (),
        )
        .unwrap()
    };
    let (speed, min) = (compile(Memory::Speed), compile(Memory::Min));
    let (speed, min) = (&speed.report, &min.report);
    assert_eq!(speed.arena_bytes, speed.arena_lower_bound);
    assert!(
        min.arena_bytes < speed.arena_lower_bound,
        "{} against {}",
        min.arena_bytes,
        speed.arena_lower_bound
    );
    assert!(min.arena_lower_bound <= min.arena_bytes);
}

/// A second stack after the first, on its `2c` channels, with no input of its own.
fn separable_from(g: &mut Graph, x: &Lazy) -> Lazy {
    let c = 16;
    let w = |g: &mut Graph, name: &str, shape: Vec<usize>| {
        let n: usize = shape.iter().product();
        let v: Vec<f32> = (0..n).map(|i| ((i * 5 % 13) as f32 - 6.0) / 8.0).collect();
        g.weight(name, Tensor::from_f32(shape, &v).unwrap())
    };
    let dw = w(g, "dw2", vec![c, 1, 3, 3]);
    let pw = w(g, "pw2", vec![c / 2, c, 1, 1]);
    let y = g
        .conv(x, &dw, None, &[1, 1], &[1, 1], &[(1, 1), (1, 1)], c)
        .unwrap();
    let y = g.relu(&y).unwrap();
    g.conv(&y, &pw, None, &[1, 1], &[1, 1], &[(0, 0), (0, 0)], 1)
        .unwrap()
}

#[test]
fn a_plan_with_shifted_pairs_keeps_every_pair_at_its_shift() {
    let mut g = Graph::new();
    let y = separable(&mut g, 8);
    let target = Target::c();
    let s = crate::schedule::schedule_for(&g, &[y], &target).unwrap();
    let kernels: Vec<Kernel> = (s.items.iter())
        .map(|it| Kernel::new(it.ast.clone(), target.clone()).unwrap())
        .collect();
    let pairs = overlap_pairs(&s, &kernels);
    let dying = dying_inputs(&s);
    assert!(!pairs.is_empty());
    for p in &pairs {
        assert_eq!(p.shift % ALIGN as i64, 0, "{p:?}");
        assert!(p.shift <= 0, "{p:?}");
        assert!(super::super::may_write_over(&dying, p), "{p:?}");
    }
    let plan = plan_arena_min(&s, &[], &pairs);
    assert_eq!(plan.find_overlap(), None);
    for p in &plan.in_place {
        let at = |b| plan.placement(b).unwrap().offset as i64;
        assert_eq!(at(p.out), at(p.src) + p.shift, "{p:?}");
    }
    assert!(plan.arena_bytes < super::super::plan_arena(&s).arena_bytes);
}
