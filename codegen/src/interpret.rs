//! Running a schedule in the UOp interpreter: each kernel linearized for C and run on host
//! buffers, with no C compiler or device. The reference the tests check importers, schedules
//! and the linearizer against; the compile pipeline does not use it.

use crate::kernel::{Kernel, KernelError};
use crate::linearize::{linearize, LinearizeError};
use crate::schedule::{BufId, BufKind, Schedule};
use crate::target::Target;
use crate::tensor::{Tensor, TensorError};
use crate::uop::interp::{run, HostBuffer, InterpError};
use crate::uop::ArgId;
use std::collections::HashMap;

/// Why a schedule could not run in the interpreter.
#[derive(Debug, thiserror::Error)]
pub enum InterpretError {
    #[error(transparent)]
    Kernel(#[from] KernelError),
    #[error("linearizing kernel {kernel}")]
    Linearize {
        kernel: usize,
        #[source]
        source: Box<LinearizeError>,
    },
    #[error("running {kernel}")]
    Interpret {
        kernel: String,
        #[source]
        source: InterpError,
    },
    #[error(transparent)]
    Tensor(#[from] TensorError),
}

/// Runs every kernel of `s` in order on the model's `inputs` (zeros for one not given), its
/// states at their initial values; returns the model's outputs.
pub fn run_schedule(s: &Schedule, inputs: &[Tensor]) -> Result<Vec<Tensor>, InterpretError> {
    let mut host: Vec<HostBuffer> = s
        .buffers
        .iter()
        .map(|b| match b.kind {
            BufKind::Weight(w) => HostBuffer::from(&s.weights[w.0 as usize].tensor),
            BufKind::Input(i) => inputs
                .get(i)
                .map(HostBuffer::from)
                .unwrap_or_else(|| HostBuffer::zeros(b.dtype.scalar, b.numel())),
            BufKind::State(n) => match &s.states[n].1 {
                Some(init) => HostBuffer::from(init),
                None => HostBuffer::zeros(b.dtype.scalar, b.numel()),
            },
            _ => HostBuffer::zeros(b.dtype.scalar, b.numel()),
        })
        .collect();
    for (index, iteration) in run_order(s) {
        let item = &s.items[index];
        let k = Kernel::new(item.ast.clone(), Target::c())?;
        let lin = linearize(&k).map_err(|e| InterpretError::Linearize {
            kernel: index,
            source: Box::new(e),
        })?;
        // Windows first, copied out of their storage before a kernel argument takes it.
        let mut order: Vec<(usize, BufId)> = item.bufs.iter().copied().enumerate().collect();
        order.sort_by_key(|(_, b)| window_range(s, *b, iteration).is_none());
        let mut bufs: HashMap<ArgId, HostBuffer> = HashMap::new();
        for &(j, b) in &order {
            bufs.insert(ArgId(j as u32), take(s, &mut host, b, iteration));
        }
        run(&lin.uops, &mut bufs, &HashMap::new()).map_err(|source| InterpretError::Interpret {
            kernel: lin.name.clone(),
            source,
        })?;
        for &(j, b) in order.iter().rev() {
            let buffer = bufs.remove(&ArgId(j as u32)).expect("buffer given back");
            give_back(s, &mut host, b, iteration, buffer);
        }
    }
    s.outputs
        .iter()
        .map(|o| {
            let b = &host[o.0 as usize];
            let shape = s.buffers[o.0 as usize].shape.clone();
            Ok(Tensor::from_values(b.dtype, shape, b.data.iter().copied())?)
        })
        .collect()
}

/// The items in the order a run calls them, each with its loop's iteration (0 outside loops).
fn run_order(s: &Schedule) -> Vec<(usize, usize)> {
    let mut seen = vec![0; s.items.len()];
    s.call_order()
        .into_iter()
        .map(|i| {
            seen[i] += 1;
            (i, seen[i] - 1)
        })
        .collect()
}

/// The elements of window `b` at `iteration`: the range of its storage it covers.
fn window_range(
    s: &Schedule,
    b: BufId,
    iteration: usize,
) -> Option<(BufId, std::ops::Range<usize>)> {
    let info = &s.buffers[b.0 as usize];
    let BufKind::Window { of, start, step } = info.kind else {
        return None;
    };
    let at = (start as isize + step * iteration as isize) as usize;
    Some((of, at..at + info.numel()))
}

/// Buffer `b`'s contents for a kernel: moved out of `host`, or copied out of its storage for a
/// window.
fn take(s: &Schedule, host: &mut [HostBuffer], b: BufId, iteration: usize) -> HostBuffer {
    let dtype = s.buffers[b.0 as usize].dtype.scalar;
    match window_range(s, b, iteration) {
        Some((of, range)) => {
            let storage = &host[of.0 as usize];
            HostBuffer {
                dtype,
                data: storage.data[range].to_vec(),
            }
        }
        None => std::mem::replace(&mut host[b.0 as usize], HostBuffer::zeros(dtype, 0)),
    }
}

/// Returns what [`take`] took, written back into a window's storage.
fn give_back(
    s: &Schedule,
    host: &mut [HostBuffer],
    b: BufId,
    iteration: usize,
    buffer: HostBuffer,
) {
    match window_range(s, b, iteration) {
        Some((of, range)) => host[of.0 as usize].data[range].copy_from_slice(&buffer.data),
        None => host[b.0 as usize] = buffer,
    }
}
