//! The OpenCL runtime: a bundle's schedule executed on an OpenCL device, one kernel launch per
//! step, with the device's own limits checked first.
//!
//! The OpenCL library is loaded when first used, so Kiln builds and runs without it; a machine
//! without a driver gets [`DeviceError::NoDriver`]. `$KILN_OPENCL_DEVICE` picks the first device
//! whose name contains it.

use super::placement::{prepare, prepare_calls, ArenaCopy, Prepared, Region, Slice};
use super::{
    opencl_source, regroup, Api, CallsRun, DeviceError, GpuBundle, GpuError, GpuKernel, GpuRun,
    KernelCall,
};
use crate::Invocation;
use kiln_codegen::target::DeviceLimits;
use opencl3::command_queue::{enqueue_copy_buffer, CommandQueue, CL_QUEUE_PROFILING_ENABLE};
use opencl3::context::Context;
use opencl3::device::{Device, CL_DEVICE_TYPE_ALL, CL_NONE};
use opencl3::error_codes::ClError;
use opencl3::event::Event;
use opencl3::kernel::Kernel;
use opencl3::memory::{Buffer, ClMem, CL_MEM_COPY_HOST_PTR, CL_MEM_READ_ONLY, CL_MEM_READ_WRITE};
use opencl3::program::Program;
use opencl3::types::{cl_mem, CL_BLOCKING};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

const API: &str = "OpenCL";

fn driver(call: &'static str) -> impl Fn(opencl3::error_codes::ClError) -> DeviceError {
    move |e| DeviceError::Driver {
        api: API,
        call,
        source: e.into(),
    }
}

/// An OpenCL device, its name and what it allows.
pub struct ClDevice {
    pub device: Device,
    pub name: String,
    pub limits: DeviceLimits,
    /// Bytes a buffer argument's offset must be a multiple of.
    pub align: usize,
}

/// The device Kiln runs on: the first of any platform, or the first whose name contains
/// `$KILN_OPENCL_DEVICE`.
pub fn device() -> Result<ClDevice, DeviceError> {
    // Discovery is serialized: some drivers (PoCL 3.1) initialize their devices lazily and
    // crash when two threads do it at once.
    static DISCOVERY: Mutex<()> = Mutex::new(());
    let _one = DISCOVERY.lock().unwrap_or_else(|e| e.into_inner());
    let no_device = |reason: String| DeviceError::NoDevice { api: API, reason };
    let ids = opencl3::device::get_all_devices(CL_DEVICE_TYPE_ALL).map_err(|e| {
        DeviceError::NoDriver {
            api: API,
            call: "clGetDeviceIDs",
            source: e.into(),
        }
    })?;
    let wanted = std::env::var("KILN_OPENCL_DEVICE").unwrap_or_default();
    for id in ids {
        let device = Device::new(id);
        let name = device.name().map_err(driver("clGetDeviceInfo"))?;
        if name.contains(&wanted) {
            return describe(device, name);
        }
    }
    Err(no_device(format!("no device name contains `{wanted}`")))
}

/// The limits of [`device`], queried from it.
pub fn device_limits() -> Result<DeviceLimits, DeviceError> {
    Ok(device()?.limits)
}

fn describe(device: Device, name: String) -> Result<ClDevice, DeviceError> {
    let info = driver("clGetDeviceInfo");
    let sizes = device.max_work_item_sizes().map_err(&info)?;
    let mut local_max = [1usize; 3];
    for (l, s) in local_max.iter_mut().zip(&sizes) {
        *l = *s;
    }
    let extensions = device.extensions().map_err(&info)?;
    let has_local = device.local_mem_type().map_err(&info)? != CL_NONE;
    let limits = DeviceLimits {
        // OpenCL bounds only the total size; Kiln's indices are 32-bit ints.
        groups_max: [i32::MAX as usize; 3],
        local_max,
        local_threads_max: device.max_work_group_size().map_err(&info)?,
        shared_bytes: if has_local {
            device.local_mem_size().map_err(&info)? as usize
        } else {
            0
        },
        half: extensions.contains("cl_khr_fp16"),
        double: extensions.contains("cl_khr_fp64"),
    };
    let align = (device.mem_base_addr_align().map_err(&info)? as usize / 8).max(4);
    Ok(ClDevice {
        device,
        name,
        limits,
        align,
    })
}

