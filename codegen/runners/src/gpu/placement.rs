//! Where a bundle's buffers live in device memory, shared by the runtimes.
//!
//! A device binds a buffer argument at an offset that must be a multiple of its alignment
//! (OpenCL's base address alignment, Vulkan's storage-buffer offset alignment). The planned
//! arena (and the weights) need not respect it, so each region is laid out anew:
//!
//! - Every slice a run names (a kernel argument at one loop iteration, a model input or output,
//!   and the whole range a loop's moving argument sweeps) is either *maximal*, contained in no
//!   other, or nested in a maximal one. Nested slices keep their place within their container:
//!   a time step's row of a sequence must stay a row of the buffer that other kernels, or the
//!   caller, read or write whole. Maximal slices that share a nested one stay together too.
//! - Each such group of maximal slices gets its own aligned place. Where every group already
//!   starts aligned in the plan, the device memory is the plan itself, and keeps its reuse of
//!   memory; otherwise the groups are laid out one after the other.
//! - A kernel argument that still starts off the alignment (a row at a multiple of 40 bytes,
//!   say) is bound as an aligned scratch slice instead. In the arena the runtime copies the
//!   slice into its scratch before the launch and back after it, and launches share scratch
//!   slices; the weights never change, so each of their scratch slices is filled once, when
//!   the weights are loaded.

use super::{DeviceError, GpuBundle, KernelCall};
use kiln_firmware::error::{BundleError, Region as FwRegion};
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

/// A device copy of `bytes` bytes within the arena, from offset `from` to offset `to`. The two
/// ranges never overlap: one of them is a scratch slice, which lies past every other slice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ArenaCopy {
    pub from: usize,
    pub to: usize,
    pub bytes: usize,
}

/// One kernel launch: the kernel-table index, its buffer arguments, and the arena copies around
/// it that stand an aligned scratch slice in for each unaligned argument.
pub(crate) struct Launch {
    pub kernel: usize,
    pub args: Vec<Slice>,
    /// Made before the launch, in any order: each unaligned slice into its scratch slice.
    pub before: Vec<ArenaCopy>,
    /// Made after the launch, in this order: each scratch slice the kernel may write back into
    /// the slice it stands in for.
    pub after: Vec<ArenaCopy>,
}

impl Launch {
    fn new(kernel: usize, args: Vec<Slice>) -> Launch {
        Launch {
            kernel,
            args,
            before: Vec::new(),
            after: Vec::new(),
        }
    }
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
    /// Arena offset and initial bytes of the model's state (empty without one), written before
    /// the first run and at each reset.
    pub state: (usize, Vec<u8>),
}

impl Prepared {
    /// Each of `inputs` with the arena offset it is written at, checked against the inputs
    /// the bundle was prepared with (their count and sizes).
    pub(crate) fn input_writes<'a>(
        &self,
        inputs: &'a [Vec<u8>],
    ) -> Result<Vec<(usize, &'a [u8])>, DeviceError> {
        if inputs.len() != self.inputs.len() {
            return Err(DeviceError::InputCount {
                expected: self.inputs.len(),
                got: inputs.len(),
            });
        }
        let each = self.inputs.iter().zip(inputs).enumerate();
        each.map(
            |(index, ((offset, planned), data))| match data.len() == planned.len() {
                true => Ok((*offset, &data[..])),
                false => Err(DeviceError::InputSize {
                    index,
                    expected: planned.len(),
                    got: data.len(),
                }),
            },
        )
        .collect()
    }

    /// The inputs it was prepared with.
    pub(crate) fn first_inputs(&self) -> Vec<Vec<u8>> {
        self.inputs.iter().map(|(_, data)| data.clone()).collect()
    }
}

/// A run of maximal slices of a region that stays together on the device: its planned range,
/// the bytes its slices bind from its start, and where it starts on the device.
struct Group {
    start: usize,
    end: usize,
    extent: usize,
    device: usize,
}

