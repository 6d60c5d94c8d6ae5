//! Running a schedule on the host with the UOp interpreter: the reference path used for
//! constant folding and for testing importers without a C compiler.

use super::{BufKind, Schedule, ScheduleError};
use crate::kernel::Kernel;
use crate::linearize::linearize;
use crate::target::Target;
use crate::uop::interp::{run, HostBuffer};
use crate::uop::BufferId;
use std::collections::HashMap;

/// Runs every kernel of `s` in order on the model's `inputs`; returns the model's outputs.
pub fn run_interpreted(
    s: &Schedule,
    inputs: &[HostBuffer],
) -> Result<Vec<HostBuffer>, ScheduleError> {
    let mut host: Vec<HostBuffer> = s
        .buffers
        .iter()
        .map(|b| match b.kind {
            BufKind::Weight(w) => {
                HostBuffer::from_bytes(b.dtype.scalar, s.weights[w.0 as usize].tensor.bytes())
            }
            BufKind::Input(i) => inputs
                .get(i)
                .cloned()
                .unwrap_or_else(|| HostBuffer::zeros(b.dtype.scalar, b.numel())),
            _ => HostBuffer::zeros(b.dtype.scalar, b.numel()),
        })
        .collect();
    for item in &s.items {
        let k = Kernel::new(item.ast.clone(), Target::c())?;
        let lin = linearize(&k).map_err(|e| ScheduleError::Linearize(Box::new(e)))?;
        let mut bufs: HashMap<BufferId, HostBuffer> = HashMap::new();
        for (j, b) in item.bufs.iter().enumerate() {
            let taken = std::mem::replace(
                &mut host[b.0 as usize],
                HostBuffer::zeros(b_dtype(s, b.0), 0),
            );
            bufs.insert(BufferId(j as u32), taken);
        }
        run(&lin.uops, &mut bufs, &HashMap::new()).map_err(|source| ScheduleError::Interpret {
            kernel: lin.name.clone(),
            source,
        })?;
        for (j, b) in item.bufs.iter().enumerate() {
            host[b.0 as usize] = bufs.remove(&BufferId(j as u32)).expect("buffer given back");
        }
    }
    Ok(s.outputs
        .iter()
        .map(|o| host[o.0 as usize].clone())
        .collect())
}

fn b_dtype(s: &Schedule, b: u32) -> crate::dtype::Scalar {
    s.buffers[b as usize].dtype.scalar
}
