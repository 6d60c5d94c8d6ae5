//! The UOp graph: a kernel's straight-line micro-ops.
//!
//! UOps are built into a [`UOpGraph`] that hash-conses every node (so equal nodes are one node)
//! and folds constants as they are added. The linearizer builds the graph from the final stores;
//! [`order_uops`] then orders the nodes reachable from those stores into a [`Linear`]
//! program, opening and closing loops and ifs.

pub mod interp;
pub mod order;
pub mod vectorize;

use crate::dtype::DType;
use crate::ops::{eval_alu, AluOp, BinaryOp, ConstValue, TernaryOp, UnaryOp};
use std::collections::HashMap;
use std::fmt;

pub use order::{order_uops, Linear, OrderError};

/// Index of a node in a [`UOpGraph`], or of an instruction in a [`Linear`] program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct UOpId(pub u32);

impl UOpId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A kernel's buffer arguments are numbered as in its AST ([`crate::schedule::ast::ArgId`]).
pub use crate::schedule::ast::ArgId;

/// What a UOp does. The sources of each kind are documented on the variant.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum UOpKind {
    /// A global buffer parameter. No sources.
    DefineGlobal { buf: ArgId, mutable: bool },
    /// A local (work-group shared) buffer of `size` elements. No sources.
    DefineLocal { name: String, size: usize },
    /// A named integer variable bound at run time. No sources.
    DefineVar { name: String, min: i64, max: i64 },
    /// An accumulator. Sources: the initial constant, then the loops it accumulates over.
    DefineAcc { id: u32 },
    /// A constant. No sources.
    Const(ConstValue),
    /// A global (`gidx`/`idx`) or local (`lidx`) thread index on a device with threads.
    Special {
        local: bool,
        axis: u8,
        name: String,
        size: usize,
    },
    /// A loop. Sources: start, end (exclusive). `region` tells apart the loops of the
    /// separate loop nests of a kernel split by INTERIOR, which have the same depths and
    /// indices (0 for a kernel that is one nest).
    Range {
        depth: u32,
        index: u32,
        reduce: bool,
        region: u32,
    },
    /// Closes a loop. Source: the range.
    EndRange,
    /// Conditional block. Sources: condition, then a barrier it waits on (optional).
    If,
    /// Closes an if. Source: the if.
    EndIf,
    /// Sources: buffer, index, then optionally gate and alternative value, then optionally a
    /// barrier the load must follow.
    Load,
    /// Sources: buffer, index, value, then optionally a gate.
    Store,
    /// An ALU op over its sources.
    Alu(AluOp),
    /// A packed dot product: the accumulator plus the sum of the lane-by-lane products of two
    /// vectors of four int8 or int16 lanes (each lane widened first), in the accumulator's
    /// type. Sources: the accumulator, then the two vectors (each one load of consecutive
    /// elements). Where the two differ in width, lane `k` of one meets lane
    /// [`PAIR_ORDER[k]`](crate::kernel::dot::PAIR_ORDER) of the other: one of them is a weight
    /// stored in that order ([`crate::kernel::Kernel::paired`]).
    Dot,
    /// Numeric conversion of one source, or packing of several scalars into a vector.
    Cast,
    /// Reinterpretation of the bits of one source.
    Bitcast,
    /// One lane of a vector source.
    Gep(u8),
    /// Loop-carried update of an accumulator. Sources: the accumulator, the new value.
    Phi,
    /// A work-group barrier. Sources: the stores it orders.
    Barrier,
    /// The root that holds all stores. Sources: every store.
    Sink,
}

/// One node: its kind, result type (none for stores, loops and markers) and sources.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct UOp {
    pub kind: UOpKind,
    pub dtype: Option<DType>,
    pub src: Vec<UOpId>,
}

/// A hash-consed, constant-folding arena of UOps.
#[derive(Default, Debug, Clone)]
pub struct UOpGraph {
    nodes: Vec<UOp>,
    index: HashMap<UOp, UOpId>,
    next_acc: u32,
}

impl UOpGraph {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn get(&self, id: UOpId) -> &UOp {
        &self.nodes[id.index()]
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Adds `u`, returning the existing node when an equal one is already present.
    pub fn add(&mut self, u: UOp) -> UOpId {
        if let Some(&id) = self.index.get(&u) {
            return id;
        }
        let id = UOpId(self.nodes.len() as u32);
        self.nodes.push(u.clone());
        self.index.insert(u, id);
        id
    }

    pub fn node(&mut self, kind: UOpKind, dtype: Option<DType>, src: Vec<UOpId>) -> UOpId {
        self.add(UOp { kind, dtype, src })
    }

    pub fn constant(&mut self, dtype: DType, v: ConstValue) -> UOpId {
        let v = match v {
            ConstValue::Int(i) => ConstValue::from_i64(dtype, i),
            ConstValue::Float(_) => ConstValue::from_f64(dtype, v.as_f64()),
        };
        self.node(UOpKind::Const(v), Some(dtype), vec![])
    }