/// An aligned slice that a kernel gets in place of one that starts unaligned on the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Scratch {
    /// The weights' slice of `bytes` bytes at device offset `at`, filled once with its bytes.
    Weights { at: usize, bytes: usize },
    /// The `nth` arena slice of `bytes` bytes a launch moves: the copies around each launch
    /// fill and empty it, so launches share it and the scratch stays as small as one launch
    /// needs.
    Arena { bytes: usize, nth: usize },
}

/// Where the slices of one region live on the device (see the module's notes).
struct Placement {
    align: usize,
    /// Device offset of each slice a run names, by its planned offset and size.
    offsets: HashMap<(u32, u32), usize>,
    groups: Vec<Group>,
    /// Where each scratch slice is.
    scratch: HashMap<Scratch, usize>,
    /// Device bytes used so far.
    end: usize,
}

/// Bytes a slice of `bytes` bytes binds: empty tensors still bind a valid range.
fn bound(bytes: usize) -> usize {
    bytes.max(4)
}

impl Placement {
    /// Lays out `spans` (every slice a run names in a region of `region_bytes` planned bytes)
    /// for a device that binds at multiples of `align` bytes.
    fn new(spans: &[Span], region_bytes: usize, align: usize) -> Placement {
        let align = align.max(4);
        let range = |s: &Span| (s.offset as usize, s.offset as usize + s.bytes as usize);
        // Containers come before what they contain: by start, then the longest first.
        let mut units: Vec<(usize, usize)> = spans.iter().map(range).collect();
        units.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        units.dedup();
        // The maximal slices, whose starts and ends both increase, and each slice's container:
        // the last maximal slice so far reaches furthest, so it contains any slice that ends
        // within it.
        let mut tops: Vec<(usize, usize)> = Vec::new();
        let mut container = Vec::with_capacity(units.len());
        for &(start, end) in &units {
            if tops.last().is_none_or(|&(_, top_end)| end > top_end) {
                tops.push((start, end));
            }
            container.push(tops.len() - 1);
        }
        // A slice inside two maximal slices that overlap may belong to either buffer (a row of
        // one, say, in memory the plan reuses for the other at another time), so they stay
        // together. The maximal slices containing a slice are consecutive, so `links` marks
        // where such a run starts and ends: summed up to `i`, it is positive where maximal slice
        // `i` is tied to the next.
        let mut links = vec![0isize; tops.len() + 1];
        for &(start, end) in units.iter().filter(|(start, end)| start < end) {
            let first = tops.partition_point(|t| t.1 < end);
            let last = tops.partition_point(|t| t.0 <= start);
            if first + 1 < last {
                links[first] += 1;
                links[last - 1] -= 1;
            }
        }
        let (mut groups, mut group_of) = (Vec::<Group>::new(), Vec::with_capacity(tops.len()));
        let mut tied = 0isize;
        for (i, &(start, end)) in tops.iter().enumerate() {
            match groups.last_mut() {
                Some(g) if tied > 0 => g.end = end,
                _ => groups.push(Group {
                    start,
                    end,
                    extent: 0,
                    device: start,
                }),
            }
            group_of.push(groups.len() - 1);
            tied += links[i];
        }
        for (&(start, end), &top) in units.iter().zip(&container) {
            let g = &mut groups[group_of[top]];
            g.extent = g.extent.max(start - g.start + bound(end - start));
        }
        // Where every group starts aligned in the plan, the plan is the device layout (and keeps
        // its reuse of memory); otherwise the groups go one after the other, each aligned.
        let in_place = groups.iter().all(|g| g.start.is_multiple_of(align));
        let mut used = if in_place { region_bytes } else { 0 };
        for g in &mut groups {
            if !in_place {
                g.device = used.next_multiple_of(align);
            }
            used = used.max(g.device + g.extent);
        }
        let offsets = units
            .iter()
            .zip(&container)
            .map(|(&(start, end), &top)| {
                let g = &groups[group_of[top]];
                (
                    (start as u32, (end - start) as u32),
                    g.device + (start - g.start),
                )
            })
            .collect();
        Placement {
            align,
            offsets,
            groups,
            scratch: HashMap::new(),
            end: used,
        }
    }

