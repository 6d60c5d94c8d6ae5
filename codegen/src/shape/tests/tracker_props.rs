//! Random sequences of legal movement ops, checked against the naive model after every op.

use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};

use super::naive::{check, Naive, Op};
use crate::shape::ShapeTracker;

/// SplitMix64: each op is drawn from its own seed, which proptest can shrink.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n`.
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// A number in `lo..=hi`.
    fn within(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }
}

/// A shape of up to four axes with `size` elements (a 0 somewhere when `size` is 0).
fn factor(size: usize, rng: &mut Rng) -> Vec<usize> {
    let rank = if size == 1 {
        rng.below(5)
    } else {
        1 + rng.below(4)
    };
    if size == 0 {
        let mut shape: Vec<usize> = (0..rank).map(|_| rng.within(1, 3)).collect();
        shape[rng.below(rank)] = 0;
        return shape;
    }
    let mut rest = size;
    let mut shape = Vec::with_capacity(rank);
    for _ in 1..rank {
        let divisors: Vec<usize> = (1..=rest).filter(|d| rest.is_multiple_of(*d)).collect();
        let d = divisors[rng.below(divisors.len())];
        shape.push(d);
        rest /= d;
    }
    if rank > 0 {
        shape.insert(rng.below(rank), rest);
    }
    shape
}

/// `f(rng, size)` for each axis.
fn per_axis<T>(shape: &[usize], rng: &mut Rng, mut f: impl FnMut(&mut Rng, usize) -> T) -> Vec<T> {
    shape.iter().map(|&s| f(rng, s)).collect()
}

/// A legal op (or two) of `kind` for `shape`.
fn draw(kind: u8, seed: u64, shape: &[usize]) -> Vec<Op> {
    let mut rng = Rng(seed);
    let size: usize = shape.iter().product();
    let grows = matches!(kind, 3 | 4);
    let kind = if grows && size > 256 { 5 } else { kind };
    match kind {
        0 | 1 => vec![Op::Reshape(factor(size, &mut rng))],
        2 => {
            let mut axes: Vec<usize> = (0..shape.len()).collect();
            for i in (1..axes.len()).rev() {
                axes.swap(i, rng.below(i + 1));
            }
            vec![Op::Permute(axes)]
        }
        3 => {
            let mut ones = shape.to_vec();
            if ones.len() < 4 {
                ones.insert(rng.below(ones.len() + 1), 1);
            }
            let target = ones
                .iter()
                .map(|&s| if s == 1 { rng.within(1, 3) } else { s })
                .collect();
            vec![Op::Reshape(ones), Op::Expand(target)]
        }
        4 => vec![Op::Pad(per_axis(shape, &mut rng, |r, _| {
            (r.within(0, 2), r.within(0, 2))
        }))],
        5 => vec![Op::Shrink(per_axis(shape, &mut rng, |r, s| {
            let begin = r.within(0, s.saturating_sub(1));
            let end = if s == 0 || r.below(10) == 0 {
                begin
            } else {
                r.within(begin + 1, s)
            };
            (begin, end)
        }))],
        6 => vec![Op::Stride(per_axis(shape, &mut rng, |r, _| {
            [-3, -2, -1, 1, 2, 3][r.below(6)]
        }))],
        _ => vec![Op::Flip(per_axis(shape, &mut rng, |r, _| r.below(2) == 1))],
    }
}

fn shapes() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(prop_oneof![12 => 1usize..=4, 1 => Just(0usize)], 0..=4)
}

fn config() -> Config {
    Config {
        cases: 3000,
        rng_seed: RngSeed::Fixed(0x7368_6170),
        failure_persistence: None,
        ..Config::default()
    }
}

proptest! {
    #![proptest_config(config())]

    /// After every op: the tracker, its simplified form, and a tracker that stacked a view for
    /// every reshape (and that stack simplified) all read what the naive model reads.
    #[test]
    fn movement_ops_match_the_naive_model(
        shape in shapes(),
        draws in prop::collection::vec((0u8..8, any::<u64>()), 0..=6),
    ) {
        let mut st = ShapeTracker::from_shape(&shape);
        let mut stacked = st.clone();
        let mut naive = Naive::new(&shape);
        let mut ops = Vec::new();
        for (kind, seed) in draws {
            for op in draw(kind, seed, &naive.shape) {
                st = op.apply(&st).unwrap_or_else(|e| panic!("{op:?} on {st:?}: {e}"));
                stacked = op.apply_stacked(&stacked);
                naive = naive.apply(&op);
                ops.push(op);
                check(&st, &naive, &ops);
                check(&st.simplify(), &naive, &ops);
                check(&stacked, &naive, &ops);
                let merged = stacked.simplify();
                check(&merged, &naive, &ops);
                prop_assert!(merged.views.len() <= stacked.views.len());
            }
        }
    }
}
