//! Expansion of upcast axes: an index that mentions an upcast variable (`_uidx*`) stands for
//! one value per setting of that variable; these helpers enumerate them.

use crate::shape::{Node, NodeKind};
use std::collections::HashMap;

/// Prefix of the variables of upcast axes.
pub const UPCAST_PREFIX: &str = "_uidx";

fn var_name(n: &Node) -> Option<&str> {
    match n.kind() {
        NodeKind::Var { name, .. } => Some(name),
        _ => None,
    }
}

/// The upcast variable `node` depends on (the first one), or 0.
pub fn expand_idx(node: &Node) -> Node {
    node.vars()
        .into_iter()
        .find(|v| var_name(v).is_some_and(|n| n.starts_with(UPCAST_PREFIX)))
        .unwrap_or_else(|| Node::num(0))
}

/// The upcast variable of each node, each variable kept only at its first occurrence.
pub fn expand_idxs(nodes: &[Node]) -> Vec<Node> {
    let mut out: Vec<Node> = Vec::with_capacity(nodes.len());
    for n in nodes {
        let v = expand_idx(n);
        if var_name(&v).is_some() && out.contains(&v) {
            out.push(Node::num(0));
        } else {
            out.push(v);
        }
    }
    out
}

/// Every setting of `idxs` (variables or constants), the first one varying fastest.
pub fn iter_idxs(idxs: &[Node]) -> Vec<Vec<i64>> {
    let mut combos: Vec<Vec<i64>> = vec![vec![]];
    for v in idxs {
        let mut next = Vec::with_capacity(combos.len() * (v.max() - v.min() + 1) as usize);
        for x in v.min()..=v.max() {
            for c in &combos {
                let mut c = c.clone();
                c.push(x);
                next.push(c);
            }
        }
        combos = next;
    }
    combos
}

/// `node` with the variables of `idxs` substituted by each of their settings, in
/// [`iter_idxs`] order.
pub fn expand_node(node: &Node, idxs: &[Node]) -> Vec<Node> {
    iter_idxs(idxs)
        .into_iter()
        .map(|rep| {
            let map: HashMap<String, Node> = idxs
                .iter()
                .zip(&rep)
                .filter_map(|(k, &v)| var_name(k).map(|n| (n.to_string(), Node::num(v))))
                .collect();
            if map.is_empty() {
                node.clone()
            } else {
                node.substitute(&map)
            }
        })
        .collect()
}

/// [`expand_node`] over the node's own upcast variable.
pub fn expand_self(node: &Node) -> Vec<Node> {
    expand_node(node, &[expand_idx(node)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_variable_varies_fastest() {
        let a = Node::var("_uidx0", 0, 1);
        let b = Node::var("_uidx1", 0, 2);
        let combos = iter_idxs(&[a.clone(), b.clone()]);
        assert_eq!(
            combos,
            vec![
                vec![0, 0],
                vec![1, 0],
                vec![0, 1],
                vec![1, 1],
                vec![0, 2],
                vec![1, 2]
            ]
        );
        let e = expand_node(&a.add(&b.mul_i(2)), &[a, b]);
        let vals: Vec<i64> = e.iter().map(|n| n.as_num().unwrap()).collect();
        assert_eq!(vals, vec![0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn repeated_upcast_variables_expand_once() {
        let a = Node::var("_uidx0", 0, 3);
        let g = Node::var("gidx0", 0, 9);
        let idxs = expand_idxs(&[a.clone(), a.mul_i(2), g]);
        assert_eq!(idxs[0], a);
        assert_eq!(idxs[1], Node::num(0));
        assert_eq!(idxs[2], Node::num(0));
    }
}