    /// The device offset of a slice given to [`Placement::new`].
    fn device(&self, s: Span) -> Result<usize, DeviceError> {
        self.offsets
            .get(&(s.offset, s.bytes))
            .copied()
            .ok_or_else(|| {
                DeviceError::Refused(format!(
                    "the device layout has no place for {} bytes at offset {}",
                    s.bytes, s.offset
                ))
            })
    }

    /// The device offset of slice `s` and the bytes it binds, and whether a kernel can take it
    /// there.
    fn place(&self, s: Span) -> Result<(usize, usize, bool), DeviceError> {
        let at = self.device(s)?;
        Ok((at, bound(s.bytes as usize), at.is_multiple_of(self.align)))
    }

    /// The offset of scratch slice `key` of `bytes` bytes, made on first use.
    fn scratch(&mut self, key: Scratch, bytes: usize) -> usize {
        let (end, align) = (&mut self.end, self.align);
        *self.scratch.entry(key).or_insert_with(|| {
            let slot = end.next_multiple_of(align);
            *end = slot + bytes;
            slot
        })
    }

    /// Bytes of the region on the device: every slice and scratch slice, and one alignment of
    /// slack at the end, as the runtimes have always allocated.
    fn bytes(&self) -> usize {
        self.end + self.align
    }
}

/// The range each moving argument of a loop sweeps over its iterations, by region: every slice
/// it takes lies within it, so they keep their places relative to each other even when no
/// kernel takes the whole buffer they are rows of.
fn window_ranges(parsed: &fw::ScheduleView) -> Vec<(FwRegion, Span)> {
    let mut out = Vec::new();
    // The loop whose body is being read: its count, and how many of its calls are left.
    let mut inside: Option<(u32, u16)> = None;
    for entry in parsed.entries() {
        match entry {
            fw::Entry::Loop { count, steps } => inside = (steps > 0).then_some((count, steps)),
            fw::Entry::Call(step) => {
                // A loop that runs no iteration takes no slice.
                let count = inside.map_or(0, |(count, _)| count);
                let windows = step.args.iter().filter(|a| a.is_window() && count > 0);
                for arg in windows {
                    let (Some((region, a)), Some((_, b))) = (arg.at(0), arg.at(count - 1)) else {
                        continue;
                    };
                    let start = a.offset.min(b.offset);
                    let end =
                        (a.offset.saturating_add(a.bytes)).max(b.offset.saturating_add(b.bytes));
                    out.push((region, Span::new(start, end - start)));
                }
                inside = match inside {
                    Some((count, left)) if left > 1 => Some((count, left - 1)),
                    _ => None,
                };
            }
        }
    }
    out
}

/// For each schedule entry, whether its kernel may write each argument: what the bundle's
/// programs say, or every argument where the bundle carries no programs for its entries.
fn writes(gb: &GpuBundle, parsed: &fw::ScheduleView) -> Vec<Vec<bool>> {
    let calls = parsed
        .entries()
        .filter(|e| matches!(e, fw::Entry::Call(_)))
        .count();
    let mut programs = gb.bundle.programs.iter();
    parsed
        .entries()
        .map(|e| match e {
            fw::Entry::Call(step) if calls == gb.bundle.programs.len() => {
                let p = programs.next();
                (0..step.args.len())
                    .map(|j| {
                        p.and_then(|p| p.buffers.iter().find(|b| b.id.0 as usize == j))
                            .is_none_or(|b| b.mutable)
                    })
                    .collect()
            }
            _ => Vec::new(),
        })
        .collect()
}

