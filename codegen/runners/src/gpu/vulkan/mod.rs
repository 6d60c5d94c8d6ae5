//! The Vulkan runtime: a bundle's schedule executed as compute dispatches on a Vulkan device,
//! the device's own limits checked first.
//!
//! The Vulkan loader is opened when first used, so Kiln builds and runs without it; a machine
//! without a driver gets [`DeviceError::NoDriver`]. `$KILN_VULKAN_DEVICE` picks the first device
//! whose name contains it. The shaders are compiled to SPIR-V with `glslc` when the run starts.
//! Buffers live in host-visible memory (what integrated and edge GPUs have; a discrete GPU
//! would want staging copies).

mod context;
mod exec;

pub use context::Vk;

use super::placement::{prepare, prepare_calls, Prepared};
use super::{
    regroup, spirv, Api, CallsRun, DeviceError, GpuBundle, GpuError, GpuKernel, GpuRun, KernelCall,
};
use crate::Invocation;
use kiln_codegen::target::DeviceLimits;

const API: &str = "Vulkan";

/// Opens the device Kiln runs on: the first with a compute queue, or the first whose name
/// contains `$KILN_VULKAN_DEVICE`.
pub fn device() -> Result<Vk, DeviceError> {
    Vk::new(&std::env::var("KILN_VULKAN_DEVICE").unwrap_or_default())
}

/// The limits of [`device`], queried from it.
pub fn device_limits() -> Result<DeviceLimits, DeviceError> {
    Ok(device()?.limits.clone())
}

/// Runs `gb` once on [`device`] with `inputs` (raw little-endian bytes, one per model input).
pub fn run(gb: &GpuBundle, inputs: &[Vec<u8>]) -> Result<GpuRun, DeviceError> {
    run_on(&device()?, gb, inputs)
}

/// Runs `gb` once on `vk`.
pub fn run_on(vk: &Vk, gb: &GpuBundle, inputs: &[Vec<u8>]) -> Result<GpuRun, DeviceError> {
    run_repeated(vk, gb, inputs, 1)
}

/// Runs `gb` `runs` times on `vk` (the pipelines made and the launches recorded once), each
/// from the model's initial state; the step times are each step's fastest run, the outputs the
/// last run's.
pub fn run_repeated(
    vk: &Vk,
    gb: &GpuBundle,
    inputs: &[Vec<u8>],
    runs: usize,
) -> Result<GpuRun, DeviceError> {
    let runs = run_invocations(vk, gb, &super::repeated(inputs, runs))?;
    Ok(super::fastest(runs))
}

