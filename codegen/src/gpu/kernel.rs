//! A kernel of a GPU bundle: made from a rendered program, checked against a device.

use super::{GpuError, GpuKernel};
use crate::dtype::Scalar;
use crate::render::{Linkage, Program};
use crate::target::DeviceLimits;
use crate::uop::UOpKind;

impl GpuKernel {
    pub fn threads_per_group(&self) -> usize {
        self.local.iter().product()
    }

    /// The kernel of a program rendered for a GPU interface, named `name` (OpenCL kernels in
    /// one file need distinct names; a GLSL shader's entry stays `main`).
    pub fn from_program(p: &Program, name: &str) -> GpuKernel {
        let src = p.source.with_name(name, Linkage::External);
        let size = |v: &Option<Vec<usize>>| {
            let mut out = [1usize; 3];
            for (o, s) in out.iter_mut().zip(v.iter().flatten()) {
                *o = *s;
            }
            out
        };
        let shared_bytes = p
            .uops
            .uops
            .iter()
            .filter_map(|u| match u.kind {
                UOpKind::DefineLocal { size, .. } => Some(size * u.dtype.map_or(4, |d| d.size())),
                _ => None,
            })
            .sum();
        let uses = |s: Scalar| {
            p.uops
                .uops
                .iter()
                .any(|u| u.dtype.is_some_and(|d| d.scalar == s))
        };
        GpuKernel {
            name: name.to_string(),
            src,
            groups: size(&p.global_size),
            local: size(&p.local_size),
            shared_bytes,
            buffers: p.buffers.len(),
            uses_half: uses(Scalar::F16),
            uses_double: uses(Scalar::F64),
        }
    }
}

impl GpuKernel {
    /// Checks the kernel against a device's limits and features, naming what does not fit.
    pub fn check(&self, limits: &DeviceLimits) -> Result<(), GpuError> {
        check_kernel(self, limits)
    }
}

fn check_kernel(k: &GpuKernel, limits: &DeviceLimits) -> Result<(), GpuError> {
    let over = |what, needed: String, limit: String| GpuError::OverLimit {
        kernel: k.name.clone(),
        what,
        needed,
        limit,
    };
    if k.threads_per_group() > limits.local_threads_max {
        return Err(over(
            "the work-group size (threads per group)",
            format!("{:?} = {}", k.local, k.threads_per_group()),
            format!("{} threads per work-group", limits.local_threads_max),
        ));
    }
    for axis in 0..3 {
        if k.local[axis] > limits.local_max[axis] {
            return Err(over(
                "the work-group size",
                format!("{} on axis {axis}", k.local[axis]),
                format!(
                    "{} on that axis (limits {:?})",
                    limits.local_max[axis], limits.local_max
                ),
            ));
        }
        if k.groups[axis] > limits.groups_max[axis] {
            return Err(over(
                "the number of work-groups",
                format!("{} on axis {axis}", k.groups[axis]),
                format!("{} on that axis", limits.groups_max[axis]),
            ));
        }
    }
    let missing = |feature| GpuError::MissingFeature {
        kernel: k.name.clone(),
        feature,
    };
    if k.shared_bytes > 0 && limits.shared_bytes == 0 {
        return Err(missing("local (work-group shared) memory"));
    }
    if k.shared_bytes > limits.shared_bytes {
        return Err(over(
            "its local memory",
            format!("{} bytes", k.shared_bytes),
            format!("{} bytes", limits.shared_bytes),
        ));
    }
    if k.uses_half && !limits.half {
        return Err(missing("16-bit floats (fp16)"));
    }
    if k.uses_double && !limits.double {
        return Err(missing("64-bit floats (fp64)"));
    }
    Ok(())
}
