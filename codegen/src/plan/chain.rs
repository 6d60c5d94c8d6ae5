//! In-place pairs joined into chains, each placed as one group. A kernel's output is first
//! written at the step where its source is last read, so the buffers of a chain of pairs are
//! alive together only two at a time, each pair at its own step: the chain needs no more
//! bytes than the distances its pairs allow. A pair whose kernel allows any lower (or any
//! higher) shift than its own ([`Slack`]) may take one, so that a chain whose pairs all trail
//! their reads does not drift a shift further at every pair: the chain is laid out in the
//! fewest bytes its pairs allow.

use super::{BufId, InPlace, Placement, Slack, ALIGN};

/// Ties the buffers of each usable in-place pair (both placed, each buffer the source of one
/// pair and the output of one at most) into chains, each laid out in the fewest bytes
/// ([`lay_out`]). The groups, each its buffers (index in `single`) with their distance from
/// the group's lowest byte, in the order of their first buffer; and the pairs used, at the
/// shifts the layout gives them.
pub(super) fn join_in_place(
    single: &[Placement],
    in_place: &[InPlace],
) -> (Vec<Vec<(usize, usize)>>, Vec<InPlace>) {
    let index = |b: BufId| single.iter().position(|p| p.buf == b);
    let mut next: Vec<Option<(usize, InPlace)>> = vec![None; single.len()];
    let mut prev: Vec<Option<usize>> = vec![None; single.len()];
    let mut pairs = in_place.to_vec();
    pairs.sort_by_key(|p| p.step);
    for p in pairs {
        let (Some(o), Some(i)) = (index(p.out), index(p.src)) else {
            continue;
        };
        if next[i].is_some() || prev[o].is_some() || head_of(&prev, i) == o {
            continue;
        }
        next[i] = Some((o, p));
        prev[o] = Some(i);
    }
    let mut groups = Vec::new();
    let mut used = Vec::new();
    for head in (0..single.len()).filter(|&m| prev[m].is_none()) {
        let (mut members, mut links) = (vec![head], Vec::new());
        while let Some((o, p)) = next[members[members.len() - 1]] {
            members.push(o);
            links.push(p);
        }
        let sizes: Vec<i64> = members.iter().map(|&m| single[m].bytes as i64).collect();
        let at = lay_out(&sizes, &links);
        for (k, p) in links.iter().enumerate() {
            used.push(InPlace {
                shift: at[k + 1] - at[k],
                ..*p
            });
        }
        let low = at.iter().copied().min().unwrap_or(0);
        let mut group: Vec<(usize, usize)> = (members.iter().zip(&at))
            .map(|(&m, &x)| (m, (x - low) as usize))
            .collect();
        group.sort_unstable();
        groups.push(group);
    }
    groups.sort_by_key(|g| g[0].0);
    used.sort_by_key(|p| p.step);
    (groups, used)
}

/// The first buffer of the chain that `m` ends.
fn head_of(prev: &[Option<usize>], mut m: usize) -> usize {
    while let Some(p) = prev[m] {
        m = p;
    }
    m
}

/// Where each buffer of a chain lies (sizes `sizes`, tied by `links`, one fewer) in the
/// fewest bytes the links allow: a binary search over the span, each tried by [`fit`].
fn lay_out(sizes: &[i64], links: &[InPlace]) -> Vec<i64> {
    let mut own = vec![0i64; sizes.len()];
    for (k, p) in links.iter().enumerate() {
        own[k + 1] = own[k] + p.shift;
    }
    let low = own.iter().copied().min().unwrap_or(0);
    let span = (own.iter().zip(sizes))
        .map(|(x, s)| x + s)
        .max()
        .unwrap_or(0)
        - low;
    let unit = ALIGN as i64;
    let (mut lo, mut hi) = (sizes.iter().copied().max().unwrap_or(0) / unit, span / unit);
    let mut best: Vec<i64> = own.iter().map(|x| x - low).collect();
    while lo < hi {
        let mid = (lo + hi) / 2;
        match fit(sizes, links, mid * unit) {
            Some(at) => (best, hi) = (at, mid),
            None => lo = mid + 1,
        }
    }
    best
}

/// Places for a chain's buffers within `span` bytes, each link at its own shift where the
/// span allows and otherwise as near it as its slack lets it be; `None` if they do not fit.
/// Forward, the places each buffer may take given those before it; backward, one of them.
fn fit(sizes: &[i64], links: &[InPlace], span: i64) -> Option<Vec<i64>> {
    let mut room = vec![(0, span - sizes[0])];
    for (k, p) in links.iter().enumerate() {
        let (a, b) = room[k];
        let (lo, hi) = match p.slack {
            Slack::Exact => (a + p.shift, b + p.shift),
            Slack::Down => (i64::MIN, b + p.shift),
            Slack::Up => (a + p.shift, i64::MAX),
        };
        let (lo, hi) = (lo.max(0), hi.min(span - sizes[k + 1]));
        if lo > hi {
            return None;
        }
        room.push((lo, hi));
    }
    let mut at = vec![0; sizes.len()];
    at[sizes.len() - 1] = room[sizes.len() - 1].0;
    for (k, p) in links.iter().enumerate().rev() {
        let (a, b) = room[k];
        let own = at[k + 1] - p.shift;
        // The source's places that keep the link: its own shift, or past it the slack's way.
        let (lo, hi) = match p.slack {
            Slack::Exact => (own, own),
            Slack::Down => (own, i64::MAX),
            Slack::Up => (i64::MIN, own),
        };
        at[k] = own.clamp(a.max(lo), b.min(hi));
    }
    Some(at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::BufId;

    fn link(shift: i64, slack: Slack) -> InPlace {
        let b = BufId(0);
        InPlace {
            step: 0,
            until: 0,
            out: b,
            src: b,
            shift,
            slack,
        }
    }

    /// Each link of `links` holds at `at`: its own shift, or past it the way its slack allows.
    fn assert_links_hold(at: &[i64], links: &[InPlace]) {
        for (k, p) in links.iter().enumerate() {
            let shift = at[k + 1] - at[k];
            let holds = match p.slack {
                Slack::Exact => shift == p.shift,
                Slack::Down => shift <= p.shift,
                Slack::Up => shift >= p.shift,
            };
            assert!(holds, "link {k}: {shift} against {p:?}");
        }
    }

    #[test]
    fn a_chain_that_trails_its_reads_does_not_drift() {
        // Padding (runs ahead), depthwise and pointwise (trail), three times over: at their
        // own shifts the chain would slide 1,360 bytes lower every block.
        let block = [
            (12_096, link(0, Slack::Up)),
            (8_000, link(-1_296, Slack::Down)),
            (8_000, link(-64, Slack::Down)),
        ];
        let mut sizes = vec![8_000];
        let mut links = Vec::new();
        for _ in 0..3 {
            for (size, l) in block {
                sizes.push(size);
                links.push(l);
            }
        }
        let at = lay_out(&sizes, &links);
        assert_links_hold(&at, &links);
        assert!(at.iter().all(|&x| x >= 0));
        let span = (at.iter().zip(&sizes)).map(|(x, s)| x + s).max().unwrap();
        // The widest pair: the depthwise output 1,296 bytes below its 12,096-byte input.
        assert!(span <= 12_096 + 1_296 + 64, "{span} bytes: {at:?}");
    }

    #[test]
    fn exact_links_keep_their_shifts() {
        let links = [link(0, Slack::Exact), link(-32, Slack::Exact)];
        let at = lay_out(&[64, 64, 64], &links);
        assert_eq!(at, vec![32, 32, 0]);
    }
}