/// Builds the kernels for the device (the OpenCL C compiler's log on failure).
fn build(context: &Context, kernels: &[GpuKernel], what: &str) -> Result<Program, DeviceError> {
    let src = opencl_source(kernels);
    Program::create_and_build_from_source(context, &src, "-cl-std=CL1.2").map_err(|log| {
        DeviceError::Kernel(GpuError::Build {
            what: format!("the OpenCL C of {what}"),
            log,
        })
    })
}

/// Runs `gb` once on [`device`] with `inputs` (raw little-endian bytes, one per model input).
pub fn run(gb: &GpuBundle, inputs: &[Vec<u8>]) -> Result<GpuRun, DeviceError> {
    run_on(&device()?, gb, inputs)
}

/// Runs `gb` once on `dev`.
pub fn run_on(dev: &ClDevice, gb: &GpuBundle, inputs: &[Vec<u8>]) -> Result<GpuRun, DeviceError> {
    run_repeated(dev, gb, inputs, 1)
}

/// Runs `gb` `runs` times on `dev` (the kernels built once), each from the model's initial
/// state; the step times are each step's fastest run, the outputs the last run's.
pub fn run_repeated(
    dev: &ClDevice,
    gb: &GpuBundle,
    inputs: &[Vec<u8>],
    runs: usize,
) -> Result<GpuRun, DeviceError> {
    let runs = run_invocations(dev, gb, &super::repeated(inputs, runs))?;
    Ok(super::fastest(runs))
}