/// Checks `gb`'s schedule and `inputs`, and lays the buffers out for a device whose buffer
/// offsets must be multiples of `align` bytes.
pub(crate) fn prepare(
    gb: &GpuBundle,
    inputs: &[Vec<u8>],
    align: usize,
) -> Result<Prepared, DeviceError> {
    let plan = fw::read_manifest(&gb.bundle.schedule).map_err(DeviceError::Schedule)?;
    let parsed = fw::ScheduleView::parse(
        &gb.bundle.schedule,
        plan.arena_bytes as usize,
        gb.kernels.len(),
    )
    .map_err(DeviceError::Schedule)?;
    let state_init = state_init(gb, &plan)?;
    check_inputs(gb, &plan, inputs)?;
    let calls: Vec<fw::Call> = parsed.calls().collect();
    let (arena_spans, weight_spans) = spans(&plan, &parsed, &calls);
    let mut arena = Placement::new(&arena_spans, plan.arena_bytes as usize, align);
    let mut weights = Placement::new(&weight_spans, gb.bundle.weights.len(), align);
    let writes = writes(gb, &parsed);
    let launches = (calls.iter())
        .map(|c| launch(c, (&mut arena, &mut weights), &writes))
        .collect::<Result<Vec<_>, _>>()?;
    let blob = weight_blob(gb, &weights)?;
    let offset = |t: &fw::TensorDesc| arena.device(t.span);
    Ok(Prepared {
        arena_bytes: arena.bytes(),
        weights: blob,
        launches,
        inputs: plan
            .inputs
            .iter()
            .zip(inputs)
            .map(|(t, d)| Ok((offset(t)?, d.clone())))
            .collect::<Result<_, DeviceError>>()?,
        outputs: plan
            .outputs
            .iter()
            .map(|t| Ok((offset(t)?, t.span.bytes as usize)))
            .collect::<Result<_, DeviceError>>()?,
        state: match plan.state.span.bytes {
            0 => (0, Vec::new()),
            _ => (arena.device(plan.state.span)?, state_init),
        },
    })
}

/// The state's initial bytes: zeros, or its slice of the weights.
fn state_init(gb: &GpuBundle, plan: &fw::Manifest) -> Result<Vec<u8>, DeviceError> {
    Ok(match plan.state.init {
        fw::StateInit::Zeros => vec![0; plan.state.span.bytes as usize],
        fw::StateInit::Weights(span) => {
            let range = span.within(gb.bundle.weights.len() as u32).ok_or_else(|| {
                DeviceError::Schedule(BundleError::WeightsSizeMismatch {
                    found: gb.bundle.weights.len(),
                    expected: span.offset as usize + span.bytes as usize,
                })
            })?;
            gb.bundle.weights[range].to_vec()
        }
    })
}

/// The weights have the size the schedule names (its slices were checked against it), and
/// `inputs` are as many and as long as the model's.
fn check_inputs(
    gb: &GpuBundle,
    plan: &fw::Manifest,
    inputs: &[Vec<u8>],
) -> Result<(), DeviceError> {
    if gb.bundle.weights.len() != plan.weights.bytes as usize {
        return Err(DeviceError::Schedule(BundleError::WeightsSizeMismatch {
            found: gb.bundle.weights.len(),
            expected: plan.weights.bytes as usize,
        }));
    }
    if inputs.len() != plan.inputs.len() {
        return Err(DeviceError::InputCount {
            expected: plan.inputs.len(),
            got: inputs.len(),
        });
    }
    for (index, (t, data)) in plan.inputs.iter().zip(inputs).enumerate() {
        if data.len() != t.span.bytes as usize {
            return Err(DeviceError::InputSize {
                index,
                expected: t.span.bytes as usize,
                got: data.len(),
            });
        }
    }
    Ok(())
}

/// Every span of the arena and of the weights a run touches: the model's inputs and outputs,
/// its state (whole, so that a reset writes it at once), each call's arguments and each
/// window's range.
fn spans(
    plan: &fw::Manifest,
    parsed: &fw::ScheduleView,
    calls: &[fw::Call],
) -> (Vec<Span>, Vec<Span>) {
    let mut arena: Vec<Span> = (plan.inputs.iter().chain(&plan.outputs))
        .map(|t| t.span)
        .collect();
    if plan.state.span.bytes > 0 {
        arena.push(plan.state.span);
    }
    let mut weights = Vec::new();
    let args = calls.iter().flat_map(|c| &c.args).copied();
    for (region, s) in args.chain(window_ranges(parsed)) {
        match region {
            FwRegion::Arena => arena.push(s),
            FwRegion::Weights => weights.push(s),
        }
    }
    (arena, weights)
}

