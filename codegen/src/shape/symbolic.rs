//! Symbolic integer expressions over loop and thread indices.
//!
//! A [`Node`] is an immutable expression tree that is simplified while it is built: every
//! constructor returns the simplified form, and the bounds of every node are computed once, when
//! it is created. The simplification rules and the bounds follow tinygrad 0.9.1.
//!
//! Every constructor keeps these invariants, which the rules rely on:
//! - a node whose bounds are one value is a `Num`;
//! - `Var`, `Div`, `Mod`, `Lt` and `And` nodes are never negative, nor is the operand of a `Mul`;
//!   so the numerator of a `Div` or `Mod` is never negative, and C's truncating `/` and `%`
//!   compute them exactly;
//! - `Lt` and `And` nodes are 0 or 1;
//! - a `Sum` has at least two terms, none of them a `Sum` or zero, and at most one `Num`, last.

mod compare;
mod divmod;
mod ops;
mod walk;

use std::fmt;
use std::sync::Arc;

pub use walk::{render_to, NodeRenderer};

/// An immutable, simplified integer expression. Cloning is O(1).
///
/// Equality and hashing are structural: two sums with the same terms in another order are
/// different nodes, though [`Node::render`] gives them the same text.
///
/// The operators `+ - * / % -x` are implemented on `&Node` (with an `i64` or a node on the
/// right), not on `Node`: so that `a.add(&b)` and `a.mul(&b)` always call the borrowing methods
/// below instead of consuming `a`.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Node(Arc<Inner>);

#[derive(PartialEq, Eq, Hash)]
struct Inner {
    kind: NodeKind,
    min: i64,
    max: i64,
}

/// What a node computes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum NodeKind {
    /// A constant.
    Num(i64),
    /// A loop or thread index ranging over `min..=max`, with `0 <= min < max`.
    Var { name: Arc<str>, min: i64, max: i64 },
    /// The operand times a constant (never 0 or 1).
    Mul(Node, i64),
    /// Floor division by a constant greater than 1.
    Div(Node, i64),
    /// Modulo (the result lies in `0..b`) by a constant greater than 1.
    Mod(Node, i64),
    /// 1 if the operand is less than the constant, else 0.
    Lt(Node, i64),
    /// The sum of the terms.
    Sum(Vec<Node>),
    /// 1 if every term (each 0 or 1) is 1, else 0: their product.
    And(Vec<Node>),
}

impl Node {
    /// The constant `v`.
    pub fn num(v: i64) -> Node {
        Node(Arc::new(Inner {
            kind: NodeKind::Num(v),
            min: v,
            max: v,
        }))
    }

    /// A variable over `min..=max`; a range of one value gives `Num(min)`.
    ///
    /// # Panics
    /// If `min > max` or `min < 0`: loop and thread indices are never negative, and the
    /// simplification rules rely on it.
    pub fn var(name: &str, min: i64, max: i64) -> Node {
        assert!(
            0 <= min && min <= max,
            "variable {name} has an invalid range {min}..={max}"
        );
        if min == max {
            return Node::num(min);
        }
        let kind = NodeKind::Var {
            name: name.into(),
            min,
            max,
        };
        Node(Arc::new(Inner { kind, min, max }))
    }

    /// Builds a node of `kind` from already simplified parts, folding it to a constant when its
    /// bounds allow.
    fn make(kind: NodeKind) -> Node {
        let (min, max) = bounds(&kind);
        debug_assert!(min <= max, "bounds {min}..={max} of {kind:?}");
        if min == max {
            return Node::num(min);
        }
        Node(Arc::new(Inner { kind, min, max }))
    }

    pub fn kind(&self) -> &NodeKind {
        &self.0.kind
    }

    /// The smallest value the node can take (inclusive).
    pub fn min(&self) -> i64 {
        self.0.min
    }

    /// The largest value the node can take (inclusive).
    pub fn max(&self) -> i64 {
        self.0.max
    }

    pub fn as_num(&self) -> Option<i64> {
        match self.kind() {
            NodeKind::Num(v) => Some(*v),
            _ => None,
        }
    }

    pub fn add(&self, o: &Node) -> Node {
        Node::sum(vec![self.clone(), o.clone()])
    }

    pub fn add_i(&self, b: i64) -> Node {
        Node::sum(vec![self.clone(), Node::num(b)])
    }

    /// `self * -1`.
    pub fn neg(&self) -> Node {
        self.mul_i(-1)
    }

    /// The product with a constant: folds constants, merges nested products and distributes
    /// over sums.
    pub fn mul_i(&self, b: i64) -> Node {
        match (b, self.kind()) {
            (0, _) => Node::num(0),
            (1, _) => self.clone(),
            (_, NodeKind::Num(v)) => Node::num(v * b),
            (_, NodeKind::Mul(a, k)) => a.mul_i(k * b),
            (_, NodeKind::Sum(terms)) => Node::sum(terms.iter().map(|t| t.mul_i(b)).collect()),
            _ => Node::make(NodeKind::Mul(self.clone(), b)),
        }
    }

    /// The product of two nodes.
    ///
    /// When either is a constant this is [`Node::mul_i`], and two 0/1 nodes give their `And`.
    /// Other products have no node of their own; they are written exactly as a sum over the
    /// steps of both ranges, `x*y = x.min*y + y.min*x - x.min*y.min + Σ (x>=j)*(y>=k)`, whose
    /// size grows with the product of the two ranges: meant for small ranges only.
    pub fn mul(&self, o: &Node) -> Node {
        if let Some(v) = o.as_num() {
            return self.mul_i(v);
        }
        if let Some(v) = self.as_num() {
            return o.mul_i(v);
        }
        if self.is_boolean() && o.is_boolean() {
            return Node::and(vec![self.clone(), o.clone()]);
        }
        let (x, y) = (self, o);
        let mut terms = vec![
            x.mul_i(y.min()),
            y.mul_i(x.min()),
            Node::num(-x.min() * y.min()),
        ];
        for j in x.min() + 1..=x.max() {
            for k in y.min() + 1..=y.max() {
                terms.push(Node::and(vec![x.ge_i(j), y.ge_i(k)]));
            }
        }
        Node::sum(terms)
    }

