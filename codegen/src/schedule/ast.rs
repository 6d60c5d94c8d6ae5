//! The kernel AST: a tree of lazy ops rooted at stores, with a ShapeTracker on every buffer
//! access. Subtrees are shared (`Rc`), so a value used twice is one node.

use crate::dtype::DType;
use crate::ops::{AluOp, BinaryOp, ConstValue, ReduceOp};
use crate::shape::ShapeTracker;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::rc::Rc;

/// Index of a kernel's buffer argument (`data0`, `data1`, …); the model's buffers are
/// [`super::BufId`]s.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ArgId(pub u32);

/// A view of a global buffer: which buffer, its element type, and how it is indexed.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MemBuffer {
    pub idx: ArgId,
    pub dtype: DType,
    pub st: ShapeTracker,
}

/// A constant broadcast to a shape (the ShapeTracker carries the shape and any padding mask).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ConstBuffer {
    pub val: ConstValue,
    pub dtype: DType,
    pub st: ShapeTracker,
}

/// The operation of one AST node.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    Alu(AluOp),
    Cast(DType),
    Bitcast(DType),
    /// Reduce the source over `axes` (of the source's shape) to size 1.
    Reduce(ReduceOp, Vec<usize>),
    Load(MemBuffer),
    Const(ConstBuffer),
    Store(MemBuffer),
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct LazyNode {
    pub op: Op,
    pub src: Vec<LazyOp>,
}

/// A shared, immutable AST node.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LazyOp(pub Rc<LazyNode>);

impl LazyOp {
    fn new(op: Op, src: Vec<LazyOp>) -> Self {
        LazyOp(Rc::new(LazyNode { op, src }))
    }

    pub fn load(idx: u32, dtype: DType, st: ShapeTracker) -> Self {
        Self::new(
            Op::Load(MemBuffer {
                idx: ArgId(idx),
                dtype,
                st,
            }),
            vec![],
        )
    }

    pub fn constant(val: ConstValue, dtype: DType, st: ShapeTracker) -> Self {
        Self::new(Op::Const(ConstBuffer { val, dtype, st }), vec![])
    }

    pub fn store(idx: u32, st: ShapeTracker, src: LazyOp) -> Self {
        let dtype = src.dtype();
        Self::new(
            Op::Store(MemBuffer {
                idx: ArgId(idx),
                dtype,
                st,
            }),
            vec![src],
        )
    }

    pub fn alu(op: AluOp, src: Vec<LazyOp>) -> Self {
        Self::new(Op::Alu(op), src)
    }

    pub fn cast(dtype: DType, src: LazyOp) -> Self {
        Self::new(Op::Cast(dtype), vec![src])
    }

    pub fn bitcast(dtype: DType, src: LazyOp) -> Self {
        Self::new(Op::Bitcast(dtype), vec![src])
    }

    pub fn reduce(op: ReduceOp, axes: Vec<usize>, src: LazyOp) -> Self {
        Self::new(Op::Reduce(op, axes), vec![src])
    }

    /// For a sum in `i32` of the products of two factors: each factor that is a load cast to
    /// `i32`, its buffer access (the operands a packed dot product can take); `None` for any
    /// other node.
    pub fn summed_product_loads(&self) -> Option<[Option<&MemBuffer>; 2]> {
        let Op::Reduce(ReduceOp::Sum, _) = self.op() else {
            return None;
        };
        let product = &self.src()[0];
        if self.dtype() != DType::I32 || *product.op() != Op::Alu(AluOp::Binary(BinaryOp::Mul)) {
            return None;
        }
        fn cast_load(factor: &LazyOp) -> Option<&MemBuffer> {
            match (factor.op(), factor.src()) {
                (Op::Cast(DType::I32), [load]) => match load.op() {
                    Op::Load(m) => Some(m),
                    _ => None,
                },
                _ => None,
            }
        }
        let [a, b] = product.src() else {
            return None;
        };
        Some([cast_load(a), cast_load(b)])
    }

    /// The same operation over `src`.
    pub fn with_src(&self, src: Vec<LazyOp>) -> Self {
        Self::new(self.op().clone(), src)
    }

    pub fn op(&self) -> &Op {
        &self.0.op
    }

    pub fn src(&self) -> &[LazyOp] {
        &self.0.src
    }

    /// The node's identity, for caches keyed by node (shared subtrees are one node).
    pub fn key(&self) -> *const LazyNode {
        Rc::as_ptr(&self.0)
    }

    pub fn dtype(&self) -> DType {
        match self.op() {
            Op::Load(b) | Op::Store(b) => b.dtype,
            Op::Const(c) => c.dtype,
            Op::Cast(d) | Op::Bitcast(d) => *d,
            Op::Alu(a) if a.is_comparison() => DType::BOOL,
            Op::Alu(_) | Op::Reduce(..) => self.src().last().expect("has a source").dtype(),
        }
    }

    /// The shape this node produces.
    pub fn shape(&self) -> Vec<usize> {
        match self.op() {
            Op::Load(b) | Op::Store(b) => b.st.shape().to_vec(),
            Op::Const(c) => c.st.shape().to_vec(),
            Op::Reduce(_, axes) => {
                let mut s = self.src()[0].shape();
                for &a in axes {
                    if a < s.len() {
                        s[a] = 1;
                    }
                }
                s
            }
            _ => self.src()[0].shape(),
        }
    }