/// One call's launch: each argument's device slice, and the copies through scratch slices
/// an unaligned arena argument needs before it (in) and after it (out, where the kernel may
/// write it).
fn launch(
    c: &fw::Call,
    (arena, weights): (&mut Placement, &mut Placement),
    writes: &[Vec<bool>],
) -> Result<Launch, DeviceError> {
    let mut launch = Launch::new(c.kernel.0 as usize, Vec::with_capacity(c.args.len()));
    // The unaligned arena slices of this launch: device offset, bound bytes, scratch offset.
    let mut moved: Vec<(usize, usize, usize)> = Vec::new();
    for (j, &(region, s)) in c.args.iter().enumerate() {
        let (region, placement) = match region {
            FwRegion::Weights => (Region::Weights, &mut *weights),
            FwRegion::Arena => (Region::Arena, &mut *arena),
        };
        let (at, bytes, direct) = placement.place(s)?;
        let offset = if direct {
            at
        } else if region == Region::Weights {
            placement.scratch(Scratch::Weights { at, bytes }, bytes)
        } else if let Some(&(_, _, slot)) = moved.iter().find(|m| (m.0, m.1) == (at, bytes)) {
            // The same slice twice in one launch: one scratch slice, so that it stays one.
            slot
        } else {
            let nth = moved.iter().filter(|m| m.1 == bytes).count();
            let slot = placement.scratch(Scratch::Arena { bytes, nth }, bytes);
            moved.push((at, bytes, slot));
            slot
        };
        launch.args.push(Slice {
            region,
            offset,
            bytes,
        });
        if direct || region == Region::Weights || s.bytes == 0 {
            continue;
        }
        let copy = ArenaCopy {
            from: at,
            to: offset,
            bytes: s.bytes as usize,
        };
        if !launch.before.contains(&copy) {
            launch.before.push(copy);
        }
        let written = (writes.get(c.step as usize))
            .and_then(|w| w.get(j))
            .is_none_or(|&w| w);
        let back = ArenaCopy {
            from: offset,
            to: at,
            ..copy
        };
        if written && !launch.after.contains(&back) {
            launch.after.push(back);
        }
    }
    // Kiln's kernels write their first argument: where copies back overlap, it lands last.
    launch.after.reverse();
    Ok(launch)
}

/// The weights as the device holds them: each group at its device offset, then the scratch
/// copies of unaligned weight slices.
fn weight_blob(gb: &GpuBundle, weights: &Placement) -> Result<Vec<u8>, DeviceError> {
    let mut blob = vec![0u8; weights.bytes()];
    for g in &weights.groups {
        let src = gb.bundle.weights.get(g.start..g.end).ok_or_else(|| {
            DeviceError::Schedule(BundleError::WeightsSizeMismatch {
                found: gb.bundle.weights.len(),
                expected: g.end,
            })
        })?;
        blob[g.device..g.device + src.len()].copy_from_slice(src);
    }
    for (&key, &to) in &weights.scratch {
        if let Scratch::Weights { at, bytes } = key {
            blob.copy_within(at..at + bytes, to);
        }
    }
    Ok(blob)
}

