use super::*;
use crate::dtype::DType;
use crate::schedule::{BufferInfo, ScheduleItem};
use proptest::prelude::*;

fn schedule(sizes: &[usize], uses: &[Vec<usize>]) -> Schedule {
    let buffers = sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| BufferInfo {
            kind: if i == 0 {
                BufKind::Input(0)
            } else {
                BufKind::Intermediate
            },
            dtype: DType::F32,
            shape: vec![n],
        })
        .collect();
    let items = uses
        .iter()
        .map(|u| ScheduleItem {
            ast: vec![],
            bufs: u.iter().map(|&b| BufId(b as u32)).collect(),
        })
        .collect();
    Schedule {
        loops: vec![],
        items,
        buffers,
        inputs: vec![BufId(0)],
        outputs: vec![],
        states: vec![],
        weights: vec![],
        channels_last: Default::default(),
    }
}

#[test]
fn a_chain_reuses_memory() {
    // 0 -> 1 -> 2 -> 3: at most two buffers alive at once.
    let s = schedule(&[100, 100, 100, 100], &[vec![1, 0], vec![2, 1], vec![3, 2]]);
    let p = plan_arena(&s);
    assert_eq!(p.arena_bytes, 2 * align(400));
    assert_eq!(p.lower_bound, p.arena_bytes);
    assert_eq!(p.find_overlap(), None);
}

#[test]
fn buffers_that_alternate_between_two_places_reach_the_bound() {
    // A depthwise-separable chain: pad (wider), depthwise, pointwise, pad, ... Each buffer
    // sits beside a different one in each step; no fixed first-fit order packs them, the
    // search over orders does.
    let (x, pad) = (2000, 3024);
    let mut sizes = vec![x];
    let mut uses = Vec::new();
    for _ in 0..4 {
        for n in [pad, x, x] {
            sizes.push(n);
            uses.push(vec![sizes.len() - 1, sizes.len() - 2]);
        }
    }
    let p = plan_arena(&schedule(&sizes, &uses));
    assert_eq!(p.lower_bound, align(4 * x) + align(4 * pad));
    assert_eq!(p.arena_bytes, p.lower_bound);
    assert_eq!(p.find_overlap(), None);
}

mod in_place {
    use super::*;
    use crate::ops::{AluOp, BinaryOp};
    use crate::schedule::ast::LazyOp;
    use crate::shape::ShapeTracker;

    fn buffer(kind: BufKind) -> BufferInfo {
        BufferInfo {
            kind,
            dtype: DType::F32,
            shape: vec![4, 4],
        }
    }

    /// `bufs[0] = load(bufs[1], view a) + load(bufs[2], view b)`.
    fn add(bufs: [u32; 3], a: ShapeTracker, b: ShapeTracker) -> ScheduleItem {
        let st = ShapeTracker::from_shape(&[4, 4]);
        let sum = LazyOp::alu(
            AluOp::Binary(BinaryOp::Add),
            vec![
                LazyOp::load(1, DType::F32, a),
                LazyOp::load(2, DType::F32, b),
            ],
        );
        ScheduleItem {
            ast: vec![LazyOp::store(0, st, sum)],
            bufs: bufs.iter().map(|&b| BufId(b)).collect(),
        }
    }

    fn plain() -> ShapeTracker {
        ShapeTracker::from_shape(&[4, 4])
    }

    /// in → t1 = in + in → t2 = t1 + in → out = t2 + in; `second` is step 1's view of t1.
    fn chain(second: ShapeTracker) -> Schedule {
        Schedule {
            loops: vec![],
            items: vec![
                add([1, 0, 0], plain(), plain()),
                add([2, 1, 0], second, plain()),
                add([3, 2, 0], plain(), plain()),
            ],
            buffers: vec![
                buffer(BufKind::Input(0)),
                buffer(BufKind::Intermediate),
                buffer(BufKind::Intermediate),
                buffer(BufKind::Output(0)),
            ],
            inputs: vec![BufId(0)],
            outputs: vec![BufId(3)],
            states: vec![],
            weights: vec![],
            channels_last: Default::default(),
        }
    }

