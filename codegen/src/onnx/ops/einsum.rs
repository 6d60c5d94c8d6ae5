//! Einsum: each operand's labels are lined up on one index space (repeated labels of an
//! operand take its diagonal), the operands multiplied with broadcasting, and the labels not
//! in the output summed.

use super::ctx::{invalid, Ctx, OpError, Value};
use super::OpBuilder;
use crate::graph::tensor::broadcast_to;
use crate::graph::{Graph, Lazy};
use crate::ops::{BinaryOp, ReduceOp};

pub(super) const OPS: &[(&str, OpBuilder)] = &[("Einsum", einsum)];

type Out = Result<Vec<Value>, OpError>;

/// The label of broadcast (`...`) dim `k`, counted from the left of the widest ellipsis.
fn ellipsis_label(k: usize) -> char {
    char::from_u32(0x100 + k as u32).unwrap_or('?')
}

/// An operand's labels with its `...` expanded to the last `rank - letters` of `width` labels.
fn expand_term(term: &str, rank: Option<usize>, width: usize) -> Result<Vec<char>, OpError> {
    let parts: Vec<&str> = term.split("...").collect();
    match parts.as_slice() {
        [only] => Ok(only.chars().collect()),
        [before, after] => {
            let letters = before.chars().count() + after.chars().count();
            let e = match rank {
                Some(r) => r
                    .checked_sub(letters)
                    .ok_or_else(|| invalid(format!("term {term:?} has more labels than dims")))?,
                None => width,
            };
            let mut v: Vec<char> = before.chars().collect();
            v.extend((width - e..width).map(ellipsis_label));
            v.extend(after.chars());
            Ok(v)
        }
        _ => Err(invalid(format!("term {term:?} has more than one ellipsis"))),
    }
}

/// Takes the diagonal of every label repeated in `labels`, leaving each label once.
fn diagonals(mut x: Lazy, mut labels: Vec<char>) -> Result<(Lazy, Vec<char>), OpError> {
    loop {
        let dup = (0..labels.len()).find_map(|i| {
            (i + 1..labels.len())
                .find(|&j| labels[j] == labels[i])
                .map(|j| (i, j))
        });
        let Some((i, j)) = dup else {
            return Ok((x, labels));
        };
        let s = x.shape().to_vec();
        if s[i] != s[j] {
            return Err(invalid(format!(
                "label {:?} has sizes {} and {}",
                labels[i], s[i], s[j]
            )));
        }
        let n = s[i];
        // Move i and j last, flatten them, and step by n + 1.
        let mut perm: Vec<usize> = (0..s.len()).filter(|&a| a != i && a != j).collect();
        perm.extend([i, j]);
        let mut lead: Vec<usize> = perm[..s.len() - 2].iter().map(|&a| s[a]).collect();
        let mut flat = lead.clone();
        flat.push(n * n);
        let y = x.permute(&perm)?.reshape(&flat)?;
        let y = if n > 1 {
            let mut mul = vec![1; flat.len()];
            *mul.last_mut().unwrap_or(&mut 1) = (n + 1) as i64;
            let mut arg: Vec<(usize, usize)> = flat.iter().map(|&d| (0, d)).collect();
            if let Some(a) = arg.last_mut() {
                *a = (0, (n - 1) * (n + 1) + 1);
            }
            y.shrink(&arg)?.stride(&mul)?
        } else {
            y
        };
        lead.push(n);
        x = y.reshape(&lead)?;
        let mut nl: Vec<char> = perm[..s.len() - 2].iter().map(|&a| labels[a]).collect();
        nl.push(labels[i]);
        labels = nl;
    }
}

/// Each operand with its labels, and each label's size.
type Labeled = (Vec<(Lazy, Vec<char>)>, Vec<(char, usize)>);

fn einsum(ctx: &mut Ctx) -> Out {
    ctx.only_outputs(1)?;
    let eq: String = ctx
        .attrs()
        .string("equation")?
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    let (lhs, rhs) = match eq.split_once("->") {
        Some((l, r)) => (l.to_string(), Some(r.to_string())),
        None => (eq.clone(), None),
    };
    let terms: Vec<&str> = lhs.split(',').collect();
    let xs = ctx.tensors()?;
    if terms.len() != xs.len() {
        return Err(invalid(format!(
            "equation {eq:?} has {} operands, the node {}",
            terms.len(),
            xs.len()
        )));
    }
    let width = ellipsis_width(&terms, &xs)?;
    let (ops, sizes) = label_operands(&terms, &xs, width)?;
    let out = output_labels(rhs.as_deref(), width, &sizes, &terms)?;
    let mut order = out.clone();
    order.extend(sizes.iter().map(|&(c, _)| c).filter(|c| !out.contains(c)));
    let size = |c: char| sizes.iter().find(|(l, _)| *l == c).map_or(1, |&(_, s)| s);
    let full: Vec<usize> = order.iter().map(|&c| size(c)).collect();
    let g = &mut *ctx.graph;
    let prod = multiply(g, ops, &order, &full)?;
    let axes: Vec<usize> = (out.len()..order.len()).collect();
    let r = if axes.is_empty() {
        prod
    } else {
        g.reduce(ReduceOp::Sum, &prod, &axes)?
    };
    let shape: Vec<usize> = out.iter().map(|&c| size(c)).collect();
    Ok(vec![Value::Tensor(r.reshape(&shape)?)])
}