/// Makes each invocation in order on `vk` on one loaded bundle, the model's state carried from
/// each run to the next until a reset: each run's outputs and step times.
pub fn run_invocations(
    vk: &Vk,
    gb: &GpuBundle,
    invocations: &[Invocation<'_>],
) -> Result<Vec<GpuRun>, DeviceError> {
    if gb.api != Api::Vulkan {
        return Err(DeviceError::Refused(format!(
            "the bundle is for {}, not Vulkan",
            gb.api.name()
        )));
    }
    check(vk, &gb.kernels)?;
    let prep = prepare(gb, super::first_inputs(invocations), vk.align)?;
    check_ranges(vk, &gb.kernels, &prep)?;
    let runs = execute(vk, &gb.kernels, &prep, invocations)?;
    let run = |(outputs, step_times)| GpuRun {
        outputs,
        step_times,
        device: vk.name.clone(),
        arena_bytes: prep.arena_bytes,
    };
    Ok(runs.into_iter().map(run).collect())
}

/// Runs independent calls of `kernels` on `vk`, in order.
pub fn run_calls(
    vk: &Vk,
    kernels: &[GpuKernel],
    calls: &[KernelCall],
) -> Result<CallsRun, DeviceError> {
    check(vk, kernels)?;
    let prep = prepare_calls(calls, kernels.len(), vk.align)?;
    check_ranges(vk, kernels, &prep)?;
    let inputs = prep.first_inputs();
    let mut runs = execute(vk, kernels, &prep, &[Invocation::Run(&inputs)])?;
    let (flat, times) = runs.pop().expect("one run");
    Ok(CallsRun {
        buffers: regroup(calls, flat),
        times,
    })
}

/// The kernels against the device's limits and features.
fn check(vk: &Vk, kernels: &[GpuKernel]) -> Result<(), DeviceError> {
    for k in kernels {
        k.check(&vk.limits)?;
        if k.buffers > vk.bindings_max {
            return Err(DeviceError::Kernel(GpuError::OverLimit {
                kernel: k.name.clone(),
                what: "the number of storage buffers",
                needed: k.buffers.to_string(),
                limit: format!("{} (maxPerStageDescriptorStorageBuffers)", vk.bindings_max),
            }));
        }
        if k.src.contains("GL_EXT_shader_8bit_storage") && !vk.bytes_storage {
            return Err(DeviceError::Kernel(GpuError::MissingFeature {
                kernel: k.name.clone(),
                feature: "8-bit storage buffers and integers",
            }));
        }
        if k.src.contains(kiln_codegen::render::glsl::INT16_EXTENSION) && !vk.shorts {
            return Err(DeviceError::Kernel(GpuError::MissingFeature {
                kernel: k.name.clone(),
                feature: "16-bit storage buffers and integers",
            }));
        }
        if k.src.contains(kiln_codegen::render::glsl::INT64_EXTENSION) && !vk.int64 {
            return Err(DeviceError::Kernel(GpuError::MissingFeature {
                kernel: k.name.clone(),
                feature: "64-bit integers (shaderInt64)",
            }));
        }
    }
    Ok(())
}

/// Every buffer a launch binds within the device's largest storage-buffer range.
fn check_ranges(vk: &Vk, kernels: &[GpuKernel], prep: &Prepared) -> Result<(), DeviceError> {
    for l in &prep.launches {
        if let Some(s) = l.args.iter().find(|s| s.bytes > vk.binding_bytes_max) {
            return Err(DeviceError::Kernel(GpuError::OverLimit {
                kernel: kernels[l.kernel].name.clone(),
                what: "a buffer argument",
                needed: format!("{} bytes", s.bytes),
                limit: format!("{} bytes (maxStorageBufferRange)", vk.binding_bytes_max),
            }));
        }
    }
    Ok(())
}

/// Compiles the shaders, records the launches, and loads the weights and the state's initial
/// values; then for each invocation resets the state, or writes the inputs, submits and reads
/// the outputs. Returns each run's outputs and launch times.
fn execute(
    vk: &Vk,
    kernels: &[GpuKernel],
    prep: &Prepared,
    invocations: &[Invocation<'_>],
) -> Result<Vec<super::Executed>, DeviceError> {
    let shaders: Vec<(&str, &str)> = kernels
        .iter()
        .map(|k| (k.name.as_str(), k.src.as_str()))
        .collect();
    let spirv = spirv::compile_all(&shaders)?;
    let mut exec = exec::Exec::new(vk);
    exec.buffers.push(vk.buffer(prep.arena_bytes)?);
    exec.buffers.push(vk.buffer(prep.weights.len())?);
    let (arena, weights) = (exec.buffers[0].ptr, exec.buffers[1].ptr);
    // SAFETY: the weights buffer is mapped for its whole size, the blob's.
    unsafe { std::ptr::copy_nonoverlapping(prep.weights.as_ptr(), weights, prep.weights.len()) };
    let (arena_buf, weights_buf) = (exec.buffers[0].buffer, exec.buffers[1].buffer);
    exec.pipelines(kernels, &spirv)?;
    exec.record(kernels, &prep.launches, arena_buf, weights_buf)?;
    // SAFETY (each write below): the queue is idle, and every input and the state lie within
    // the mapped arena (the layout placed them there).
    let write = |offset: usize, data: &[u8]| unsafe {
        std::ptr::copy_nonoverlapping(data.as_ptr(), arena.add(offset), data.len())
    };
    let (state_at, state) = &prep.state;
    write(*state_at, state);
    let mut runs = Vec::new();
    for invocation in invocations {
        let inputs = match invocation {
            Invocation::Reset => {
                write(*state_at, state);
                continue;
            }
            Invocation::Run(inputs) => prep.input_writes(inputs)?,
        };
        for (offset, data) in inputs {
            write(offset, data);
        }
        let times = exec.submit(prep.launches.len())?;
        let outputs = prep
            .outputs
            .iter()
            // SAFETY: the queue is idle; each output lies within the mapped arena.
            .map(|&(offset, bytes)| unsafe {
                std::slice::from_raw_parts(arena.add(offset), bytes).to_vec()
            })
            .collect();
        runs.push((outputs, times));
    }
    Ok(runs)
}
