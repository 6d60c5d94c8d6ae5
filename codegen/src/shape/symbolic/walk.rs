//! Walks over a node: rendering, evaluation, variables and substitution.

use std::collections::HashMap;

use super::{Node, NodeKind};

/// How to build a `T` for each kind of node: the one table [`render_to`] needs to turn any node
/// into, say, UOps or source text.
pub trait NodeRenderer<T> {
    fn num(&self, v: i64) -> T;
    fn var(&self, name: &str, min: i64, max: i64) -> T;
    fn mul(&self, a: T, b: i64) -> T;
    /// Floor division; the numerator is never negative.
    fn div(&self, a: T, b: i64) -> T;
    /// Modulo; the numerator is never negative.
    fn modulo(&self, a: T, b: i64) -> T;
    fn lt(&self, a: T, b: i64) -> T;
    fn add(&self, a: T, b: T) -> T;
    fn and(&self, a: T, b: T) -> T;
}

/// Renders `node` through `table` in one walk: sums fold their terms with `add` and `And`s with
/// `and`, left to right, in the node's own term order.
pub fn render_to<T>(node: &Node, table: &dyn NodeRenderer<T>) -> T {
    let fold = |terms: &[Node], op: &dyn Fn(T, T) -> T| {
        let mut terms = terms.iter().map(|t| render_to(t, table));
        let first = terms.next().expect("sums and ands have at least two terms");
        terms.fold(first, op)
    };
    match node.kind() {
        NodeKind::Num(v) => table.num(*v),
        NodeKind::Var { name, min, max } => table.var(name, *min, *max),
        NodeKind::Mul(a, b) => table.mul(render_to(a, table), *b),
        NodeKind::Div(a, b) => table.div(render_to(a, table), *b),
        NodeKind::Mod(a, b) => table.modulo(render_to(a, table), *b),
        NodeKind::Lt(a, b) => table.lt(render_to(a, table), *b),
        NodeKind::Sum(terms) => fold(terms, &|a, b| table.add(a, b)),
        NodeKind::And(terms) => fold(terms, &|a, b| table.and(a, b)),
    }
}

impl Node {
    /// Stable, readable text, fit for a cache key: `((gidx0*4)+ridx1)`, `(a<3)`, `((a//2)%4)`.
    /// The terms of sums and ands are sorted, so their order does not change the text.
    pub fn render(&self) -> String {
        let sorted = |terms: &[Node], sep: &str| {
            let mut texts: Vec<String> = terms.iter().map(Node::render).collect();
            texts.sort();
            format!("({})", texts.join(sep))
        };
        match self.kind() {
            NodeKind::Num(v) => v.to_string(),
            NodeKind::Var { name, .. } => name.to_string(),
            NodeKind::Mul(a, b) => format!("({}*{b})", a.render()),
            NodeKind::Div(a, b) => format!("({}//{b})", a.render()),
            NodeKind::Mod(a, b) => format!("({}%{b})", a.render()),
            NodeKind::Lt(a, b) => format!("({}<{b})", a.render()),
            NodeKind::Sum(terms) => sorted(terms, "+"),
            NodeKind::And(terms) => sorted(terms, " and "),
        }
    }

    /// The exact value of the node, with `env` giving each variable's value: floor division,
    /// and modulo with the sign of the divisor.
    pub fn eval(&self, env: &dyn Fn(&str) -> i64) -> i64 {
        match self.kind() {
            NodeKind::Num(v) => *v,
            NodeKind::Var { name, .. } => env(name),
            NodeKind::Mul(a, b) => a.eval(env) * b,
            NodeKind::Div(a, b) => a.eval(env).div_euclid(*b),
            NodeKind::Mod(a, b) => a.eval(env).rem_euclid(*b),
            NodeKind::Lt(a, b) => i64::from(a.eval(env) < *b),
            NodeKind::Sum(terms) => terms.iter().map(|t| t.eval(env)).sum(),
            NodeKind::And(terms) => terms.iter().map(|t| t.eval(env)).product(),
        }
    }

    /// The distinct `Var` nodes, in the order they are first met (depth first, left to right).
    pub fn vars(&self) -> Vec<Node> {
        let mut out = Vec::new();
        self.collect_vars(&mut out);
        out
    }

    fn collect_vars(&self, out: &mut Vec<Node>) {
        match self.kind() {
            NodeKind::Num(_) => {}
            NodeKind::Var { .. } => {
                if !out.contains(self) {
                    out.push(self.clone());
                }
            }
            NodeKind::Mul(a, _)
            | NodeKind::Div(a, _)
            | NodeKind::Mod(a, _)
            | NodeKind::Lt(a, _) => a.collect_vars(out),
            NodeKind::Sum(terms) | NodeKind::And(terms) => {
                terms.iter().for_each(|t| t.collect_vars(out))
            }
        }
    }

    /// Replaces the variables named in `map` and simplifies the result again.
    pub fn substitute(&self, map: &HashMap<String, Node>) -> Node {
        let sub = |n: &Node| n.substitute(map);
        match self.kind() {
            NodeKind::Num(_) => self.clone(),
            NodeKind::Var { name, .. } => map.get(&**name).cloned().unwrap_or_else(|| self.clone()),
            NodeKind::Mul(a, b) => sub(a).mul_i(*b),
            NodeKind::Div(a, b) => sub(a).div_i(*b),
            NodeKind::Mod(a, b) => sub(a).mod_i(*b),
            NodeKind::Lt(a, b) => sub(a).lt_i(*b),
            NodeKind::Sum(terms) => Node::sum(terms.iter().map(sub).collect()),
            NodeKind::And(terms) => Node::and(terms.iter().map(sub).collect()),
        }
    }
}
