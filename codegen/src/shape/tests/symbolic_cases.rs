//! Hand-picked simplifications: the rendered form and the exact bounds of each.

use std::collections::HashMap;

use crate::shape::{render_to, Node, NodeKind, NodeRenderer};

fn var(name: &str, min: i64, max: i64) -> Node {
    Node::var(name, min, max)
}

#[track_caller]
fn check(node: &Node, min: i64, max: i64, text: &str) {
    assert_eq!(node.render(), text);
    assert_eq!((node.min(), node.max()), (min, max), "bounds of {text}");
}

#[test]
fn constants_fold() {
    check(&var("x", 3, 3), 3, 3, "3");
    check(&Node::num(-7).div_i(2), -4, -4, "-4");
    check(&Node::num(-7).mod_i(2), 1, 1, "1");
    check(&Node::num(7).div_i(-2), -4, -4, "-4");
    check(&Node::num(7).mod_i(-2), -1, -1, "-1");
    check(&(&Node::num(3) * 4).add_i(-12), 0, 0, "0");
}

#[test]
fn mul_by_0_1_and_negatives() {
    let a = var("a", 0, 8);
    check(&a.mul_i(0), 0, 0, "0");
    check(&a.mul_i(1), 0, 8, "a");
    check(&a.mul_i(2), 0, 16, "(a*2)");
    check(&a.mul_i(-3), -24, 0, "(a*-3)");
    check(&-&a, -8, 0, "(a*-1)");
}

#[test]
fn mul_of_mul_merges() {
    let a = var("a", 0, 5);
    check(&a.mul_i(10).mul_i(9), 0, 450, "(a*90)");
    check(&a.mul_i(-2).mul_i(-3), 0, 30, "(a*6)");
    check(&a.mul_i(-1).mul_i(-1), 0, 5, "a");
}

#[test]
fn mul_distributes_over_sum() {
    let (a, b) = (var("a", 0, 3), var("b", 0, 5));
    check(&(&a + &b).mul_i(3), 0, 24, "((a*3)+(b*3))");
    check(&(&(&a + &b) + 3).mul_i(-2), -22, -6, "((a*-2)+(b*-2)+-6)");
}

#[test]
fn sum_combines_like_terms_and_constants() {
    let (a, b) = (var("a", 0, 10), var("b", 0, 10));
    check(&(&a.mul_i(2) + &a.mul_i(3)), 0, 50, "(a*5)");
    check(&(&a + &a), 0, 20, "(a*2)");
    check(&(&a - &a), 0, 0, "0");
    check(
        &Node::sum(vec![Node::num(29), a.clone(), Node::num(-23)]),
        6,
        16,
        "(6+a)",
    );
    let nested = Node::sum(vec![
        &a + 1,
        Node::sum(vec![b.clone(), a.mul_i(-1)]),
        Node::num(-1),
    ]);
    check(&nested, 0, 10, "b");
    let flip = var("a", 0, 1);
    let cancel = Node::sum(vec![&flip.mul_i(-4) + 1, flip.mul_i(4)]);
    check(&cancel, 1, 1, "1");
}

#[test]
fn sum_keeps_first_seen_order_with_constant_last() {
    let (x, y) = (var("x", 0, 3), var("y", 0, 3));
    let s = Node::sum(vec![Node::num(2), y.clone(), x.mul_i(4), y.clone()]);
    let NodeKind::Sum(terms) = s.kind() else {
        panic!("not a sum: {s}")
    };
    let texts: Vec<String> = terms.iter().map(Node::render).collect();
    assert_eq!(texts, ["(y*2)", "(x*4)", "2"]);
    check(&s, 2, 20, "((x*4)+(y*2)+2)");
}

#[test]
fn div_and_mod_by_one() {
    let a = var("a", 0, 8);
    check(&a.div_i(1), 0, 8, "a");
    check(&a.mod_i(1), 0, 0, "0");
}

#[test]
fn div_and_mod_decided_by_bounds() {
    let x = var("x", 0, 3);
    check(&x.div_i(4), 0, 0, "0");
    check(&x.mod_i(4), 0, 3, "x");
    check(&var("a", 0, 6).mod_i(100), 0, 6, "a");
    let a = var("a", 1, 2);
    check(&(&a + 1).mod_i(2), 0, 1, "(-1+a)");
    check(&var("a", 0, 20).mod_i(10), 0, 9, "(a%10)");
    check(&var("a", 0, 7).div_i(2), 0, 3, "(a//2)");
}

