//! Random kernels: random shapes up to rank 4, random views of the inputs, elementwise chains,
//! zero, one or two reduces, and random opts.

use super::rng::Rng;
use super::views::{random_view, Table, ViewSpec};
use kiln_codegen::dtype::DType;
use kiln_codegen::kernel::{Kernel, Opt, OptOp};
use kiln_codegen::ops::{AluOp, BinaryOp, ConstValue, ReduceOp, TernaryOp, UnaryOp};
use kiln_codegen::schedule::ast::LazyOp;
use kiln_codegen::shape::ShapeTracker;

pub struct Input {
    pub id: u32,
    pub view: ViewSpec,
    pub table: Table,
    pub data: Vec<f64>,
}

pub struct Case {
    pub seed: u64,
    pub dtype: DType,
    pub full: Vec<usize>,
    pub out_shape: Vec<usize>,
    pub ast: Vec<LazyOp>,
    pub inputs: Vec<Input>,
}

/// Random pieces of one case's AST: its inputs (each with a random view and data), constants,
/// elementwise chains and reduces.
struct AstGen<'a> {
    rng: &'a mut Rng,
    dtype: DType,
    inputs: Vec<Input>,
}

impl AstGen<'_> {
    fn input(&mut self, shape: &[usize]) -> LazyOp {
        let id = self.inputs.len() as u32 + 1;
        let view = random_view(self.rng, shape, 3);
        let table = view.table();
        let int = self.dtype.is_int();
        let data = (0..view.base_len())
            .map(|_| {
                let u = self.rng.unit();
                if int {
                    (u * 4.0).round()
                } else {
                    u
                }
            })
            .collect();
        let st = view.tracker();
        self.inputs.push(Input {
            id,
            view,
            table,
            data,
        });
        LazyOp::load(id, self.dtype, st)
    }

    fn constant(&mut self, shape: &[usize]) -> LazyOp {
        let v = if self.dtype.is_int() {
            (self.rng.below(7) as f64) - 3.0
        } else {
            self.rng.unit()
        };
        let st = ShapeTracker::from_shape(&vec![1; shape.len()])
            .expand(shape)
            .expect("expand ones");
        LazyOp::constant(ConstValue::from_f64(self.dtype, v), self.dtype, st)
    }

    fn leaves(&mut self, shape: &[usize], n: usize) -> Vec<LazyOp> {
        let mut v: Vec<LazyOp> = (0..n).map(|_| self.input(shape)).collect();
        if self.rng.below(3) == 0 {
            v.push(self.constant(shape));
        }
        v
    }

    fn chain(&mut self, leaves: &[LazyOp], depth: usize) -> LazyOp {
        if depth == 0 || self.rng.below(3) == 0 {
            return self.rng.pick(leaves);
        }
        let a = self.chain(leaves, depth - 1);
        let bin = |op: BinaryOp, a: LazyOp, b: LazyOp| LazyOp::alu(AluOp::Binary(op), vec![a, b]);
        let un = |op: UnaryOp, a: LazyOp| LazyOp::alu(AluOp::Unary(op), vec![a]);
        let choices = if self.dtype.is_int() { 6 } else { 9 };
        match self.rng.below(choices) {
            0 => bin(BinaryOp::Add, a, self.chain(leaves, depth - 1)),
            1 => bin(BinaryOp::Sub, a, self.chain(leaves, depth - 1)),
            2 => bin(BinaryOp::Mul, a, self.chain(leaves, depth - 1)),
            3 => bin(BinaryOp::Max, a, self.chain(leaves, depth - 1)),
            4 => un(UnaryOp::Neg, a),
            5 => {
                let b = self.chain(leaves, depth - 1);
                let c = bin(BinaryOp::CmpLt, a.clone(), b.clone());
                LazyOp::alu(AluOp::Ternary(TernaryOp::Where), vec![c, a, b])
            }
            6 => un(UnaryOp::Sin, a),
            7 => un(UnaryOp::Exp2, un(UnaryOp::Sin, a)),
            _ => un(UnaryOp::Sqrt, bin(BinaryOp::Mul, a.clone(), a)),
        }
    }

    fn reduce(&mut self, axes: &[usize], src: LazyOp) -> LazyOp {
        let op = if self.rng.below(3) == 0 {
            ReduceOp::Max
        } else {
            ReduceOp::Sum
        };
        LazyOp::reduce(op, axes.to_vec(), src)
    }
}