    #[test]
    fn an_elementwise_read_of_a_dying_buffer_runs_in_place() {
        let s = chain(plain());
        let pairs = in_place_pairs(&s);
        // The model input is never written over; t1 and t2 die where they are read.
        assert_eq!(
            pairs,
            vec![
                InPlace {
                    step: 1,
                    until: 1,
                    out: BufId(2),
                    src: BufId(1),
                    shift: 0,
                    slack: Slack::Exact,
                },
                InPlace {
                    step: 2,
                    until: 2,
                    out: BufId(3),
                    src: BufId(2),
                    shift: 0,
                    slack: Slack::Exact,
                },
            ]
        );
        let shared = plan_arena_with(&s, &pairs);
        let apart = plan_arena(&s);
        assert_eq!(shared.find_overlap(), None);
        assert_eq!(shared.arena_bytes, 2 * 64);
        assert_eq!(shared.lower_bound, 2 * 64);
        assert_eq!(apart.arena_bytes, 3 * 64);
        let at = |b: u32| shared.placement(BufId(b)).unwrap().offset;
        assert_eq!((at(1), at(2)), (at(2), at(3)));
        assert_ne!(at(0), at(1));
    }

    #[test]
    fn a_read_at_another_index_is_not_in_place() {
        let transposed = plain().permute(&[1, 0]).unwrap();
        let s = chain(transposed);
        let pairs = in_place_pairs(&s);
        assert!(pairs.iter().all(|p| p.step != 1), "{pairs:?}");
    }

    #[test]
    fn a_store_in_another_layout_runs_in_place_when_the_read_has_it_too() {
        // Step 1 stores t2 transposed (as a channels-last buffer is) and reads t1 the same way.
        let transposed = plain().permute(&[1, 0]).unwrap();
        let mut s = chain(transposed.clone());
        let sum = LazyOp::alu(
            AluOp::Binary(BinaryOp::Add),
            vec![
                LazyOp::load(1, DType::F32, transposed.clone()),
                LazyOp::load(2, DType::F32, plain()),
            ],
        );
        s.items[1].ast = vec![LazyOp::store(0, transposed, sum)];
        let pairs = in_place_pairs(&s);
        assert!(
            pairs.iter().any(|p| p.step == 1 && p.src == BufId(1)),
            "{pairs:?}"
        );
    }

    #[test]
    fn a_buffer_read_later_is_not_written_over() {
        let mut s = chain(plain());
        // Step 2 now reads t1 as well, so step 1 may not write over it.
        s.items[2] = add([3, 2, 1], plain(), plain());
        let pairs = in_place_pairs(&s);
        assert!(pairs.iter().all(|p| p.src != BufId(1)), "{pairs:?}");
    }

    #[test]
    fn the_bundle_refuses_an_in_place_pair_the_schedule_does_not_allow() {
        use crate::kernel::Kernel;
        use crate::render::to_program;
        use crate::target::Target;
        let s = chain(plain());
        let programs: Vec<_> = s
            .items
            .iter()
            .map(|it| to_program(&Kernel::new(it.ast.clone(), Target::c()).unwrap()).unwrap())
            .collect();
        let legal = plan_arena_with(&s, &in_place_pairs(&s));
        assert!(crate::bundle::build("chain", &s, &[], &programs, &legal, "c").is_ok());
        // Step 0 writing t1 over the model input: not legal, whatever the placements say.
        let mut forged = legal.clone();
        forged.in_place.push(InPlace {
            step: 0,
            until: 0,
            out: BufId(1),
            src: BufId(0),
            shift: 0,
            slack: Slack::Exact,
        });
        let err = crate::bundle::build("chain", &s, &[], &programs, &forged, "c").unwrap_err();
        assert!(
            err.to_string()
                .contains("may not write buffer 1 over buffer 0"),
            "{err}"
        );
    }

