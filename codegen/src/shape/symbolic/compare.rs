//! Comparisons with a constant.

use super::{gcd, Node, NodeKind};

impl Node {
    /// `self < b` as a 0/1 node. Folds to a constant when the bounds decide it; a sum moves its
    /// constant to the right and is divided through by the gcd of its coefficients when the
    /// other terms are too small to matter (`x*4 + y*2 + z < 6` with `z` in `0..2` is
    /// `x*2 + y < 3`); `x*k < b` is `x < ceil(b/k)`.
    pub fn lt_i(&self, b: i64) -> Node {
        match self.kind() {
            NodeKind::Sum(terms) => sum_lt(terms, b),
            NodeKind::Mul(a, k) if *k != -1 => {
                let bound = (b + k.abs() - 1).div_euclid(k.abs());
                Node::make(NodeKind::Lt(a.mul_i(k.signum()), bound))
            }
            _ => Node::make(NodeKind::Lt(self.clone(), b)),
        }
    }

    /// `self >= b` as a 0/1 node, written as `-self < 1 - b`.
    pub fn ge_i(&self, b: i64) -> Node {
        self.neg().lt_i(1 - b)
    }
}

/// `Σ terms < b`.
fn sum_lt(terms: &[Node], mut b: i64) -> Node {
    let mut rest = Vec::with_capacity(terms.len());
    for term in terms {
        match term.as_num() {
            Some(v) => b -= v,
            None => rest.push(term.clone()),
        }
    }
    let mut lhs = Node::sum(rest);
    let parts = match lhs.kind() {
        NodeKind::Sum(parts) => parts.clone(),
        _ => vec![lhs.clone()],
    };
    let (muls, others): (Vec<Node>, Vec<Node>) = parts
        .into_iter()
        .partition(|t| matches!(t.kind(), NodeKind::Mul(_, k) if *k > 0) && t.max() >= b);
    if !muls.is_empty() {
        let common = muls.iter().fold(b, |g, m| match m.kind() {
            NodeKind::Mul(_, k) => gcd(g, *k),
            _ => g,
        });
        let others = Node::sum(others);
        if others.min() >= 0 && others.max() < common {
            lhs = Node::sum(muls.iter().map(|m| m.div_i(common)).collect());
            b = b.div_euclid(common);
        }
    }
    match lhs.kind() {
        NodeKind::Sum(_) => Node::make(NodeKind::Lt(lhs, b)),
        _ => lhs.lt_i(b),
    }
}
