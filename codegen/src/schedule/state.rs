//! States updated in place: where the kernel computing a state's next value reads the state
//! only at the element it writes, and no later kernel reads the state, the kernel writes the
//! state itself and the copy after the run's last reader goes.
//!
//! The scheduler first gives each next value a buffer of its own, copied over the state by one
//! of the last kernels ([`super::build`]); this pass, still inside the scheduler, removes the
//! copies that an in-place write makes needless. An LSTM's cell state (`c' = f·c + i·g`) or an
//! accumulator (`a' = a/2 + x`) is such an update; a ring buffer's shift is not (each element
//! takes its neighbour's value, which a parallel target may already have overwritten), and
//! keeps its copy.

use super::ast::{ArgId, MemBuffer, Op};
use super::{BufId, BufKind, Schedule, ScheduleItem};

/// `s` with every state whose update allows it written in place by the kernel computing its
/// next value.
pub(super) fn update_states_in_place(mut s: Schedule) -> Schedule {
    let states: Vec<BufId> = s.states.iter().map(|(b, _)| *b).collect();
    for state in states {
        if let Some(update) = in_place_update(&s, state) {
            s = update.apply(s);
        }
    }
    s
}

/// A state's update that can run in place: item `producer` computes the next value into
/// `value`, which item `copy` copies over `state`.
struct InPlaceUpdate {
    state: BufId,
    value: BufId,
    producer: usize,
    copy: usize,
}

fn in_place_update(s: &Schedule, state: BufId) -> Option<InPlaceUpdate> {
    let copy = s
        .items
        .iter()
        .position(|it| it.bufs.first() == Some(&state))?;
    let value = *s.items[copy].bufs.get(1)?;
    let (st, vi) = (&s.buffers[state.0 as usize], &s.buffers[value.0 as usize]);
    if vi.kind != BufKind::Intermediate
        || (vi.dtype, vi.numel()) != (st.dtype, st.numel())
        || !is_plain_copy(&s.items[copy])
        || s.buffers
            .iter()
            .any(|b| matches!(b.kind, BufKind::Window { of, .. } if of == state || of == value))
    {
        return None;
    }
    let mut writers = s
        .items
        .iter()
        .enumerate()
        .filter(|(_, it)| it.bufs[0] == value);
    let (producer, item) = writers.next()?;
    let later_reads = (s.items.iter().enumerate())
        .filter(|&(i, _)| i > producer && i != copy)
        .any(|(_, it)| it.bufs.contains(&state));
    let ok = writers.next().is_none()
        && producer < copy
        && s.loop_of(producer).is_none()
        && !later_reads
        && item.bufs.iter().filter(|&&b| b == value).count() == 1
        && item.bufs.iter().filter(|&&b| b == state).count() <= 1
        && (item.bufs.iter().position(|&b| b == state))
            .is_none_or(|j| item.reads_only_the_stored_element(j));
    ok.then_some(InPlaceUpdate {
        state,
        value,
        producer,
        copy,
    })
}

/// Whether `item` copies its buffer 1 into its buffer 0, element by element in order.
fn is_plain_copy(item: &ScheduleItem) -> bool {
    let [root] = item.ast.as_slice() else {
        return false;
    };
    let (Op::Store(store), [load]) = (root.op(), root.src()) else {
        return false;
    };
    match load.op() {
        Op::Load(m) => {
            item.bufs.len() == 2
                && (store.idx, m.idx) == (ArgId(0), ArgId(1))
                && store.dtype == m.dtype
                && store.st.contiguous()
                && m.st.contiguous()
        }
        _ => false,
    }
}

impl InPlaceUpdate {
    /// The schedule with the producer storing into the state (reading it, if it does, as its
    /// own output buffer), every reader of the value reading the state, and the copy gone.
    fn apply(self, mut s: Schedule) -> Schedule {
        let item = &mut s.items[self.producer];
        if let Some(j) = item.bufs.iter().position(|&b| b == self.state) {
            *item = read_as_output(item, j);
        }
        for it in &mut s.items {
            for b in &mut it.bufs {
                if *b == self.value {
                    *b = self.state;
                }
            }
        }
        s.items.remove(self.copy);
        for l in &mut s.loops {
            let shift = |i: usize| if i > self.copy { i - 1 } else { i };
            l.items = shift(l.items.start)..shift(l.items.end);
        }
        s
    }
}

/// `item` with its loads of buffer `j` made loads of buffer 0 (the element being stored), and
/// buffer `j` dropped from its arguments.
fn read_as_output(item: &ScheduleItem, j: usize) -> ScheduleItem {
    let j = j as u32;
    let ast = item
        .ast
        .iter()
        .map(|root| {
            root.map_buffers(&|m: &MemBuffer| {
                let idx = match m.idx.0 {
                    i if i == j => ArgId(0),
                    i if i > j => ArgId(i - 1),
                    _ => return None,
                };
                Some(MemBuffer { idx, ..m.clone() })
            })
        })
        .collect();
    let mut bufs = item.bufs.clone();
    bufs.remove(j as usize);
    ScheduleItem { ast, bufs }
}

impl ScheduleItem {
    /// Whether every load of buffer `j` (if any) reads the element the item's one store is
    /// writing: the same view and type as the store's.
    pub fn reads_only_the_stored_element(&self, j: usize) -> bool {
        let [root] = self.ast.as_slice() else {
            return false;
        };
        let Op::Store(store) = root.op() else {
            return false;
        };
        root.lazyops().iter().all(|n| match n.op() {
            Op::Load(m) if m.idx.0 as usize == j => m.dtype == store.dtype && m.st == store.st,
            _ => true,
        })
    }
}