#[test]
fn div_of_sum_factors_out_multiples() {
    let x = var("x", 0, 7);
    check(&(&x.mul_i(4) + &var("y", 0, 3)).div_i(4), 0, 7, "x");
    check(
        &(&x.mul_i(4) + &var("y", 0, 7)).div_i(4),
        0,
        8,
        "((y//4)+x)",
    );
    check(&(&x.mul_i(4) + 7).div_i(4), 1, 8, "(1+x)");
    check(&(&x.mul_i(4) + 3).div_i(16), 0, 1, "(x//4)");
    let (a, b) = (var("a", 0, 7), var("b", 0, 3));
    check(
        &(&a.mul_i(4) + &b.mul_i(4)).div_i(2),
        0,
        20,
        "((a*2)+(b*2))",
    );
    check(
        &(&a.mul_i(5) + &b.mul_i(4)).div_i(2),
        0,
        23,
        "(((a*5)//2)+(b*2))",
    );
    check(
        &(&a.mul_i(5) + &b.mul_i(5)).div_i(2),
        0,
        25,
        "(((a*5)+(b*5))//2)",
    );
    check(&(&a + &b).div_i(2), 0, 5, "((a+b)//2)");
}

#[test]
fn div_of_sum_through_the_gcd() {
    let (a, b) = (var("a", 0, 7), var("b", 0, 7));
    check(
        &(&a.mul_i(6) + &b.mul_i(6)).div_i(16),
        0,
        5,
        "(((a*3)+(b*3))//8)",
    );
    let (a, b) = (var("a", 0, 10), var("b", 0, 10));
    let s = Node::sum(vec![Node::num(-40), a.mul_i(2), b.mul_i(40)]);
    check(&s.div_i(40), -1, 9, "(-1+b)");
}

#[test]
fn div_of_mul() {
    let a = var("a", 0, 10);
    check(&a.mul_i(4).div_i(4), 0, 10, "a");
    check(&a.mul_i(8).div_i(4), 0, 20, "(a*2)");
    check(&a.mul_i(4).div_i(8), 0, 5, "(a//2)");
    check(&a.mul_i(-4).div_i(2), -20, 0, "(a*-2)");
}

#[test]
fn nested_div_and_mod() {
    check(&var("a", 0, 1800).div_i(10).div_i(9), 0, 20, "(a//90)");
    let a = var("a", 0, 31);
    check(&a.mod_i(12).mod_i(4), 0, 3, "(a%4)");
    check(&a.mod_i(4).mod_i(12), 0, 3, "(a%4)");
    check(&a.mul_i(4).mod_i(12).mod_i(4), 0, 0, "0");
    check(&a.mod_i(8).div_i(2), 0, 3, "((a//2)%4)");
    check(
        &var("idx", 0, 16).mul_i(4).mod_i(8).div_i(4),
        0,
        1,
        "(idx%2)",
    );
}

#[test]
fn mod_of_mul_and_sum() {
    let a = var("a", 0, 5);
    check(&a.mul_i(10).mod_i(9), 0, 5, "a");
    check(&(&var("b", 0, 2) + &a.mul_i(10)).mod_i(9), 0, 7, "(a+b)");
    let (a, b) = (var("a", 0, 7), var("b", 0, 3));
    check(
        &(&a.mul_i(100) + &b.mul_i(50)).mod_i(100),
        0,
        99,
        "((b*50)%100)",
    );
}

#[test]
fn mod_of_sum_with_negative_constant() {
    let (a, b) = (var("a", 0, 10), var("b", 0, 10));
    let s = Node::sum(vec![Node::num(-29), a.clone(), b.mul_i(28)]);
    check(&s.mod_i(28), 0, 27, "((27+a)%28)");
    let x = var("x", 0, 4);
    check(&(&x.mul_i(-3) + 10).mod_i(4), 0, 3, "(((x%4)+2)%4)");
}

#[test]
fn negative_numerators_are_shifted() {
    check(
        &var("idx", 0, 9).mul_i(-10).div_i(11),
        -9,
        0,
        "((((idx*-10)+99)//11)+-9)",
    );
    check(
        &var("a", 0, 2).mul_i(-1).div_i(3),
        -1,
        0,
        "((((a*-1)+3)//3)+-1)",
    );
    check(&var("a", 0, 7).div_i(-2), -4, 0, "((((a*-1)+8)//2)+-4)");
    let flipped = &-&var("x", 0, 3) + 3;
    check(&flipped, 0, 3, "((x*-1)+3)");
    check(&flipped.div_i(2), 0, 1, "(((x*-1)+3)//2)");
}