    /// The tree with the view of every load and store that `f` maps replaced by the view it
    /// gives; shared subtrees stay shared.
    pub fn map_views(&self, f: &dyn Fn(&MemBuffer) -> Option<ShapeTracker>) -> LazyOp {
        self.map_buffers(&|m| f(m).map(|st| MemBuffer { st, ..m.clone() }))
    }

    /// The tree with every load and store whose buffer access `f` maps replaced by the access
    /// it gives (another view, another argument); shared subtrees stay shared.
    pub fn map_buffers(&self, f: &dyn Fn(&MemBuffer) -> Option<MemBuffer>) -> LazyOp {
        self.map_buffers_memo(f, &mut HashMap::new())
    }

    /// The tree with the view of every load, store and constant replaced by what `f` gives
    /// for it (the argument of a load or store, `None` for a constant); shared subtrees stay
    /// shared.
    pub fn map_all_views(&self, f: &dyn Fn(Option<u32>, &ShapeTracker) -> ShapeTracker) -> LazyOp {
        self.map_all_views_memo(f, &mut HashMap::new())
    }

    fn map_all_views_memo(
        &self,
        f: &dyn Fn(Option<u32>, &ShapeTracker) -> ShapeTracker,
        done: &mut HashMap<*const LazyNode, LazyOp>,
    ) -> LazyOp {
        if let Some(x) = done.get(&self.key()) {
            return x.clone();
        }
        let src: Vec<LazyOp> = (self.src().iter())
            .map(|s| s.map_all_views_memo(f, done))
            .collect();
        let op = match self.op() {
            Op::Load(m) => Op::Load(MemBuffer {
                st: f(Some(m.idx.0), &m.st),
                ..m.clone()
            }),
            Op::Store(m) => Op::Store(MemBuffer {
                st: f(Some(m.idx.0), &m.st),
                ..m.clone()
            }),
            Op::Const(c) => Op::Const(ConstBuffer {
                st: f(None, &c.st),
                ..c.clone()
            }),
            op => op.clone(),
        };
        let out = LazyOp::new(op, src);
        done.insert(self.key(), out.clone());
        out
    }

    fn map_buffers_memo(
        &self,
        f: &dyn Fn(&MemBuffer) -> Option<MemBuffer>,
        done: &mut HashMap<*const LazyNode, LazyOp>,
    ) -> LazyOp {
        if let Some(x) = done.get(&self.key()) {
            return x.clone();
        }
        let src: Vec<LazyOp> = self
            .src()
            .iter()
            .map(|s| s.map_buffers_memo(f, done))
            .collect();
        let op = match self.op() {
            Op::Load(m) => f(m).map_or_else(|| self.op().clone(), Op::Load),
            Op::Store(m) => f(m).map_or_else(|| self.op().clone(), Op::Store),
            op => op.clone(),
        };
        let unchanged =
            op == *self.op() && src.iter().zip(self.src()).all(|(a, b)| a.key() == b.key());
        let out = if unchanged {
            self.clone()
        } else {
            LazyOp::new(op, src)
        };
        done.insert(self.key(), out.clone());
        out
    }

    /// Every node of the tree, each once, parents before children (pre-order).
    pub fn lazyops(&self) -> Vec<LazyOp> {
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        self.collect(&mut out, &mut seen);
        out
    }

    fn collect(&self, out: &mut Vec<LazyOp>, seen: &mut HashSet<*const LazyNode>) {
        if !seen.insert(self.key()) {
            return;
        }
        out.push(self.clone());
        for s in self.src() {
            s.collect(out, seen);
        }
    }

    /// One line per node, children indented below their parent. A subtree that an earlier line
    /// already printed is printed again only if it is a leaf; otherwise as a reference to that
    /// line (`^N`), so that a shared value prints once and the text stays linear in the DAG.
    fn fmt_tree(
        &self,
        f: &mut fmt::Formatter<'_>,
        depth: usize,
        lines: &mut HashMap<*const LazyNode, usize>,
        line: &mut usize,
    ) -> fmt::Result {
        let pad = "  ".repeat(depth);
        if !self.src().is_empty() {
            if let Some(n) = lines.get(&self.key()) {
                *line += 1;
                return writeln!(f, "{pad}^{n}");
            }
            lines.insert(self.key(), *line);
        }
        *line += 1;
        match self.op() {
            Op::Load(b) => writeln!(
                f,
                "{pad}LOAD data{} {} {:?}",
                b.idx.0,
                b.dtype,
                b.st.shape()
            )?,
            Op::Store(b) => writeln!(
                f,
                "{pad}STORE data{} {} {:?}",
                b.idx.0,
                b.dtype,
                b.st.shape()
            )?,
            Op::Const(c) => writeln!(
                f,
                "{pad}CONST {:?} {} {:?}",
                c.val.as_f64(),
                c.dtype,
                c.st.shape()
            )?,
            Op::Alu(a) => writeln!(f, "{pad}{a}")?,
            Op::Cast(d) => writeln!(f, "{pad}CAST {d}")?,
            Op::Bitcast(d) => writeln!(f, "{pad}BITCAST {d}")?,
            Op::Reduce(r, axes) => writeln!(f, "{pad}REDUCE {r:?} axes={axes:?}")?,
        }
        for s in self.src() {
            s.fmt_tree(f, depth + 1, lines, line)?;
        }
        Ok(())
    }
}

impl fmt::Display for LazyOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fmt_tree(f, 0, &mut HashMap::new(), &mut 0)
    }
}
