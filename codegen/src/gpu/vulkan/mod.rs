//! The Vulkan runtime: a bundle's schedule executed as compute dispatches on a Vulkan device,
//! the device's own limits checked first.
//!
//! The Vulkan loader is opened when first used, so Kiln builds and runs without it; a machine
//! without a driver gets [`GpuError::NoDevice`]. `$KILN_VULKAN_DEVICE` picks the first device
//! whose name contains it. The shaders are compiled to SPIR-V with `glslc` when the run starts.
//! Buffers live in host-visible memory (what integrated and edge GPUs have; a discrete GPU
//! would want staging copies).

mod context;
mod exec;

pub use context::Vk;

use super::layout::{prepare, prepare_calls, Prepared};
use super::{regroup, spirv, Api, CallsRun, GpuBundle, GpuError, GpuKernel, GpuRun, KernelCall};
use crate::render::DeviceLimits;
use std::time::Duration;

const API: &str = "Vulkan";

/// Opens the device Kiln runs on: the first with a compute queue, or the first whose name
/// contains `$KILN_VULKAN_DEVICE`.
pub fn device() -> Result<Vk, GpuError> {
    Vk::new(&std::env::var("KILN_VULKAN_DEVICE").unwrap_or_default())
}

/// The limits of [`device`], queried from it.
pub fn device_limits() -> Result<DeviceLimits, GpuError> {
    Ok(device()?.limits.clone())
}

/// Runs `gb` once on [`device`] with `inputs` (raw little-endian bytes, one per model input).
pub fn run(gb: &GpuBundle, inputs: &[Vec<u8>]) -> Result<GpuRun, GpuError> {
    run_on(&device()?, gb, inputs)
}

/// Runs `gb` once on `vk`.
pub fn run_on(vk: &Vk, gb: &GpuBundle, inputs: &[Vec<u8>]) -> Result<GpuRun, GpuError> {
    if gb.api != Api::Vulkan {
        return Err(GpuError::Refused(format!(
            "the bundle is for {}, not Vulkan",
            gb.api.name()
        )));
    }
    check(vk, &gb.kernels)?;
    let prep = prepare(gb, inputs, vk.align)?;
    let (outputs, step_times) = execute(vk, &gb.kernels, &prep)?;
    Ok(GpuRun {
        outputs,
        step_times,
        device: vk.name.clone(),
        arena_bytes: prep.arena_bytes,
    })
}

/// Runs independent calls of `kernels` on `vk`, in order.
pub fn run_calls(
    vk: &Vk,
    kernels: &[GpuKernel],
    calls: &[KernelCall],
) -> Result<CallsRun, GpuError> {
    check(vk, kernels)?;
    let prep = prepare_calls(calls, kernels.len(), vk.align)?;
    let (flat, times) = execute(vk, kernels, &prep)?;
    Ok(CallsRun {
        buffers: regroup(calls, flat),
        times,
    })
}

/// The kernels against the device's limits and features.
fn check(vk: &Vk, kernels: &[GpuKernel]) -> Result<(), GpuError> {
    for k in kernels {
        k.check(&vk.limits)?;
        if k.src.contains("GL_EXT_shader_8bit_storage") && !vk.bytes_storage {
            return Err(GpuError::MissingFeature {
                kernel: k.name.clone(),
                feature: "8-bit storage buffers (for booleans)",
            });
        }
    }
    Ok(())
}

/// Compiles the shaders, writes the inputs, dispatches every launch in order, reads the
/// outputs.
fn execute(
    vk: &Vk,
    kernels: &[GpuKernel],
    prep: &Prepared,
) -> Result<(Vec<Vec<u8>>, Vec<Duration>), GpuError> {
    let spirv = kernels
        .iter()
        .map(|k| spirv::compile(&k.name, &k.src))
        .collect::<Result<Vec<_>, _>>()?;
    let mut exec = exec::Exec::new(vk);
    exec.buffers.push(vk.buffer(prep.arena_bytes)?);
    exec.buffers.push(vk.buffer(prep.weights.len())?);
    let (arena, weights) = (&exec.buffers[0], &exec.buffers[1]);
    // SAFETY: both buffers are mapped for their whole size; every copy stays within it (the
    // layout placed every slice inside its region).
    unsafe {
        std::ptr::copy_nonoverlapping(prep.weights.as_ptr(), weights.ptr, prep.weights.len());
        for (offset, data) in &prep.inputs {
            std::ptr::copy_nonoverlapping(data.as_ptr(), arena.ptr.add(*offset), data.len());
        }
    }
    let (arena_buf, weights_buf) = (arena.buffer, weights.buffer);
    exec.pipelines(kernels, &spirv)?;
    let times = exec.dispatch(kernels, &prep.launches, arena_buf, weights_buf)?;
    let arena = &exec.buffers[0];
    let outputs = prep
        .outputs
        .iter()
        // SAFETY: the queue is idle; each output lies within the mapped arena.
        .map(|&(offset, bytes)| unsafe {
            std::slice::from_raw_parts(arena.ptr.add(offset), bytes).to_vec()
        })
        .collect();
    Ok((outputs, times))
}
