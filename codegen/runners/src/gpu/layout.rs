//! Where a bundle's buffers live in device memory, shared by the runtimes.
//!
//! A device binds a buffer argument at an offset that must be a multiple of its alignment
//! (OpenCL's base address alignment, Vulkan's storage-buffer offset alignment). When every
//! offset of the planned arena (and of the weights) already is, the device memory is the plan
//! itself. Otherwise each distinct slice gets its own aligned place in a larger region: this
//! keeps every kernel's view of its buffers, at the cost of the arena's reuse of memory.

use super::{GpuBundle, GpuError, KernelCall};
use kiln_firmware::error::Region as FwRegion;
use kiln_firmware::schedule::{self as fw, Span};
use std::collections::HashMap;

/// The two device buffers a bundle uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Region {
    Arena,
    Weights,
}

/// A slice of a device buffer passed to a kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Slice {
    pub region: Region,
    pub offset: usize,
    /// At least 4, so that empty tensors still bind a valid range.
    pub bytes: usize,
}

/// One kernel launch: the kernel-table index and its buffer arguments.
pub(crate) struct Launch {
    pub kernel: usize,
    pub args: Vec<Slice>,
}

/// Launches laid out for a device, with what to write into the arena first.
pub(crate) struct Prepared {
    pub arena_bytes: usize,
    /// The weights as the device holds them.
    pub weights: Vec<u8>,
    pub launches: Vec<Launch>,
    /// Arena offset and content of each input.
    pub inputs: Vec<(usize, Vec<u8>)>,
    /// Arena offset and exact bytes of each output.
    pub outputs: Vec<(usize, usize)>,
}

/// Device offsets of the distinct spans of one region, and the region's size.
struct Placement {
    offsets: HashMap<(u32, u32), usize>,
    bytes: usize,
}

impl Placement {
    fn new(spans: &[Span], region_bytes: usize, align: usize) -> Placement {
        let align = align.max(4);
        let aligned = spans
            .iter()
            .all(|s| (s.offset as usize).is_multiple_of(align));
        let mut offsets = HashMap::new();
        let mut end = 0usize;
        for s in spans {
            let key = (s.offset, s.bytes);
            if offsets.contains_key(&key) {
                continue;
            }
            let at = if aligned {
                s.offset as usize
            } else {
                end.next_multiple_of(align)
            };
            end = end.max(at + (s.bytes as usize).max(4));
            offsets.insert(key, at);
        }
        let bytes = if aligned { region_bytes.max(end) } else { end };
        Placement {
            offsets,
            bytes: bytes + align,
        }
    }

    fn slice(&self, region: Region, s: Span) -> Slice {
        Slice {
            region,
            offset: self.offsets[&(s.offset, s.bytes)],
            bytes: (s.bytes as usize).max(4),
        }
    }
}

/// Checks `gb`'s schedule and `inputs`, and lays the buffers out for a device whose buffer
/// offsets must be multiples of `align` bytes.
pub(crate) fn prepare(
    gb: &GpuBundle,
    inputs: &[Vec<u8>],
    align: usize,
) -> Result<Prepared, GpuError> {
    let plan = fw::read_manifest(&gb.bundle.schedule).map_err(GpuError::Schedule)?;
    let parsed = fw::ScheduleView::parse(
        &gb.bundle.schedule,
        plan.arena_bytes as usize,
        gb.kernels.len(),
    )
    .map_err(GpuError::Schedule)?;
    if inputs.len() != plan.inputs.len() {
        return Err(GpuError::InputCount {
            expected: plan.inputs.len(),
            got: inputs.len(),
        });
    }
    for (index, (t, data)) in plan.inputs.iter().zip(inputs).enumerate() {
        if data.len() != t.span.bytes as usize {
            return Err(GpuError::InputSize {
                index,
                expected: t.span.bytes as usize,
                got: data.len(),
            });
        }
    }
    let calls: Vec<fw::Call> = parsed.calls().collect();
    let (mut arena_spans, mut weight_spans) = (Vec::new(), Vec::new());
    for t in plan.inputs.iter().chain(&plan.outputs) {
        arena_spans.push(t.span);
    }
    for &(region, s) in calls.iter().flat_map(|c| &c.args) {
        match region {
            FwRegion::Arena => arena_spans.push(s),
            FwRegion::Weights => weight_spans.push(s),
        }
    }
    let arena = Placement::new(&arena_spans, plan.arena_bytes as usize, align);
    let weights = Placement::new(&weight_spans, gb.bundle.weights.len(), align);
    let mut blob = vec![0u8; weights.bytes];
    for s in &weight_spans {
        let at = weights.offsets[&(s.offset, s.bytes)];
        let src = &gb.bundle.weights[s.offset as usize..(s.offset + s.bytes) as usize];
        blob[at..at + src.len()].copy_from_slice(src);
    }
    let launches = calls
        .iter()
        .map(|c| Launch {
            kernel: c.kernel.0 as usize,
            args: c
                .args
                .iter()
                .map(|&(region, s)| match region {
                    FwRegion::Arena => arena.slice(Region::Arena, s),
                    FwRegion::Weights => weights.slice(Region::Weights, s),
                })
                .collect(),
        })
        .collect();
    let offset = |t: &fw::TensorDesc| arena.slice(Region::Arena, t.span).offset;
    Ok(Prepared {
        arena_bytes: arena.bytes,
        weights: blob,
        launches,
        inputs: plan
            .inputs
            .iter()
            .zip(inputs)
            .map(|(t, d)| (offset(t), d.clone()))
            .collect(),
        outputs: plan
            .outputs
            .iter()
            .map(|t| (offset(t), t.span.bytes as usize))
            .collect(),
    })
}

/// Independent kernel calls, each with its own buffers (in argument order), laid out one after
/// the other in the arena; every buffer is both written before and read after the run.
pub(crate) fn prepare_calls(
    calls: &[KernelCall],
    kernels: usize,
    align: usize,
) -> Result<Prepared, GpuError> {
    let align = align.max(4);
    let (mut end, mut launches, mut inputs) = (0usize, Vec::new(), Vec::new());
    for (i, c) in calls.iter().enumerate() {
        if c.kernel >= kernels {
            return Err(GpuError::Refused(format!(
                "call {i} names kernel {}, there are {kernels}",
                c.kernel
            )));
        }
        let mut args = Vec::with_capacity(c.buffers.len());
        for b in &c.buffers {
            let offset = end.next_multiple_of(align);
            end = offset + b.len().max(4);
            args.push(Slice {
                region: Region::Arena,
                offset,
                bytes: b.len().max(4),
            });
            inputs.push((offset, b.clone()));
        }
        launches.push(Launch {
            kernel: c.kernel,
            args,
        });
    }
    let outputs = inputs.iter().map(|(o, d)| (*o, d.len())).collect();
    Ok(Prepared {
        arena_bytes: end + align,
        weights: vec![0; align],
        launches,
        inputs,
        outputs,
    })
}