    /// The sum of `nodes`: nested sums are flattened, like terms combined (`a*2 + a*3` is
    /// `a*5`) in the order they first appear, and constants gathered into one last term.
    pub fn sum(nodes: Vec<Node>) -> Node {
        let mut nodes: Vec<Node> = nodes
            .into_iter()
            .filter(|n| n.as_num() != Some(0))
            .collect();
        if nodes.len() <= 1 {
            return nodes.pop().unwrap_or_else(|| Node::num(0));
        }
        let mut flat = Vec::with_capacity(nodes.len());
        for node in &nodes {
            node.push_terms(&mut flat);
        }
        let mut groups: Vec<(Node, i64)> = Vec::with_capacity(flat.len());
        let mut constant = 0;
        for term in flat {
            let (base, coeff) = match term.kind() {
                NodeKind::Num(v) => {
                    constant += v;
                    continue;
                }
                NodeKind::Mul(a, k) => (a.clone(), *k),
                _ => (term, 1),
            };
            match groups.iter_mut().find(|(b, _)| *b == base) {
                Some((_, c)) => *c += coeff,
                None => groups.push((base, coeff)),
            }
        }
        let mut terms: Vec<Node> = groups
            .into_iter()
            .filter(|(_, c)| *c != 0)
            .map(|(base, c)| base.mul_i(c))
            .collect();
        if constant != 0 {
            terms.push(Node::num(constant));
        }
        match terms.len() {
            0 => Node::num(0),
            1 => terms.pop().expect("one term"),
            _ => Node::make(NodeKind::Sum(terms)),
        }
    }

    /// Appends the terms of this node, looking through nested sums.
    fn push_terms(&self, out: &mut Vec<Node>) {
        match self.kind() {
            NodeKind::Sum(terms) => terms.iter().for_each(|t| t.push_terms(out)),
            _ => out.push(self.clone()),
        }
    }

    /// 1 when every node is non-zero, else 0. Constant 1s are dropped and a constant 0 makes the
    /// whole 0; an empty list is 1. Nodes meant here are 0 or 1 (comparisons and other `And`s);
    /// any other node is first replaced by the 0/1 node that says it is non-zero.
    pub fn and(nodes: Vec<Node>) -> Node {
        let mut kept = Vec::with_capacity(nodes.len());
        for node in nodes {
            let node = node.truth();
            match node.as_num() {
                Some(0) => return Node::num(0),
                Some(_) => {}
                None => kept.push(node),
            }
        }
        match kept.len() {
            0 => Node::num(1),
            1 => kept.pop().expect("one node"),
            _ => Node::make(NodeKind::And(kept)),
        }
    }

    fn is_boolean(&self) -> bool {
        self.min() >= 0 && self.max() <= 1
    }

    /// A 0/1 node that is 1 exactly when `self` is non-zero.
    fn truth(self) -> Node {
        if self.is_boolean() {
            self
        } else if self.min() > 0 || self.max() < 0 {
            Node::num(1)
        } else if self.min() == 0 {
            self.ge_i(1)
        } else if self.max() == 0 {
            self.lt_i(0)
        } else {
            let is_zero = Node::and(vec![self.lt_i(1), self.ge_i(0)]);
            Node::num(1).add(&is_zero.neg())
        }
    }
}

/// The inclusive bounds of a node of `kind` whose parts are simplified.
fn bounds(kind: &NodeKind) -> (i64, i64) {
    match kind {
        NodeKind::Num(v) => (*v, *v),
        NodeKind::Var { min, max, .. } => (*min, *max),
        NodeKind::Mul(a, b) if *b >= 0 => (a.min() * b, a.max() * b),
        NodeKind::Mul(a, b) => (a.max() * b, a.min() * b),
        NodeKind::Div(a, b) => (a.min().div_euclid(*b), a.max().div_euclid(*b)),
        NodeKind::Mod(a, b) => {
            let (lo, hi) = (a.min(), a.max());
            if hi - lo >= *b || lo.rem_euclid(*b) > hi.rem_euclid(*b) {
                (0, b - 1)
            } else {
                (lo.rem_euclid(*b), hi.rem_euclid(*b))
            }
        }
        NodeKind::Lt(a, b) if a.max() < *b => (1, 1),
        NodeKind::Lt(a, b) if a.min() >= *b => (0, 0),
        NodeKind::Lt(..) => (0, 1),
        NodeKind::Sum(terms) => (
            terms.iter().map(Node::min).sum(),
            terms.iter().map(Node::max).sum(),
        ),
        NodeKind::And(terms) => {
            let min = terms.iter().map(Node::min).min().unwrap_or(1);
            (min, terms.iter().map(Node::max).max().unwrap_or(1))
        }
    }
}

/// The greatest common divisor of `|a|` and `|b|` (0 when both are 0).
fn gcd(a: i64, b: i64) -> i64 {
    let (mut a, mut b) = (a.abs(), b.abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

impl fmt::Display for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render())
    }
}

impl fmt::Debug for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Node({}: {}..={})",
            self.render(),
            self.min(),
            self.max()
        )
    }
}
