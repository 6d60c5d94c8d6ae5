//! Random expressions: the simplified node must evaluate like the unsimplified construction,
//! within its bounds, at every assignment of its variables.

use std::collections::HashMap;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};

use crate::shape::{render_to, Node, NodeKind, NodeRenderer};

/// An unsimplified construction, evaluated naively.
#[derive(Clone, Debug)]
enum Expr {
    Num(i64),
    Var(usize),
    Add(Box<Expr>, Box<Expr>),
    Sub(Box<Expr>, Box<Expr>),
    MulI(Box<Expr>, i64),
    MulN(Box<Expr>, Box<Expr>),
    Div(Box<Expr>, i64),
    Mod(Box<Expr>, i64),
    Lt(Box<Expr>, i64),
    Ge(Box<Expr>, i64),
    Neg(Box<Expr>),
    Sum(Vec<Expr>),
    And(Vec<Expr>),
}

fn floor_div(a: i64, b: i64) -> i64 {
    let q = a / b;
    if a % b != 0 && (a < 0) != (b < 0) {
        q - 1
    } else {
        q
    }
}

impl Expr {
    fn naive(&self, env: &[i64]) -> i64 {
        match self {
            Expr::Num(v) => *v,
            Expr::Var(i) => env[*i],
            Expr::Add(a, b) => a.naive(env) + b.naive(env),
            Expr::Sub(a, b) => a.naive(env) - b.naive(env),
            Expr::MulI(a, k) => a.naive(env) * k,
            Expr::MulN(a, b) => a.naive(env) * b.naive(env),
            Expr::Div(a, k) => floor_div(a.naive(env), *k),
            Expr::Mod(a, k) => a.naive(env) - k * floor_div(a.naive(env), *k),
            Expr::Lt(a, k) => i64::from(a.naive(env) < *k),
            Expr::Ge(a, k) => i64::from(a.naive(env) >= *k),
            Expr::Neg(a) => -a.naive(env),
            Expr::Sum(xs) => xs.iter().map(|x| x.naive(env)).sum(),
            Expr::And(xs) => i64::from(xs.iter().all(|x| x.naive(env) != 0)),
        }
    }

    fn build(&self, vars: &[Node]) -> Node {
        let b = |e: &Expr| e.build(vars);
        match self {
            Expr::Num(v) => Node::num(*v),
            Expr::Var(i) => vars[*i].clone(),
            Expr::Add(x, y) => b(x).add(&b(y)),
            Expr::Sub(x, y) => &b(x) - &b(y),
            Expr::MulI(x, k) => b(x).mul_i(*k),
            Expr::MulN(x, y) => b(x).mul(&b(y)),
            Expr::Div(x, k) => b(x).div_i(*k),
            Expr::Mod(x, k) => &b(x) % *k,
            Expr::Lt(x, k) => b(x).lt_i(*k),
            Expr::Ge(x, k) => b(x).ge_i(*k),
            Expr::Neg(x) => -&b(x),
            Expr::Sum(xs) => Node::sum(xs.iter().map(b).collect()),
            Expr::And(xs) => Node::and(xs.iter().map(b).collect()),
        }
    }
}

fn divisor() -> impl Strategy<Value = i64> {
    prop_oneof![6 => 2i64..=6, 1 => Just(1), 2 => -4i64..=-1]
}

fn leaf(n_vars: usize) -> impl Strategy<Value = Expr> + Clone {
    prop_oneof![1 => (-6i64..=6).prop_map(Expr::Num), 3 => (0..n_vars).prop_map(Expr::Var)]
}

/// Small-range operands for products of two nodes, which grow with both ranges.
fn small(n_vars: usize) -> impl Strategy<Value = Box<Expr>> {
    let lt = (leaf(n_vars), -2i64..6).prop_map(|(e, k)| Expr::Lt(Box::new(e), k));
    prop_oneof![leaf(n_vars), lt].prop_map(Box::new)
}