/// Makes each invocation in order on `dev` on one loaded bundle, the model's state carried
/// from each run to the next until a reset: each run's outputs and step times.
pub fn run_invocations(
    dev: &ClDevice,
    gb: &GpuBundle,
    invocations: &[Invocation<'_>],
) -> Result<Vec<GpuRun>, DeviceError> {
    if gb.api != Api::OpenCl {
        return Err(DeviceError::Refused(format!(
            "the bundle is for {}, not OpenCL",
            gb.api.name()
        )));
    }
    gb.check(&dev.limits)?;
    let prep = prepare(gb, super::first_inputs(invocations), dev.align)?;
    let what = format!("bundle {}", gb.bundle.report.model);
    let runs = execute(dev, &gb.kernels, &prep, &what, invocations)?;
    let run = |(outputs, step_times)| GpuRun {
        outputs,
        step_times,
        device: dev.name.clone(),
        arena_bytes: prep.arena_bytes,
    };
    Ok(runs.into_iter().map(run).collect())
}

/// Runs independent calls of `kernels` on `dev`, in order.
pub fn run_calls(
    dev: &ClDevice,
    kernels: &[GpuKernel],
    calls: &[KernelCall],
) -> Result<CallsRun, DeviceError> {
    kernels.iter().try_for_each(|k| k.check(&dev.limits))?;
    let prep = prepare_calls(calls, kernels.len(), dev.align)?;
    let inputs = prep.first_inputs();
    let mut runs = execute(
        dev,
        kernels,
        &prep,
        "kernel calls",
        &[Invocation::Run(&inputs)],
    )?;
    let (flat, times) = runs.pop().expect("one run");
    Ok(CallsRun {
        buffers: regroup(calls, flat),
        times,
    })
}

/// Builds the kernels and loads the weights and the state's initial values; then for each
/// invocation resets the state, or writes the inputs, launches every launch in order and reads
/// the outputs. Returns each run's outputs and launch times.
fn execute(
    dev: &ClDevice,
    table: &[GpuKernel],
    prep: &Prepared,
    what: &str,
    invocations: &[Invocation<'_>],
) -> Result<Vec<super::Executed>, DeviceError> {
    let context = Context::from_device(&dev.device).map_err(driver("clCreateContext"))?;
    #[allow(deprecated)]
    let queue = CommandQueue::create_default(&context, CL_QUEUE_PROFILING_ENABLE)
        .map_err(driver("clCreateCommandQueue"))?;
    let program = build(&context, table, what)?;
    let mut kernels = Vec::with_capacity(table.len());
    for k in table {
        let kernel = Kernel::create(&program, &k.name).map_err(driver("clCreateKernel"))?;
        let most = kernel
            .get_work_group_size(dev.device.id())
            .map_err(driver("clGetKernelWorkGroupInfo"))?;
        if k.threads_per_group() > most {
            return Err(DeviceError::Kernel(GpuError::OverLimit {
                kernel: k.name.clone(),
                what: "the work-group size (threads per group)",
                needed: k.threads_per_group().to_string(),
                limit: format!("{most} threads for this kernel (CL_KERNEL_WORK_GROUP_SIZE)"),
            }));
        }
        kernels.push(kernel);
    }
    let mut mem = Memory::new(&context, &queue, prep.arena_bytes, prep.weights.clone())?;
    let (state_at, state) = &prep.state;
    mem.write(*state_at, state)?;
    let mut runs = Vec::new();
    for invocation in invocations {
        let inputs = match invocation {
            Invocation::Reset => {
                mem.write(*state_at, state)?;
                continue;
            }
            Invocation::Run(inputs) => prep.input_writes(inputs)?,
        };
        for (offset, data) in inputs {
            mem.write(offset, data)?;
        }
        let times = launch_all(&queue, table, &kernels, &mut mem, prep)?;
        let outputs = (prep.outputs.iter())
            .map(|&(offset, bytes)| mem.read(offset, bytes))
            .collect::<Result<Vec<_>, _>>()?;
        runs.push((outputs, times));
    }
    Ok(runs)
}

/// One run, its inputs written: every launch enqueued (with the copies around it, which the
/// in-order queue runs in turn with the kernels), waited for; each launch's time.
fn launch_all(
    queue: &CommandQueue,
    table: &[GpuKernel],
    kernels: &[Kernel],
    mem: &mut Memory,
    prep: &Prepared,
) -> Result<Vec<Duration>, DeviceError> {
    let mut events: Vec<Event> = Vec::with_capacity(prep.launches.len());
    for launch in &prep.launches {
        for &c in &launch.before {
            mem.copy(c)?;
        }
        let (kernel, k) = (&kernels[launch.kernel], &table[launch.kernel]);
        for (i, slice) in launch.args.iter().enumerate() {
            let buf = mem.slice(*slice)?;
            // SAFETY: argument `i` of the kernel is a global buffer pointer.
            unsafe { kernel.set_arg(i as u32, &buf) }.map_err(driver("clSetKernelArg"))?;
        }
        let global: Vec<usize> = (0..3).map(|a| k.groups[a] * k.local[a]).collect();
        // SAFETY: the sizes are three-element arrays, as the work dimension says.
        let event = unsafe {
            queue.enqueue_nd_range_kernel(
                kernel.get(),
                3,
                std::ptr::null(),
                global.as_ptr(),
                k.local.as_ptr(),
                &[],
            )
        }
        .map_err(driver("clEnqueueNDRangeKernel"))?;
        events.push(event);
        for &c in &launch.after {
            mem.copy(c)?;
        }
    }
    queue.finish().map_err(driver("clFinish"))?;
    let profiling = driver("clGetEventProfilingInfo");
    events
        .iter()
        .map(|e| {
            let start = e.profiling_command_start().map_err(&profiling)?;
            let end = e.profiling_command_end().map_err(&profiling)?;
            Ok(Duration::from_nanos(end.saturating_sub(start)))
        })
        .collect()
}

/// The arena and weights buffers, and the sub-buffers kernels get of them.
struct Memory<'a> {
    queue: &'a CommandQueue,
    arena: Buffer<u8>,
    weights: Buffer<u8>,
    slices: HashMap<(usize, usize, bool), Buffer<u8>>,
}

impl<'a> Memory<'a> {
    fn new(
        context: &'a Context,
        queue: &'a CommandQueue,
        arena_bytes: usize,
        mut weights: Vec<u8>,
    ) -> Result<Self, DeviceError> {
        let create = driver("clCreateBuffer");
        // SAFETY: no host pointer for the arena; the weights are copied at creation.
        let arena = unsafe {
            Buffer::<u8>::create(
                context,
                CL_MEM_READ_WRITE,
                arena_bytes,
                std::ptr::null_mut(),
            )
        }
        .map_err(&create)?;
        let weights = unsafe {
            Buffer::<u8>::create(
                context,
                CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                weights.len(),
                weights.as_mut_ptr().cast(),
            )
        }
        .map_err(&create)?;
        let mut m = Memory {
            queue,
            arena,
            weights,
            slices: HashMap::new(),
        };
        m.write(0, &vec![0u8; arena_bytes])?;
        Ok(m)
    }

    fn write(&mut self, offset: usize, data: &[u8]) -> Result<(), DeviceError> {
        if data.is_empty() {
            return Ok(());
        }
        // SAFETY: a blocking write from a live slice, within the arena.
        unsafe {
            self.queue
                .enqueue_write_buffer(&mut self.arena, CL_BLOCKING, offset, data, &[])
        }
        .map_err(driver("clEnqueueWriteBuffer"))?;
        Ok(())
    }

    fn read(&self, offset: usize, bytes: usize) -> Result<Vec<u8>, DeviceError> {
        let mut out = vec![0u8; bytes];
        // SAFETY: a blocking read into a live slice, within the arena.
        unsafe {
            self.queue
                .enqueue_read_buffer(&self.arena, CL_BLOCKING, offset, &mut out, &[])
        }
        .map_err(driver("clEnqueueReadBuffer"))?;
        Ok(out)
    }

    /// Enqueues a copy within the arena.
    fn copy(&self, c: ArenaCopy) -> Result<(), DeviceError> {
        // SAFETY: both ranges lie within the arena and do not overlap (the layout puts scratch
        // slices past every other slice); no event to wait for, the queue is in order.
        let event = unsafe {
            enqueue_copy_buffer(
                self.queue.get(),
                self.arena.get(),
                self.arena.get(),
                c.from,
                c.to,
                c.bytes,
                0,
                std::ptr::null(),
            )
        }
        .map_err(|e| driver("clEnqueueCopyBuffer")(ClError(e)))?;
        // Released at once: the queue keeps the copy until it has run.
        drop(Event::new(event));
        Ok(())
    }

    /// The sub-buffer of a slice (made once).
    fn slice(&mut self, s: Slice) -> Result<cl_mem, DeviceError> {
        let key = (s.offset, s.bytes, s.region == Region::Weights);
        if let Some(b) = self.slices.get(&key) {
            return Ok(b.get());
        }
        let (parent, flags) = match s.region {
            Region::Arena => (&self.arena, CL_MEM_READ_WRITE),
            Region::Weights => (&self.weights, CL_MEM_READ_ONLY),
        };
        // SAFETY: the slice lies within its parent and starts at an aligned offset.
        let sub = unsafe { parent.create_sub_buffer(flags, s.offset, s.bytes) }
            .map_err(driver("clCreateSubBuffer"))?;
        let mem = sub.get();
        self.slices.insert(key, sub);
        Ok(mem)
    }
}