    pub fn const_int(&mut self, v: i64) -> UOpId {
        self.constant(DType::I32, ConstValue::Int(v))
    }

    /// The constant held by `id`, if it is a (scalar) constant.
    pub fn as_const(&self, id: UOpId) -> Option<ConstValue> {
        match self.get(id) {
            UOp {
                kind: UOpKind::Const(v),
                dtype: Some(d),
                ..
            } if d.count == 1 => Some(*v),
            _ => None,
        }
    }

    /// An index as `base + offset`, the offset a constant: `x + c` → (x, c), `c` → (none, c).
    pub fn base_and_offset(&self, idx: UOpId) -> (Option<UOpId>, i64) {
        let u = self.get(idx);
        if let Some(c) = self.as_const(idx) {
            return (None, c.as_i64());
        }
        if u.kind == UOpKind::Alu(AluOp::Binary(BinaryOp::Add)) {
            if let Some(c) = self.as_const(u.src[1]) {
                return (Some(u.src[0]), c.as_i64());
            }
            if let Some(c) = self.as_const(u.src[0]) {
                return (Some(u.src[1]), c.as_i64());
            }
        }
        (Some(idx), 0)
    }

    /// A fresh accumulator initialised to `init`, accumulating over `loops`.
    pub fn define_acc(&mut self, dtype: DType, init: ConstValue, loops: &[UOpId]) -> UOpId {
        let c = self.constant(dtype, init);
        let id = self.next_acc;
        self.next_acc += 1;
        let mut src = vec![c];
        src.extend_from_slice(loops);
        self.node(UOpKind::DefineAcc { id }, Some(dtype), src)
    }

    /// A fresh accumulator initialised to the value `init`, accumulating over `loops`.
    pub fn define_acc_node(&mut self, dtype: DType, init: UOpId, loops: &[UOpId]) -> UOpId {
        let id = self.next_acc;
        self.next_acc += 1;
        let mut src = vec![init];
        src.extend_from_slice(loops);
        self.node(UOpKind::DefineAcc { id }, Some(dtype), src)
    }

    /// Adds an ALU node, folding constants and algebraic identities.
    pub fn alu(&mut self, op: AluOp, src: &[UOpId]) -> UOpId {
        debug_assert_eq!(src.len(), op.arity(), "{op} arity");
        let operand = self
            .get(src[src.len() - 1])
            .dtype
            .expect("ALU operand has a type");
        let dtype = if op.is_comparison() {
            DType::BOOL.vec(operand.count)
        } else {
            operand
        };
        if let Some(id) = self.fold(op, dtype, src) {
            return id;
        }
        self.node(UOpKind::Alu(op), Some(dtype), src.to_vec())
    }

    fn fold(&mut self, op: AluOp, dtype: DType, src: &[UOpId]) -> Option<UOpId> {
        let consts: Vec<Option<ConstValue>> = src.iter().map(|&s| self.as_const(s)).collect();
        if consts.iter().all(Option::is_some) {
            let operand = self.get(src[src.len() - 1]).dtype?;
            let vals: Vec<ConstValue> = consts.iter().map(|c| c.unwrap()).collect();
            let v = eval_alu(op, operand, &vals)?;
            return Some(self.constant(dtype, v));
        }
        let int = dtype.is_int();
        let is = |c: Option<ConstValue>, v: f64| c.is_some_and(|c| c.as_f64() == v);
        use BinaryOp::*;
        match op {
            AluOp::Binary(Add) if is(consts[1], 0.0) => Some(src[0]),
            AluOp::Binary(Add) if is(consts[0], 0.0) => Some(src[1]),
            AluOp::Binary(Sub) if is(consts[1], 0.0) => Some(src[0]),
            AluOp::Binary(Mul) if is(consts[1], 1.0) => Some(src[0]),
            AluOp::Binary(Mul) if is(consts[0], 1.0) => Some(src[1]),
            AluOp::Binary(Mul) if int && (is(consts[0], 0.0) || is(consts[1], 0.0)) => {
                Some(self.constant(dtype, ConstValue::Int(0)))
            }
            AluOp::Binary(Div) if int && is(consts[1], 1.0) => Some(src[0]),
            AluOp::Binary(Mod) if int && is(consts[1], 1.0) => {
                Some(self.constant(dtype, ConstValue::Int(0)))
            }
            AluOp::Ternary(TernaryOp::Where) => match consts[0] {
                Some(c) if c.is_zero() => Some(src[2]),
                Some(_) => Some(src[1]),
                None if src[1] == src[2] => Some(src[1]),
                None => None,
            },
            AluOp::Unary(UnaryOp::Neg) => match &self.get(src[0]).kind {
                UOpKind::Alu(AluOp::Unary(UnaryOp::Neg)) => Some(self.get(src[0]).src[0]),
                _ => None,
            },
            _ => None,
        }
    }