/// `Σ var*k + c`, the shape of most index expressions.
fn affine(n_vars: usize) -> impl Strategy<Value = Expr> + Clone {
    let coeff = prop_oneof![2 => Just(1i64), 2 => 2i64..=4, 1 => -3i64..=-1];
    let term = (0..n_vars, coeff).prop_map(|(v, k)| Expr::MulI(Box::new(Expr::Var(v)), k));
    (prop::collection::vec(term, 1..=3), -4i64..=8).prop_map(|(mut terms, c)| {
        terms.push(Expr::Num(c));
        Expr::Sum(terms)
    })
}

/// Expressions at most `depth` operations deep, mostly as deep as that.
fn expr(n_vars: usize, depth: u32) -> BoxedStrategy<Expr> {
    if depth == 0 {
        return prop_oneof![2 => leaf(n_vars), 1 => affine(n_vars)].boxed();
    }
    let inner = expr(n_vars, depth - 1);
    let bx = || inner.clone().prop_map(Box::new);
    prop_oneof![
        1 => leaf(n_vars),
        1 => affine(n_vars),
        3 => (bx(), bx()).prop_map(|(a, b)| Expr::Add(a, b)),
        1 => (bx(), bx()).prop_map(|(a, b)| Expr::Sub(a, b)),
        3 => (bx(), -4i64..=4).prop_map(|(a, k)| Expr::MulI(a, k)),
        1 => (small(n_vars), small(n_vars)).prop_map(|(a, b)| Expr::MulN(a, b)),
        3 => (bx(), divisor()).prop_map(|(a, k)| Expr::Div(a, k)),
        3 => (bx(), divisor()).prop_map(|(a, k)| Expr::Mod(a, k)),
        1 => (bx(), -2i64..16).prop_map(|(a, k)| Expr::Lt(a, k)),
        1 => (bx(), -2i64..16).prop_map(|(a, k)| Expr::Ge(a, k)),
        1 => bx().prop_map(Expr::Neg),
        2 => prop::collection::vec(inner.clone(), 0..4).prop_map(Expr::Sum),
        1 => prop::collection::vec(inner.clone(), 0..3).prop_map(Expr::And),
    ]
    .boxed()
}

/// Ranges of one to three variables: `min` in `0..4`, mostly 0, up to 8 steps wide.
fn ranges() -> impl Strategy<Value = Vec<(i64, i64)>> {
    let lo = prop_oneof![3 => Just(0i64), 1 => 1i64..4];
    prop::collection::vec((lo, 0i64..9).prop_map(|(lo, w)| (lo, lo + w)), 1..=3)
}

/// Every assignment of values to variables with these ranges.
fn assignments(ranges: &[(i64, i64)]) -> Vec<Vec<i64>> {
    let mut out = vec![vec![]];
    for &(lo, hi) in ranges {
        out = out
            .into_iter()
            .flat_map(|a| (lo..=hi).map(move |v| [a.clone(), vec![v]].concat()))
            .collect();
    }
    out
}

/// The invariants every constructor promises (see the symbolic module).
fn check_invariants(n: &Node) {
    assert!(
        n.min() < n.max() || n.as_num().is_some(),
        "unfolded constant {n:?}"
    );
    match n.kind() {
        NodeKind::Num(_) | NodeKind::Var { .. } => {}
        NodeKind::Mul(a, k) => {
            assert!(*k != 0 && *k != 1 && a.min() >= 0, "bad product {n:?}");
            check_invariants(a);
        }
        NodeKind::Div(a, k) | NodeKind::Mod(a, k) => {
            assert!(*k > 1 && a.min() >= 0, "bad division {n:?}");
            check_invariants(a);
        }
        NodeKind::Lt(a, _) => check_invariants(a),
        NodeKind::Sum(ts) => {
            let nums = ts.iter().filter(|t| t.as_num().is_some()).count();
            assert!(ts.len() >= 2 && nums <= 1, "bad sum {n:?}");
            assert!(
                nums == 0 || ts.last().unwrap().as_num().is_some(),
                "constant not last {n:?}"
            );
            assert!(
                ts.iter().all(|t| !matches!(t.kind(), NodeKind::Sum(_))),
                "nested {n:?}"
            );
            ts.iter().for_each(check_invariants);
        }
        NodeKind::And(ts) => {
            assert!(
                ts.len() >= 2 && ts.iter().all(|t| t.min() >= 0 && t.max() <= 1),
                "{n:?}"
            );
            ts.iter().for_each(check_invariants);
        }
    }
}