#[test]
fn mod_by_negative_takes_the_divisor_sign() {
    let x = var("x", 0, 5);
    let m = x.mod_i(-3);
    check(&m, -2, 0, "(((x*2)%3)*-1)");
    for v in 0..=5 {
        assert_eq!(m.eval(&|_| v), v - (-3) * (v as f64 / -3.0).floor() as i64);
    }
}

#[test]
fn lt_folds_by_bounds() {
    let a = var("a", 3, 8);
    check(&a.lt_i(77), 1, 1, "1");
    check(&a.lt_i(9), 1, 1, "1");
    check(&a.lt_i(8), 0, 1, "(a<8)");
    check(&a.lt_i(3), 0, 0, "0");
    check(&var("a", 0, 6).lt_i(-3), 0, 0, "0");
}

#[test]
fn ge_is_lt_of_the_negation() {
    let a = var("a", 3, 8);
    check(&a.ge_i(77), 0, 0, "0");
    check(&a.ge_i(8), 0, 1, "((a*-1)<-7)");
    check(&a.ge_i(4), 0, 1, "((a*-1)<-3)");
    check(&a.ge_i(3), 1, 1, "1");
}

#[test]
fn lt_of_mul_divides_the_bound() {
    let a = var("a", 0, 5);
    check(&a.mul_i(4).lt_i(13), 0, 1, "(a<4)");
    check(&a.mul_i(4).lt_i(16), 0, 1, "(a<4)");
    check(&a.mul_i(-4).lt_i(-11), 0, 1, "((a*-1)<-2)");
    check(&a.mul_i(4).ge_i(13), 0, 1, "((a*-1)<-3)");
}

#[test]
fn lt_of_sum_divides_through_the_gcd() {
    let f4 = var("f4", 0, 3);
    check(
        &(&var("idx1", 0, 511).mul_i(4) + &f4).lt_i(512),
        0,
        1,
        "(idx1<128)",
    );
    let a = var("a", 0, 7);
    check(&(&a.mul_i(4) + &var("b", 0, 3)).lt_i(16), 0, 1, "(a<4)");
    check(
        &(&a.mul_i(4) + &var("b", 0, 4)).lt_i(16),
        0,
        1,
        "(((a*4)+b)<16)",
    );
    let s = &var("uidx", 0, 3) + &var("a", 0, 1529).mul_i(12);
    check(&s.lt_i(268), 0, 1, "(a<23)");
    check(&(&var("a", 0, 6) + 2).lt_i(3), 0, 1, "(a<1)");
    let (x, y, z) = (var("x", 0, 3), var("y", 0, 3), var("z", 0, 1));
    let s = Node::sum(vec![x.mul_i(4), y.mul_i(2), z]);
    check(&s.lt_i(6), 0, 1, "(((x*2)+y)<3)");
}

#[test]
fn and_drops_ones_and_folds_zeros() {
    let a = var("a", 0, 1);
    check(&Node::and(vec![Node::num(0), a.clone()]), 0, 0, "0");
    check(&Node::and(vec![Node::num(1), a.clone()]), 0, 1, "a");
    check(&Node::and(vec![]), 1, 1, "1");
    let both = Node::and(vec![var("b", 0, 5).lt_i(2), var("a", 0, 5).lt_i(3)]);
    check(&both, 0, 1, "((a<3) and (b<2))");
    check(&Node::and(vec![var("x", 0, 3)]), 0, 1, "((x*-1)<0)");
}

#[test]
fn products_of_two_nodes() {
    let (x, y) = (var("x", 0, 2), var("y", 1, 3));
    check(&x.mul(&Node::num(3)), 0, 6, "(x*3)");
    check(&Node::num(-2).mul(&x), -4, 0, "(x*-2)");
    let (p, q) = (x.lt_i(1), y.lt_i(2));
    check(&(&p * &q), 0, 1, "((x<1) and (y<2))");
    let xy = x.mul(&y);
    assert_eq!((xy.min(), xy.max()), (0, 6));
    for (vx, vy) in [(0, 1), (1, 1), (2, 1), (1, 2), (2, 3), (0, 3)] {
        let v = xy.eval(&|name| if name == "x" { vx } else { vy });
        assert_eq!(v, vx * vy, "x={vx} y={vy} in {xy}");
    }
}

