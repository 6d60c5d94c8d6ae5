//! Floor division and modulo by a constant.

use super::{gcd, Node, NodeKind};

impl Node {
    /// Floor division by `b`: `(x*4 + y)//4` is `x + y//4`, `(x//a)//b` is `x//(a*b)`,
    /// `(x%(a*b))//a` is `(x//a)%b`, a numerator whose bounds fix the quotient folds to a
    /// constant, and a numerator that may be negative is shifted by a multiple of `b` first.
    ///
    /// # Panics
    /// If `b` is 0.
    pub fn div_i(&self, b: i64) -> Node {
        self.floor_div(b, true)
    }

    /// Floor division; `factoring` allows pulling the divisible terms out of a sum.
    fn floor_div(&self, b: i64, factoring: bool) -> Node {
        assert!(b != 0, "division of {self} by zero");
        if b < 0 {
            return self.neg().floor_div(-b, factoring);
        }
        if b == 1 {
            return self.clone();
        }
        match self.kind() {
            NodeKind::Num(v) => Node::num(v.div_euclid(b)),
            NodeKind::Mul(a, k) if k % b == 0 => a.mul_i(k / b),
            NodeKind::Mul(a, k) if *k > 0 && b % k == 0 => a.div_i(b / k),
            NodeKind::Div(a, k) => a.div_i(k * b),
            NodeKind::Mod(a, m) if m % b == 0 => a.div_i(b).mod_i(m / b),
            NodeKind::Sum(terms) if factoring => sum_div(terms, b),
            _ => self.plain_div(b),
        }
    }

    /// A `Div` node, after shifting a numerator that may be negative into `0..`.
    fn plain_div(&self, b: i64) -> Node {
        if self.min() < 0 {
            let offset = self.min().div_euclid(b);
            return self.add_i(-offset * b).floor_div(b, false).add_i(offset);
        }
        Node::make(NodeKind::Div(self.clone(), b))
    }

    /// Modulo by `b`, with the sign of `b` (Python's `%`, which `eval` computes too):
    /// `(x%(a*b))%b` is `x%b`, constant terms and coefficients of a sum are reduced first, and a
    /// node whose bounds fix the quotient loses the modulo.
    ///
    /// # Panics
    /// If `b` is 0.
    pub fn mod_i(&self, b: i64) -> Node {
        assert!(b != 0, "modulo of {self} by zero");
        if b < 0 {
            return self.neg().mod_i(-b).neg();
        }
        match self.kind() {
            NodeKind::Mod(a, m) if m % b == 0 => a.mod_i(b),
            NodeKind::Mul(a, k) => a.mul_i(k.rem_euclid(b)).plain_mod(b),
            NodeKind::Sum(terms) => {
                let reduced = terms.iter().map(|t| match t.kind() {
                    NodeKind::Num(_) | NodeKind::Mul(..) => t.mod_i(b),
                    _ => t.clone(),
                });
                Node::sum(reduced.collect()).plain_mod(b)
            }
            _ => self.plain_mod(b),
        }
    }

    /// A `Mod` node unless the bounds decide it, shifting a possibly negative node into `0..`.
    fn plain_mod(&self, b: i64) -> Node {
        if b == 1 {
            return Node::num(0);
        }
        let (lo, hi) = (self.min(), self.max());
        if lo >= 0 && hi < b {
            return self.clone();
        }
        let quotient = lo.div_euclid(b);
        if quotient == hi.div_euclid(b) {
            return self.add_i(-b * quotient);
        }
        if lo < 0 {
            return self.add_i(-b * quotient).mod_i(b);
        }
        Node::make(NodeKind::Mod(self.clone(), b))
    }
}

/// Floor division of the sum of `terms` by `b > 1`: the terms divisible by `b` are divided
/// exactly, and the rest is divided through the gcd of its coefficients (or by one of them that
/// divides `b`) before the remaining division.
fn sum_div(terms: &[Node], b: i64) -> Node {
    let mut exact = Vec::new();
    let mut rest = Vec::new();
    let (mut common, mut divisor) = (b, 1);
    for term in terms {
        let coeff = match term.kind() {
            NodeKind::Num(v) => *v,
            NodeKind::Mul(_, k) => *k,
            _ => {
                rest.push(term.clone());
                common = 1;
                continue;
            }
        };
        if coeff % b == 0 {
            exact.push(term.div_i(b));
            continue;
        }
        let mut term = term.clone();
        let mut coeff = coeff;
        if term.as_num().is_some() && coeff.div_euclid(b) != 0 {
            exact.push(Node::num(coeff.div_euclid(b)));
            coeff = coeff.rem_euclid(b);
            term = Node::num(coeff);
        }
        common = gcd(common, coeff);
        if matches!(term.kind(), NodeKind::Mul(..)) && divisor == 1 && b % coeff == 0 {
            divisor = coeff;
        }
        rest.push(term);
    }
    let exact = Node::sum(exact);
    let rest = Node::sum(rest);
    if common > 1 {
        exact.add(&rest.div_i(common).div_i(b / common))
    } else if divisor > 1 {
        exact.add(&rest.div_i(divisor).div_i(b / divisor))
    } else {
        exact.add(&rest.plain_div(b))
    }
}
