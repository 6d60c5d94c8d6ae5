//! Topological order of a graph's nodes, checking that every value read is defined once.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};

use super::error::OnnxError;
use super::model::OnnxNode;

/// Sorts `nodes` so each comes after the producers of its inputs, keeping file order where it
/// can. `defined` are the values the graph itself provides (inputs and initializers).
pub(crate) fn sort_nodes<'a>(
    nodes: Vec<OnnxNode>,
    defined: impl IntoIterator<Item = &'a str>,
) -> Result<Vec<OnnxNode>, OnnxError> {
    let defined: HashSet<&str> = defined.into_iter().collect();
    let mut producer: HashMap<&str, usize> = HashMap::new();
    for (i, node) in nodes.iter().enumerate() {
        for out in node.outputs.iter().filter(|o| !o.is_empty()) {
            if defined.contains(out.as_str()) || producer.insert(out, i).is_some() {
                return Err(OnnxError::DuplicateValue { value: out.clone() });
            }
        }
    }
    let mut waiting = vec![0usize; nodes.len()];
    let mut users: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    for (i, node) in nodes.iter().enumerate() {
        let mut deps = HashSet::new();
        for input in &node.reads() {
            match producer.get(input.as_str()) {
                Some(&p) => {
                    deps.insert(p);
                }
                None if defined.contains(input.as_str()) => {}
                None => {
                    return Err(OnnxError::UndefinedValue {
                        node: node.name.clone(),
                        op: node.op_type.clone(),
                        value: input.clone(),
                    })
                }
            }
        }
        waiting[i] = deps.len();
        for p in deps {
            users[p].push(i);
        }
    }
    let mut ready: BinaryHeap<Reverse<usize>> = (0..nodes.len())
        .filter(|&i| waiting[i] == 0)
        .map(Reverse)
        .collect();
    let mut order = Vec::with_capacity(nodes.len());
    while let Some(Reverse(i)) = ready.pop() {
        order.push(i);
        for &u in &users[i] {
            waiting[u] -= 1;
            if waiting[u] == 0 {
                ready.push(Reverse(u));
            }
        }
    }
    if order.len() < nodes.len() {
        let stuck = (0..nodes.len()).filter(|&i| waiting[i] > 0);
        let nodes = stuck.map(|i| nodes[i].name.clone()).collect();
        return Err(OnnxError::Cyclic { nodes });
    }
    let mut slots: Vec<Option<OnnxNode>> = nodes.into_iter().map(Some).collect();
    Ok(order.into_iter().filter_map(|i| slots[i].take()).collect())
}
