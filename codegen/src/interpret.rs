//! Running a schedule in the UOp interpreter: each kernel linearized for C and run on host
//! buffers, with no C compiler or device. The reference the tests check importers, schedules
//! and the linearizer against; the compile pipeline does not use it.

use crate::kernel::{Kernel, KernelError};
use crate::linearize::{linearize, LinearizeError};
use crate::schedule::{BufKind, Schedule};
use crate::target::Target;
use crate::tensor::{Tensor, TensorError};
use crate::uop::interp::{run, HostBuffer, InterpError};
use crate::uop::BufferId;
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

/// Runs every kernel of `s` in order on the model's `inputs` (zeros for one not given);
/// returns the model's outputs.
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
            _ => HostBuffer::zeros(b.dtype.scalar, b.numel()),
        })
        .collect();
    for (index, item) in s.items.iter().enumerate() {
        let k = Kernel::new(item.ast.clone(), Target::c())?;
        let lin = linearize(&k).map_err(|e| InterpretError::Linearize {
            kernel: index,
            source: Box::new(e),
        })?;
        let mut bufs: HashMap<BufferId, HostBuffer> = HashMap::new();
        for (j, b) in item.bufs.iter().enumerate() {
            let empty = HostBuffer::zeros(s.buffers[b.0 as usize].dtype.scalar, 0);
            bufs.insert(
                BufferId(j as u32),
                std::mem::replace(&mut host[b.0 as usize], empty),
            );
        }
        run(&lin.uops, &mut bufs, &HashMap::new()).map_err(|source| InterpretError::Interpret {
            kernel: lin.name.clone(),
            source,
        })?;
        for (j, b) in item.bufs.iter().enumerate() {
            host[b.0 as usize] = bufs.remove(&BufferId(j as u32)).expect("buffer given back");
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