/// The number of dims the widest ellipsis of `terms` stands for.
fn ellipsis_width(terms: &[&str], xs: &[Lazy]) -> Result<usize, OpError> {
    let mut width = 0;
    for (t, x) in terms.iter().zip(xs) {
        if t.contains("...") {
            let letters = t.replace("...", "").chars().count();
            let r = x.shape().len();
            width = width.max(
                r.checked_sub(letters)
                    .ok_or_else(|| invalid(format!("term {t:?} has more labels than dims")))?,
            );
        }
    }
    Ok(width)
}

/// Each operand with its diagonals taken and its labels, and each label's size (a size-1
/// dim broadcasts).
fn label_operands(terms: &[&str], xs: &[Lazy], width: usize) -> Result<Labeled, OpError> {
    let mut ops = Vec::with_capacity(xs.len());
    let mut sizes: Vec<(char, usize)> = Vec::new();
    for (t, x) in terms.iter().zip(xs) {
        let labels = expand_term(t, Some(x.shape().len()), width)?;
        if labels.len() != x.shape().len() {
            return Err(invalid(format!(
                "term {t:?} does not match operand {:?}",
                x.shape()
            )));
        }
        let (y, labels) = diagonals(x.clone(), labels)?;
        for (&l, &d) in labels.iter().zip(y.shape()) {
            match sizes.iter_mut().find(|(c, _)| *c == l) {
                Some((_, s)) if *s == d || d == 1 => {}
                Some((_, s)) if *s == 1 => *s = d,
                Some((_, s)) => {
                    return Err(invalid(format!("label {l:?} has sizes {s} and {d}")));
                }
                None => sizes.push((l, d)),
            }
        }
        ops.push((y, labels));
    }
    Ok((ops, sizes))
}

/// The output's labels: the right-hand side's, or without one the ellipsis and then the
/// letters that occur once, sorted. Each must be in an operand.
fn output_labels(
    rhs: Option<&str>,
    width: usize,
    sizes: &[(char, usize)],
    terms: &[&str],
) -> Result<Vec<char>, OpError> {
    let out: Vec<char> = match rhs {
        Some(r) => expand_term(r, None, width)?,
        None => {
            let mut v: Vec<char> = (0..width).map(ellipsis_label).collect();
            let mut once: Vec<char> = sizes
                .iter()
                .map(|&(c, _)| c)
                .filter(|c| c.is_ascii_alphabetic())
                .filter(|c| terms.iter().map(|t| t.matches(*c).count()).sum::<usize>() == 1)
                .collect();
            once.sort_unstable();
            v.extend(once);
            v
        }
    };
    for c in &out {
        if !sizes.iter().any(|(l, _)| l == c) {
            return Err(invalid(format!("output label {c:?} is in no operand")));
        }
    }
    Ok(out)
}

/// The product of the operands, each permuted into `order` and broadcast to `full`.
fn multiply(
    g: &mut Graph,
    ops: Vec<(Lazy, Vec<char>)>,
    order: &[char],
    full: &[usize],
) -> Result<Lazy, OpError> {
    let mut prod: Option<Lazy> = None;
    for (y, labels) in ops {
        let present: Vec<usize> = order
            .iter()
            .filter_map(|c| labels.iter().position(|l| l == c))
            .collect();
        if present.len() != labels.len() {
            return Err(invalid("an operand label is missing from the index space"));
        }
        let y = y.permute(&present)?;
        let shape: Vec<usize> = order
            .iter()
            .map(|c| x_dim(&labels, order, c, y.shape()).unwrap_or(1))
            .collect();
        let y = broadcast_to(&y.reshape(&shape)?, full)?;
        prod = Some(match prod {
            Some(p) => g.binary(BinaryOp::Mul, &p, &y)?,
            None => y,
        });
    }
    prod.ok_or_else(|| invalid("no operands"))
}

/// The size of label `c` in an operand permuted into `order`.
fn x_dim(labels: &[char], order: &[char], c: &char, permuted: &[usize]) -> Option<usize> {
    let mine: Vec<&char> = order.iter().filter(|o| labels.contains(o)).collect();
    mine.iter().position(|o| *o == c).map(|p| permuted[p])
}