    #[test]
    fn the_overlap_check_allows_exactly_the_in_place_pairs() {
        let at = |buf: u32, first: usize, last: usize| Placement {
            buf: BufId(buf),
            offset: 0,
            bytes: 64,
            first,
            last,
        };
        let mut plan = ArenaPlan {
            placements: vec![at(1, 0, 1), at(2, 1, 2)],
            arena_bytes: 64,
            lower_bound: 64,
            peak_step: 0,
            in_place: vec![],
            state_bytes: 0,
        };
        assert_eq!(plan.find_overlap(), Some((BufId(1), BufId(2))));
        plan.in_place = vec![InPlace {
            step: 1,
            until: 1,
            out: BufId(2),
            src: BufId(1),
            shift: 0,
            slack: Slack::Exact,
        }];
        assert_eq!(plan.find_overlap(), None);
        // Alive together for two steps: not an in-place share.
        plan.placements[0].last = 2;
        assert_eq!(plan.find_overlap(), Some((BufId(1), BufId(2))));
        plan.placements[0].last = 1;
        plan.placements[1].offset = 16;
        assert_eq!(plan.find_overlap(), Some((BufId(1), BufId(2))));
    }
}

proptest! {
    #[test]
    fn live_buffers_never_overlap(sizes in prop::collection::vec(1usize..500, 2..12), seed in any::<u64>()) {
        let n = sizes.len();
        let mut x = seed;
        let mut uses = Vec::new();
        for out in 1..n {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let a = (x >> 33) as usize % out;
            let b = (x >> 17) as usize % out;
            uses.push(vec![out, a, b]);
        }
        let s = schedule(&sizes, &uses);
        let p = plan_arena(&s);
        prop_assert_eq!(p.find_overlap(), None);
        let q = plan_arena_with(&s, &in_place_pairs(&s));
        prop_assert_eq!(q.find_overlap(), None);
        prop_assert!(q.arena_bytes >= q.lower_bound);
        prop_assert!(p.arena_bytes >= p.lower_bound);
        let total: usize = p.placements.iter().map(|q| q.bytes).sum();
        prop_assert!(p.arena_bytes <= total);
    }
}

#[test]
fn what_a_loop_carries_lives_through_it_and_its_body_reuses_memory() {
    // Items: 0 computes buffer 1 from the input; 1..4 loop: 1 and 2 are a body chain
    // (window 5 over buffer 1, the state 4 and the input → 2 → 3), 3 copies 3 into the
    // state; 4 reads the state after.
    let mut s = schedule(
        &[8, 32, 8, 8, 8, 8, 8],
        &[
            vec![1, 0],
            vec![2, 5, 4, 0],
            vec![3, 2],
            vec![4, 3],
            vec![6, 4],
        ],
    );
    s.buffers[5].kind = BufKind::Window {
        of: BufId(1),
        start: 0,
        step: 8,
    };
    s.loops = vec![crate::schedule::ScheduleLoop {
        items: 1..4,
        count: 4,
    }];
    let plan = plan_arena(&s);
    assert!(plan.find_overlap().is_none());
    let span = |b: u32| {
        let p = plan.placement(BufId(b)).unwrap();
        (p.first, p.last)
    };
    // The windowed buffer, the invariant input and the state live through the whole loop; the
    // window has no place.
    assert_eq!(span(1), (0, 3));
    assert_eq!(span(0), (0, 3));
    assert_eq!(span(4), (1, 4));
    assert!(plan.placement(BufId(5)).is_none());
    // Buffers 2 and 3 live within one iteration.
    assert_eq!(span(2), (1, 2));
    assert_eq!(span(3), (2, 3));
    // A model input that only the loop reads (at its first item) lives through it too.
    s.items[0].bufs = vec![1, 6].into_iter().map(BufId).collect();
    s.items[4].bufs = vec![6, 4].into_iter().map(BufId).collect();
    let plan = plan_arena(&s);
    assert_eq!(
        plan.placement(BufId(0)).map(|p| (p.first, p.last)),
        Some((0, 3))
    );
}