/// Independent kernel calls, each with its own buffers (in argument order), laid out one after
/// the other in the arena; every buffer is both written before and read after the run.
pub(crate) fn prepare_calls(
    calls: &[KernelCall],
    kernels: usize,
    align: usize,
) -> Result<Prepared, DeviceError> {
    let align = align.max(4);
    let (mut end, mut launches, mut inputs) = (0usize, Vec::new(), Vec::new());
    for (i, c) in calls.iter().enumerate() {
        if c.kernel >= kernels {
            return Err(DeviceError::Refused(format!(
                "call {i} names kernel {}, there are {kernels}",
                c.kernel
            )));
        }
        let mut args = Vec::with_capacity(c.buffers.len());
        for b in &c.buffers {
            let offset = end.next_multiple_of(align);
            end = offset + bound(b.len());
            args.push(Slice {
                region: Region::Arena,
                offset,
                bytes: bound(b.len()),
            });
            inputs.push((offset, b.clone()));
        }
        launches.push(Launch::new(c.kernel, args));
    }
    let outputs = inputs.iter().map(|(o, d)| (*o, d.len())).collect();
    Ok(Prepared {
        arena_bytes: end + align,
        weights: vec![0; align],
        launches,
        inputs,
        outputs,
        state: (0, Vec::new()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spans(list: &[(u32, u32)]) -> Vec<Span> {
        list.iter().map(|&(o, b)| Span::new(o, b)).collect()
    }

    #[test]
    fn an_aligned_plan_is_the_device_layout() {
        let p = Placement::new(&spans(&[(0, 100), (128, 40), (256, 8)]), 300, 128);
        for (o, b) in [(0, 100), (128, 40), (256, 8)] {
            assert_eq!(p.device(Span::new(o, b)).unwrap(), o as usize);
        }
        assert!(p.bytes() >= 300);
    }

    #[test]
    fn rows_keep_their_place_in_the_buffer_they_tile() {
        // A sequence of 7 rows of 40 bytes at 8, read whole and row by row, and a buffer at 300.
        let mut list = vec![(8, 280), (300, 16)];
        list.extend((0..7).map(|t| (8 + 40 * t, 40)));
        let p = Placement::new(&spans(&list), 316, 128);
        let whole = p.device(Span::new(8, 280)).unwrap();
        assert!(whole.is_multiple_of(128), "a maximal slice starts aligned");
        for t in 0..7 {
            let row = p.device(Span::new(8 + 40 * t, 40)).unwrap();
            assert_eq!(row, whole + 40 * t as usize);
            assert_eq!(
                p.place(Span::new(8 + 40 * t, 40)).unwrap().2,
                row.is_multiple_of(128)
            );
        }
        let other = p.device(Span::new(300, 16)).unwrap();
        assert!(other.is_multiple_of(128) && (other >= whole + 280 || other + 16 <= whole));
    }

    #[test]
    fn overlapping_buffers_that_share_a_slice_stay_together() {
        let p = Placement::new(&spans(&[(4, 96), (60, 140), (64, 32), (500, 4)]), 504, 64);
        let (a, b) = (p.device(Span::new(4, 96)), p.device(Span::new(60, 140)));
        let (a, b) = (a.unwrap(), b.unwrap());
        assert_eq!(b, a + 56);
        assert_eq!(p.device(Span::new(64, 32)).unwrap(), a + 60);
        // Overlapping buffers that share no slice go their own ways.
        let p = Placement::new(&spans(&[(4, 96), (60, 140)]), 200, 64);
        let (a, b) = (p.device(Span::new(4, 96)), p.device(Span::new(60, 140)));
        assert_eq!(
            (a.unwrap().is_multiple_of(64), b.unwrap().is_multiple_of(64)),
            (true, true)
        );
    }

    #[test]
    fn scratch_slices_are_aligned_past_every_slice_and_made_once() {
        let mut p = Placement::new(&spans(&[(0, 280), (40, 40), (0, 0)]), 280, 128);
        let (at, bytes, direct) = p.place(Span::new(40, 40)).unwrap();
        assert!(!direct);
        let key = Scratch::Arena { bytes, nth: 0 };
        let slot = p.scratch(key, bytes);
        assert!(slot.is_multiple_of(128) && slot >= 280 && slot >= at + bytes);
        assert_eq!(p.scratch(key, bytes), slot);
        let next = p.scratch(Scratch::Arena { bytes, nth: 1 }, bytes);
        assert!(next >= slot + bytes && next.is_multiple_of(128));
        assert!(p.bytes() >= next + bytes);
        // An empty slice still binds four bytes.
        assert_eq!(p.place(Span::new(0, 0)).unwrap(), (0, 4, true));
        assert!(p.device(Span::new(1, 1)).is_err());
    }
}
