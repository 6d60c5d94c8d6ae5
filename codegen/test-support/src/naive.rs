//! A naive reference evaluator: walks the AST per output element, reading inputs through the
//! explicit index tables (not through ShapeTrackers), in f64 / i64 arithmetic. Each value
//! comes with a magnitude (the sum of the absolute values that went into it), which scales the
//! tolerance of float comparisons.

use super::gen::Case;
use super::views::{ravel, unravel};
use kiln_codegen::ops::{AluOp, BinaryOp, ReduceOp, TernaryOp, UnaryOp};
use kiln_codegen::schedule::ast::{LazyOp, Op};

#[derive(Clone, Copy, Debug)]
pub struct Val {
    pub v: f64,
    pub mag: f64,
}

fn val(v: f64) -> Val {
    Val { v, mag: v.abs() }
}

/// The expected output of `case`, with magnitudes.
pub fn evaluate(case: &Case) -> Vec<Val> {
    let n: usize = case.out_shape.iter().product();
    let int = case.dtype.is_int();
    (0..n)
        .map(|k| {
            eval(
                case,
                &case.ast[0].src()[0],
                &unravel(k, &case.out_shape),
                int,
            )
        })
        .collect()
}

fn eval(case: &Case, x: &LazyOp, idx: &[usize], int: bool) -> Val {
    match x.op() {
        Op::Load(m) => {
            let input = case
                .inputs
                .iter()
                .find(|i| i.id == m.idx.0)
                .expect("known input");
            let t = &input.table;
            let at: Vec<usize> = idx
                .iter()
                .zip(&t.shape)
                .map(|(&i, &s)| if s == 1 { 0 } else { i })
                .collect();
            val(t.idx[ravel(&at, &t.shape)].map_or(0.0, |b| input.data[b]))
        }
        Op::Const(c) => val(c.val.as_f64()),
        Op::Reduce(op, axes) => {
            let shape = x.src()[0].shape();
            let sizes: Vec<usize> = axes.iter().map(|&a| shape[a]).collect();
            let total: usize = sizes.iter().product();
            let mut acc: Option<Val> = None;
            for k in 0..total {
                let mut i = idx.to_vec();
                for (&a, r) in axes.iter().zip(unravel(k, &sizes)) {
                    i[a] = r;
                }
                let v = eval(case, &x.src()[0], &i, int);
                acc = Some(match (acc, op) {
                    (None, _) => v,
                    (Some(a), ReduceOp::Sum) => Val {
                        v: a.v + v.v,
                        mag: a.mag + v.mag,
                    },
                    (Some(a), ReduceOp::Max) => Val {
                        v: if a.v < v.v { v.v } else { a.v },
                        mag: a.mag.max(v.mag),
                    },
                });
            }
            acc.unwrap_or(val(0.0))
        }
        Op::Alu(op) => {
            let s: Vec<Val> = x.src().iter().map(|s| eval(case, s, idx, int)).collect();
            alu(*op, &s, int)
        }
        Op::Cast(_) | Op::Bitcast(_) | Op::Store(_) => panic!("not generated: {:?}", x.op()),
    }
}

fn alu(op: AluOp, s: &[Val], int: bool) -> Val {
    let (a, b) = (s[0], s.get(1).copied().unwrap_or(val(0.0)));
    match op {
        AluOp::Binary(BinaryOp::Add) => Val {
            v: a.v + b.v,
            mag: a.mag + b.mag,
        },
        AluOp::Binary(BinaryOp::Sub) => Val {
            v: a.v - b.v,
            mag: a.mag + b.mag,
        },
        AluOp::Binary(BinaryOp::Mul) => Val {
            v: a.v * b.v,
            mag: a.mag * b.mag,
        },
        AluOp::Binary(BinaryOp::Max) => Val {
            v: if a.v < b.v { b.v } else { a.v },
            mag: a.mag.max(b.mag),
        },
        AluOp::Binary(BinaryOp::CmpLt) => val((a.v < b.v) as i32 as f64),
        AluOp::Unary(UnaryOp::Neg) => Val {
            v: -a.v,
            mag: a.mag,
        },
        AluOp::Unary(UnaryOp::Sin) if !int => Val {
            v: a.v.sin(),
            mag: a.mag + 1.0,
        },
        AluOp::Unary(UnaryOp::Exp2) if !int => Val {
            v: a.v.exp2(),
            mag: a.v.exp2() * (1.0 + a.mag),
        },
        AluOp::Unary(UnaryOp::Sqrt) if !int => Val {
            v: a.v.sqrt(),
            mag: a.mag.sqrt() + 1.0,
        },
        AluOp::Ternary(TernaryOp::Where) => {
            let c = s[2];
            if a.v != 0.0 {
                b
            } else {
                c
            }
        }
        _ => panic!("not generated: {op}"),
    }
}

/// Whether `got` matches `want` within 1e-5 relative to the value's magnitude (exact for ints).
pub fn close(got: f64, want: Val, int: bool) -> bool {
    if int {
        return got == want.v;
    }
    (got - want.v).abs() <= 1e-5 * want.mag.max(1.0)
}