    pub fn binary(&mut self, op: BinaryOp, a: UOpId, b: UOpId) -> UOpId {
        self.alu(AluOp::Binary(op), &[a, b])
    }

    /// A numeric conversion; a no-op when the type already matches, folded on constants.
    pub fn cast(&mut self, dtype: DType, x: UOpId) -> UOpId {
        let from = self.get(x).dtype.expect("cast source has a type");
        if from == dtype {
            return x;
        }
        if let Some(c) = self.as_const(x) {
            return self.constant(dtype, c.cast(from, dtype));
        }
        self.node(UOpKind::Cast, Some(dtype), vec![x])
    }

    pub fn gep(&mut self, x: UOpId, lane: u8) -> UOpId {
        let d = self.get(x).dtype.expect("gep source has a type");
        if let UOpKind::Cast = self.get(x).kind {
            if self.get(x).src.len() == d.count as usize {
                return self.get(x).src[lane as usize];
            }
        }
        self.node(UOpKind::Gep(lane), Some(d.scalar()), vec![x])
    }
}

impl fmt::Display for UOpKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UOpKind::DefineGlobal { buf, mutable } => {
                write!(
                    f,
                    "DEFINE_GLOBAL data{}{}",
                    buf.0,
                    if *mutable { " (out)" } else { "" }
                )
            }
            UOpKind::DefineLocal { name, size } => write!(f, "DEFINE_LOCAL {name}[{size}]"),
            UOpKind::DefineVar { name, min, max } => write!(f, "DEFINE_VAR {name} [{min},{max}]"),
            UOpKind::DefineAcc { id } => write!(f, "DEFINE_ACC acc{id}"),
            UOpKind::Const(v) => match v {
                ConstValue::Int(i) => write!(f, "CONST {i}"),
                ConstValue::Float(_) => write!(f, "CONST {:?}", v.as_f64()),
            },
            UOpKind::Special { name, size, .. } => write!(f, "SPECIAL {name} <{size}"),
            UOpKind::Range {
                depth,
                index,
                reduce,
                region,
            } => {
                write!(f, "RANGE depth={depth} index={index} reduce={reduce}")?;
                match region {
                    0 => Ok(()),
                    r => write!(f, " region={r}"),
                }
            }
            UOpKind::EndRange => f.write_str("ENDRANGE"),
            UOpKind::If => f.write_str("IF"),
            UOpKind::EndIf => f.write_str("ENDIF"),
            UOpKind::Load => f.write_str("LOAD"),
            UOpKind::Store => f.write_str("STORE"),
            UOpKind::Alu(op) => write!(f, "ALU {op}"),
            UOpKind::Dot => f.write_str("DOT"),
            UOpKind::Cast => f.write_str("CAST"),
            UOpKind::Bitcast => f.write_str("BITCAST"),
            UOpKind::Gep(l) => write!(f, "GEP {l}"),
            UOpKind::Phi => f.write_str("PHI"),
            UOpKind::Barrier => f.write_str("BARRIER"),
            UOpKind::Sink => f.write_str("SINK"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_nodes_are_one_node_and_constants_fold() {
        let mut g = UOpGraph::new();
        let a = g.const_int(3);
        let b = g.const_int(4);
        let s = g.binary(BinaryOp::Mul, a, b);
        assert_eq!(g.as_const(s), Some(ConstValue::Int(12)));
        let v = g.node(
            UOpKind::Special {
                local: false,
                axis: 0,
                name: "gidx0".into(),
                size: 8,
            },
            Some(DType::I32),
            vec![],
        );
        let zero = g.const_int(0);
        let one = g.const_int(1);
        assert_eq!(g.binary(BinaryOp::Add, v, zero), v);
        assert_eq!(g.binary(BinaryOp::Mul, one, v), v);
        assert_eq!(g.binary(BinaryOp::Mul, v, zero), zero);
        let x1 = g.binary(BinaryOp::Add, v, a);
        let x2 = g.binary(BinaryOp::Add, v, a);
        assert_eq!(x1, x2);
        let t = g.constant(DType::BOOL, ConstValue::Int(1));
        assert_eq!(g.alu(AluOp::Ternary(TernaryOp::Where), &[t, x1, v]), x1);
    }

    #[test]
    fn float_multiply_by_zero_is_not_folded() {
        let mut g = UOpGraph::new();
        let x = g.node(
            UOpKind::DefineVar {
                name: "x".into(),
                min: 0,
                max: 1,
            },
            Some(DType::F32),
            vec![],
        );
        let z = g.constant(DType::F32, ConstValue::zero(DType::F32));
        let m = g.binary(BinaryOp::Mul, x, z);
        assert!(matches!(g.get(m).kind, UOpKind::Alu(_)));
    }
}