/// Evaluates through `render_to`, for one fixed assignment.
struct Evaluator<'a>(&'a dyn Fn(&str) -> i64);

impl NodeRenderer<i64> for Evaluator<'_> {
    fn num(&self, v: i64) -> i64 {
        v
    }
    fn var(&self, name: &str, _: i64, _: i64) -> i64 {
        (self.0)(name)
    }
    fn mul(&self, a: i64, b: i64) -> i64 {
        a * b
    }
    fn div(&self, a: i64, b: i64) -> i64 {
        assert!(a >= 0, "negative numerator");
        a / b
    }
    fn modulo(&self, a: i64, b: i64) -> i64 {
        assert!(a >= 0, "negative numerator");
        a % b
    }
    fn lt(&self, a: i64, b: i64) -> i64 {
        i64::from(a < b)
    }
    fn add(&self, a: i64, b: i64) -> i64 {
        a + b
    }
    fn and(&self, a: i64, b: i64) -> i64 {
        a * b
    }
}

fn config() -> Config {
    Config {
        cases: 3000,
        rng_seed: RngSeed::Fixed(0x6b69_6c6e),
        failure_persistence: None,
        ..Config::default()
    }
}

/// Index-like expressions: an affine sum through a chain of up to four constant operations.
fn chained(n_vars: usize) -> impl Strategy<Value = Expr> {
    let step = (0u8..8, divisor(), affine(n_vars));
    (affine(n_vars), prop::collection::vec(step, 1..=4)).prop_map(|(start, steps)| {
        steps.into_iter().fold(start, |e, (op, k, other)| {
            let e = Box::new(e);
            match op {
                0 => Expr::Div(e, k),
                1 => Expr::Mod(e, k),
                2 | 3 => Expr::Lt(e, k * 3),
                4 | 5 => Expr::Ge(e, k * 2),
                6 => Expr::MulI(e, k),
                _ => Expr::Add(e, Box::new(other)),
            }
        })
    })
}

fn check_expr(ranges: &[(i64, i64)], e: &Expr) -> Result<(), TestCaseError> {
    let names: Vec<String> = (0..ranges.len()).map(|i| format!("v{i}")).collect();
    let vars: Vec<Node> = names
        .iter()
        .zip(ranges)
        .map(|(n, &(lo, hi))| Node::var(n, lo, hi))
        .collect();
    let node = e.build(&vars);
    check_invariants(&node);
    for env in assignments(ranges) {
        let want = e.naive(&env);
        let lookup = |name: &str| env[names.iter().position(|n| n == name).unwrap()];
        let got = node.eval(&lookup);
        prop_assert_eq!(got, want, "{} at {:?}", node, env);
        prop_assert!(
            node.min() <= got && got <= node.max(),
            "{:?} at {:?}",
            node,
            env
        );
        prop_assert_eq!(render_to(&node, &Evaluator(&lookup)), want);
        let map: HashMap<String, Node> = names
            .iter()
            .cloned()
            .zip(env.iter().map(|&v| Node::num(v)))
            .collect();
        prop_assert_eq!(node.substitute(&map).as_num(), Some(want));
    }
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn simplified_nodes_evaluate_like_their_construction(
        (ranges, e) in ranges().prop_flat_map(|r| (Just(r.clone()), expr(r.len(), 4)))
    ) {
        check_expr(&ranges, &e)?;
    }

    #[test]
    fn index_expressions_evaluate_like_their_construction(
        (ranges, e) in ranges().prop_flat_map(|r| (Just(r.clone()), chained(r.len())))
    ) {
        check_expr(&ranges, &e)?;
    }
}