#[test]
fn div_of_mul_and_mod_keeps_the_sum() {
    let x = var("x", 0, 31);
    let s = &x.div_i(2).mul_i(2) + &x.mod_i(2);
    check(&s, 0, 31, "(((x//2)*2)+(x%2))");
}

#[test]
fn eval_uses_floor_semantics() {
    let x = var("x", 0, 5);
    let e = (&x - 3).div_i(2);
    assert_eq!(e.eval(&|_| 0), -2);
    assert_eq!(e.eval(&|_| 5), 1);
    let m = (&x - 3).mod_i(4);
    assert_eq!(m.eval(&|_| 0), 1);
}

#[test]
fn substitute_simplifies_again() {
    let (x, y) = (var("x", 0, 7), var("y", 0, 3));
    let e = &x.mul_i(4) + &y;
    let map = HashMap::from([("y".to_string(), Node::num(2))]);
    check(&e.substitute(&map), 2, 30, "((x*4)+2)");
    check(&e.substitute(&map).div_i(4), 0, 7, "x");
    let z = var("z", 0, 3);
    let map = HashMap::from([("x".to_string(), z.mul_i(2))]);
    check(&x.div_i(2).mod_i(4).substitute(&map), 0, 3, "z");
    let all = HashMap::from([
        ("x".to_string(), Node::num(5)),
        ("y".to_string(), Node::num(1)),
    ]);
    check(&e.lt_i(20).substitute(&all), 0, 0, "0");
    let gate = Node::and(vec![x.lt_i(3), y.lt_i(2)]);
    let map = HashMap::from([("x".to_string(), Node::num(4))]);
    check(&gate.substitute(&map), 0, 0, "0");
}

#[test]
fn vars_in_first_seen_order() {
    let (x, y) = (var("x", 0, 7), var("y", 0, 3));
    let e = Node::sum(vec![y.div_i(2), x.mul_i(2), y.clone()]).lt_i(9);
    assert_eq!(e.vars(), vec![y, x]);
    assert!(Node::num(4).vars().is_empty());
}

/// Renders to C-like text in the node's own order, to show the walk `render_to` makes.
struct CText;

impl NodeRenderer<String> for CText {
    fn num(&self, v: i64) -> String {
        v.to_string()
    }
    fn var(&self, name: &str, min: i64, max: i64) -> String {
        format!("{name}[{min}..{max}]")
    }
    fn mul(&self, a: String, b: i64) -> String {
        format!("({a} * {b})")
    }
    fn div(&self, a: String, b: i64) -> String {
        format!("({a} / {b})")
    }
    fn modulo(&self, a: String, b: i64) -> String {
        format!("({a} % {b})")
    }
    fn lt(&self, a: String, b: i64) -> String {
        format!("({a} < {b})")
    }
    fn add(&self, a: String, b: String) -> String {
        format!("({a} + {b})")
    }
    fn and(&self, a: String, b: String) -> String {
        format!("({a} && {b})")
    }
}

#[test]
fn render_to_folds_left_in_node_order() {
    let (x, y) = (var("x", 0, 7), var("y", 0, 3));
    let e = Node::sum(vec![y.clone(), x.mul_i(4), Node::num(1)]);
    assert_eq!(render_to(&e, &CText), "((y[0..3] + (x[0..7] * 4)) + 1)");
    let gate = Node::and(vec![x.lt_i(3), y.mod_i(2).lt_i(1), e.lt_i(20)]);
    let text = render_to(&gate, &CText);
    assert!(
        text.starts_with("(((x[0..7] < 3) && ((y[0..3] % 2) < 1)) && "),
        "{text}"
    );
}

#[test]
#[should_panic(expected = "division of x by zero")]
fn div_by_zero_panics() {
    var("x", 0, 3).div_i(0);
}

#[test]
#[should_panic(expected = "invalid range")]
fn negative_variables_are_refused() {
    var("x", -1, 3);
}

#[test]
fn lt_of_sum_keeps_terms_that_reach_the_gcd() {
    let (x, y) = (var("x", 0, 5), var("y", 0, 2));
    let lt = (&x.mul_i(2) + &y).lt_i(4);
    check(&lt, 0, 1, "(((x*2)+y)<4)");
    assert_eq!(lt.eval(&|n| if n == "x" { 1 } else { 2 }), 0);
}

#[test]
fn nodes_are_shareable_across_threads() {
    fn shareable<T: Send + Sync + Clone>() {}
    shareable::<Node>();
}