fn random_shape(rng: &mut Rng) -> Vec<usize> {
    loop {
        let rank = 1 + rng.below(4);
        let s: Vec<usize> = (0..rank)
            .map(|_| rng.pick(&[1, 2, 3, 4, 5, 6, 8]))
            .collect();
        if s.iter().product::<usize>() <= 1500 {
            return s;
        }
    }
}

/// One random kernel AST with its inputs.
pub fn random_case(seed: u64) -> Case {
    let mut rng = Rng::new(seed);
    let dtype = if rng.below(5) == 0 {
        DType::I32
    } else {
        DType::F32
    };
    let full = random_shape(&mut rng);
    let pattern = rng.below(20);
    let mut axes: Vec<usize> = (0..full.len()).filter(|_| rng.below(2) == 0).collect();
    if axes.is_empty() {
        axes.push(rng.below(full.len()));
    }
    let mut out_shape = full.clone();
    let mut b = AstGen {
        rng: &mut rng,
        dtype,
        inputs: vec![],
    };
    let value = if pattern < 5 {
        let count = 1 + b.rng.below(2);
        let l = b.leaves(&full, count);
        b.chain(&l, 3)
    } else {
        for &a in &axes {
            out_shape[a] = 1;
        }
        let count = 1 + b.rng.below(2);
        let l = b.leaves(&full, count);
        let src = b.chain(&l, 3);
        let r = b.reduce(&axes, src);
        let r = match pattern {
            5..=12 => r,
            13..=16 => {
                // A reduce of a value that uses another reduce over the same axes.
                let l2 = b.leaves(&full, 1);
                let c = b.chain(&l2, 2);
                let op = b.rng.pick(&[BinaryOp::Sub, BinaryOp::Add, BinaryOp::Mul]);
                let inner = LazyOp::alu(AluOp::Binary(op), vec![c, r]);
                b.reduce(&axes, inner)
            }
            _ => {
                let l2 = b.leaves(&full, 1);
                let c = b.chain(&l2, 2);
                let r2 = b.reduce(&axes, c);
                LazyOp::alu(AluOp::Binary(BinaryOp::Add), vec![r, r2])
            }
        };
        if b.rng.below(2) == 0 {
            let late = b.leaves(&out_shape, 1);
            let mut l = late;
            l.push(r.clone());
            let post = b.chain(&l, 2);
            LazyOp::alu(AluOp::Binary(BinaryOp::Add), vec![r, post])
        } else {
            r
        }
    };
    let inputs = b.inputs;
    let ast = vec![LazyOp::store(
        0,
        ShapeTracker::from_shape(&out_shape),
        value,
    )];
    Case {
        seed,
        dtype,
        full,
        out_shape,
        ast,
        inputs,
    }
}

/// Applies up to four random opts; the ones that do not apply are skipped, and must be
/// reported as errors (never panics).
pub fn random_opts(rng: &mut Rng, k: &mut Kernel, threaded: bool) -> Vec<Opt> {
    let mut ops = vec![OptOp::Upcast, OptOp::Unroll, OptOp::PadTo];
    if threaded {
        ops.extend([OptOp::Local, OptOp::Group, OptOp::GroupTop, OptOp::NoLocals]);
    } else {
        ops.push(OptOp::Interior);
    }
    let mut applied = Vec::new();
    for _ in 0..rng.below(5) {
        let op = rng.pick(&ops);
        let axis = rng.below(k.shape_len().max(1) + 1);
        let amt = match op {
            OptOp::PadTo => rng.pick(&[4, 8]),
            _ => rng.pick(&[0, 2, 3, 4]),
        };
        let opt = match op {
            OptOp::Interior => Opt::interior(),
            _ => Opt::new(op, axis, amt),
        };
        if k.apply_opt(opt).is_ok() {
            applied.push(opt);
        }
    }
    applied
}
