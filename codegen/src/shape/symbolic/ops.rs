//! Arithmetic operators on `&Node`, each the simplifying method of the same meaning.

use std::ops::{Add, Div, Mul, Neg, Rem, Sub};

use super::Node;

impl Add<i64> for &Node {
    type Output = Node;
    fn add(self, b: i64) -> Node {
        self.add_i(b)
    }
}

impl Sub<i64> for &Node {
    type Output = Node;
    fn sub(self, b: i64) -> Node {
        self.add_i(-b)
    }
}

impl Mul<i64> for &Node {
    type Output = Node;
    fn mul(self, b: i64) -> Node {
        self.mul_i(b)
    }
}

impl Div<i64> for &Node {
    type Output = Node;
    fn div(self, b: i64) -> Node {
        self.div_i(b)
    }
}

impl Rem<i64> for &Node {
    type Output = Node;
    fn rem(self, b: i64) -> Node {
        self.mod_i(b)
    }
}

impl Neg for &Node {
    type Output = Node;
    fn neg(self) -> Node {
        self.mul_i(-1)
    }
}

impl Add<&Node> for &Node {
    type Output = Node;
    fn add(self, o: &Node) -> Node {
        Node::sum(vec![self.clone(), o.clone()])
    }
}

impl Sub<&Node> for &Node {
    type Output = Node;
    fn sub(self, o: &Node) -> Node {
        Node::sum(vec![self.clone(), o.mul_i(-1)])
    }
}

impl Mul<&Node> for &Node {
    type Output = Node;
    fn mul(self, o: &Node) -> Node {
        Node::mul(self, o)
    }
}

impl Add<Node> for &Node {
    type Output = Node;
    fn add(self, o: Node) -> Node {
        self + &o
    }
}

impl Sub<Node> for &Node {
    type Output = Node;
    fn sub(self, o: Node) -> Node {
        self - &o
    }
}

impl Mul<Node> for &Node {
    type Output = Node;
    fn mul(self, o: Node) -> Node {
        self * &o
    }
}
