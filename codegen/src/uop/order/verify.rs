//! The check of an ordered program: blocks nest, values are computed before they are read,
//! every instruction sits inside the loops it depends on and reads only values in scope.

use super::{Linear, OrderError};
use crate::uop::UOpKind;
use std::collections::HashSet;

/// The position whose block a value lives in: an accumulator's PHI is declared with the
/// accumulator; everything else where it stands.
fn declared_at(l: &Linear, i: usize) -> usize {
    match l.uops[i].kind {
        UOpKind::Phi => declared_at(l, l.uops[i].src[0].index()),
        _ => i,
    }
}

/// Checks `l`: blocks nest, every value is computed before it is read, every node sits inside
/// the loops it depends on, and every value it reads is still in scope.
pub(super) fn verify(l: &Linear) -> Result<(), OrderError> {
    let stacks = l.block_stacks();
    check_nesting(l, &stacks)?;
    // Loops each instruction depends on, through anything but a PHI's result.
    let mut needs: Vec<HashSet<usize>> = Vec::with_capacity(l.uops.len());
    for (i, u) in l.uops.iter().enumerate() {
        let set = loops_needed(l, &needs, i)?;
        for &r in &set {
            if r != i && !stacks[i].contains(&r) {
                return Err(OrderError::OutsideLoop {
                    index: i,
                    kind: u.kind.to_string(),
                    range: r,
                });
            }
        }
        needs.push(set);
        check_sources_in_scope(l, &stacks, i)?;
    }
    Ok(())
}

/// Every END closes the innermost open block.
fn check_nesting(l: &Linear, stacks: &[Vec<usize>]) -> Result<(), OrderError> {
    for (i, u) in l.uops.iter().enumerate() {
        if matches!(u.kind, UOpKind::EndRange | UOpKind::EndIf) {
            let open = stacks[i - 1..i].first().and_then(|_| {
                let mut st = stacks[i - 1].clone();
                if matches!(l.uops[i - 1].kind, UOpKind::Range { .. } | UOpKind::If) {
                    st.push(i - 1);
                }
                st.last().copied()
            });
            if open != Some(u.src[0].index()) {
                return Err(OrderError::BadNesting {
                    index: i,
                    block: u.src[0].index(),
                    open,
                });
            }
        }
    }
    Ok(())
}

/// The loops instruction `i` depends on, given those of the instructions before it; an error
/// when it reads a later one.
fn loops_needed(
    l: &Linear,
    needs: &[HashSet<usize>],
    i: usize,
) -> Result<HashSet<usize>, OrderError> {
    let u = &l.uops[i];
    let mut set = HashSet::new();
    if matches!(u.kind, UOpKind::Range { .. }) {
        set.insert(i);
    }
    for s in &u.src {
        let s = s.index();
        if s >= i && !matches!(u.kind, UOpKind::DefineAcc { .. }) {
            return Err(OrderError::UseBeforeDef {
                index: i,
                kind: u.kind.to_string(),
                src: s,
            });
        }
        if matches!(u.kind, UOpKind::DefineAcc { .. } | UOpKind::EndRange) {
            continue;
        }
        if matches!(l.uops[s].kind, UOpKind::Phi) {
            // The PHI's result is visible after its loops close.
            let acc = declared_at(l, s);
            set.extend(
                needs[s]
                    .iter()
                    .filter(|r| !l.uops[acc].src.iter().any(|x| x.index() == **r)),
            );
        } else if s < needs.len() {
            set.extend(needs[s].iter().copied());
        }
    }
    Ok(set)
}

/// Every value instruction `i` reads is declared in a block still open around it (or needs
/// none).
fn check_sources_in_scope(l: &Linear, stacks: &[Vec<usize>], i: usize) -> Result<(), OrderError> {
    let u = &l.uops[i];
    if matches!(
        u.kind,
        UOpKind::EndRange | UOpKind::EndIf | UOpKind::DefineAcc { .. }
    ) {
        return Ok(());
    }
    for s in &u.src {
        let d = declared_at(l, s.index());
        let visible = stacks[d].iter().all(|b| stacks[i].contains(b))
            || matches!(
                l.uops[d].kind,
                UOpKind::Const(_) | UOpKind::Store | UOpKind::Barrier | UOpKind::If
            );
        if !visible {
            return Err(OrderError::OutOfScope {
                index: i,
                kind: u.kind.to_string(),
                src: s.index(),
            });
        }
    }
    Ok(())
}
