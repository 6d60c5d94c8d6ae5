//! Checking a schedule and reading its steps.

use super::Span;
use super::{
    checksum, Entry, KernelIndex, Manifest, StateInit, Step, TensorDesc, FORMAT_VERSION, MAGIC,
    MAX_STEP_ARGS,
};
use crate::error::{BundleError, Place, Region};
use serde::Deserialize;

/// A checked schedule, read in place: its manifest, and its steps still encoded. Only
/// [`ScheduleView::parse`] makes one, so every step it yields has a kernel index and argument
/// slices within range.
#[derive(Clone, Debug)]
pub struct ScheduleView<'a> {
    manifest: Manifest,
    entry_count: u32,
    step_count: u32,
    call_count: u64,
    steps: &'a [u8],
}

impl<'a> ScheduleView<'a> {
    /// Checks a schedule against the runtime it is to run on: header, format version, checksum,
    /// arena size, kernel count, and the range of every slice it names. Never panics.
    pub fn parse(
        bytes: &'a [u8],
        arena_len: usize,
        kernel_count: usize,
    ) -> Result<Self, BundleError> {
        let (manifest, rest) = split_manifest(bytes)?;
        if manifest.arena_bytes as usize > arena_len {
            return Err(BundleError::ArenaTooSmall {
                needed: manifest.arena_bytes as usize,
                available: arena_len,
            });
        }
        if usize::from(manifest.kernel_count) != kernel_count {
            return Err(BundleError::KernelCountMismatch {
                bundle: usize::from(manifest.kernel_count),
                runtime: kernel_count,
            });
        }
        check_tensors(&manifest)?;
        let (entry_count, steps) = take::<u32>(rest).map_err(|_| BundleError::MalformedManifest)?;
        let mut view = ScheduleView {
            manifest,
            entry_count,
            step_count: 0,
            call_count: 0,
            steps,
        };
        view.check_steps()?;
        Ok(view)
    }

    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    pub fn inputs(&self) -> &[TensorDesc] {
        &self.manifest.inputs
    }

    pub fn outputs(&self) -> &[TensorDesc] {
        &self.manifest.outputs
    }

    /// The number of steps: kernel calls as the schedule lists them, each loop's body once.
    pub fn step_count(&self) -> u32 {
        self.step_count
    }

    /// The number of entries: steps and loop starts.
    pub fn entry_count(&self) -> u32 {
        self.entry_count
    }

    /// The kernel calls a run makes: `count` times through each loop's body.
    pub fn call_count(&self) -> u64 {
        self.call_count
    }

    /// The entries as encoded: calls, and loops before their bodies.
    pub fn entries(&self) -> Entries<'a> {
        Entries {
            bytes: self.steps,
            next: 0,
            count: self.entry_count,
            calls: 0,
        }
    }

    /// Every kernel call of a run in order, loops unrolled and window arguments moved to their
    /// iteration's slice.
    pub fn calls(&self) -> Calls<'a> {
        Calls {
            entries: self.entries(),
            body: None,
        }
    }

    fn check_steps(&mut self) -> Result<(), BundleError> {
        let mut entries = self.entries();
        // The loop being checked: its count, and how many of its body's steps are left.
        let mut inside: Option<(u32, u16)> = None;
        let mut calls = 0u64;
        for step in 0..self.entry_count {
            match entries.try_next()? {
                Entry::Loop { count, steps } => {
                    if inside.is_some()
                        || u64::from(step) + u64::from(steps) >= u64::from(self.entry_count)
                    {
                        return Err(BundleError::MalformedLoop { step });
                    }
                    calls += u64::from(count) * u64::from(steps);
                    inside = (steps > 0).then_some((count, steps));
                }
                Entry::Call(call) => {
                    let count = inside.map(|(count, _)| count);
                    self.check_call(step, &call, count)?;
                    inside = match inside {
                        Some((count, left)) if left > 1 => Some((count, left - 1)),
                        Some(_) => None,
                        None => {
                            calls += 1;
                            None
                        }
                    };
                }
            }
        }
        self.call_count = calls;
        self.step_count = entries.calls;
        match entries.bytes.len() {
            0 => Ok(()),
            count => Err(BundleError::TrailingBytes { count }),
        }
    }

    /// Checks a call's kernel and arguments; `count` is the iterations of the loop it is in.
    fn check_call(&self, step: u32, decoded: &Step, count: Option<u32>) -> Result<(), BundleError> {
        let kernel_count = usize::from(self.manifest.kernel_count);
        let KernelIndex(kernel) = decoded.kernel;
        if usize::from(kernel) >= kernel_count {
            return Err(BundleError::KernelOutOfRange {
                step,
                kernel,
                kernel_count,
            });
        }
        for (arg, &value) in decoded.args.iter().enumerate() {
            let place = Place::StepArg {
                step,
                arg: arg as u8,
            };
            // A window is checked at its first and last iteration: it moves linearly between.
            let last = match (value.is_window(), count) {
                (false, _) => 0,
                (true, Some(count)) => count.saturating_sub(1),
                (true, None) => return Err(BundleError::MalformedLoop { step }),
            };
            for iteration in [0, last] {
                let Some((region, span)) = value.at(iteration) else {
                    return Err(BundleError::MalformedLoop { step });
                };
                check_span(&self.manifest, place, region, span)?;
            }
        }
        Ok(())
    }
}

pub fn read_manifest(bytes: &[u8]) -> Result<Manifest, BundleError> {
    split_manifest(bytes).map(|(manifest, _steps)| manifest)
}

/// The manifest, and the encoded steps that follow it.
fn split_manifest(bytes: &[u8]) -> Result<(Manifest, &[u8]), BundleError> {
    let body = read_header(bytes)?;
    take::<Manifest>(body).map_err(|_| BundleError::MalformedManifest)
}

/// Checks magic, version and checksum; returns the body.
fn read_header(bytes: &[u8]) -> Result<&[u8], BundleError> {
    let (&found, rest) = bytes
        .split_first_chunk::<4>()
        .ok_or(BundleError::Truncated)?;
    if found != MAGIC {
        return Err(BundleError::BadMagic { found });
    }
    let (version, rest) = take::<u16>(rest).map_err(header_error)?;
    if version != FORMAT_VERSION {
        return Err(BundleError::VersionMismatch {
            found: version,
            expected: FORMAT_VERSION,
        });
    }
    let (body_bytes, rest) = take::<u32>(rest).map_err(header_error)?;
    let (body_crc, rest) = take::<u32>(rest).map_err(header_error)?;
    let body = rest
        .get(..body_bytes as usize)
        .ok_or(BundleError::Truncated)?;
    let found = checksum(body);
    if found != body_crc {
        return Err(BundleError::ChecksumMismatch {
            found,
            expected: body_crc,
        });
    }
    match rest.len() - body.len() {
        0 => Ok(body),
        count => Err(BundleError::TrailingBytes { count }),
    }
}

fn header_error(error: postcard::Error) -> BundleError {
    match error {
        postcard::Error::DeserializeUnexpectedEnd => BundleError::Truncated,
        _ => BundleError::MalformedHeader,
    }
}

fn check_tensors(manifest: &Manifest) -> Result<(), BundleError> {
    check_state(manifest)?;
    for (index, tensor) in manifest.inputs.iter().enumerate() {
        check_tensor(manifest, Place::Input { index: index as u8 }, tensor)?;
    }
    for (index, tensor) in manifest.outputs.iter().enumerate() {
        check_tensor(manifest, Place::Output { index: index as u8 }, tensor)?;
    }
    Ok(())
}

/// The state lies in the arena, and its initial values, if not zeros, in the weights and as long.
fn check_state(manifest: &Manifest) -> Result<(), BundleError> {
    let state = manifest.state;
    check_span(manifest, Place::State, Region::Arena, state.span)?;
    if let StateInit::Weights(init) = state.init {
        check_span(manifest, Place::StateInit, Region::Weights, init)?;
        if init.bytes != state.span.bytes {
            return Err(BundleError::StateInitMismatch {
                state_bytes: state.span.bytes,
                init_bytes: init.bytes,
            });
        }
    }
    Ok(())
}

fn check_tensor(manifest: &Manifest, place: Place, tensor: &TensorDesc) -> Result<(), BundleError> {
    check_span(manifest, place, Region::Arena, tensor.span)?;
    let shape_bytes = tensor.shape_bytes().unwrap_or(u64::MAX);
    if shape_bytes != u64::from(tensor.span.bytes) {
        return Err(BundleError::ShapeMismatch {
            place,
            bytes: tensor.span.bytes,
            shape_bytes,
        });
    }
    Ok(())
}

fn check_span(
    manifest: &Manifest,
    place: Place,
    region: Region,
    span: Span,
) -> Result<(), BundleError> {
    let region_bytes = match region {
        Region::Arena => manifest.arena_bytes,
        Region::Weights => manifest.weights.bytes,
    };
    match span.within(region_bytes) {
        Some(_) => Ok(()),
        None => Err(BundleError::SliceOutOfRange {
            place,
            region,
            offset: span.offset,
            bytes: span.bytes,
            region_bytes,
        }),
    }
}

fn take<'de, T: Deserialize<'de>>(bytes: &'de [u8]) -> postcard::Result<(T, &'de [u8])> {
    postcard::take_from_bytes(bytes)
}

/// The steps of a [`ScheduleView`], decoded one at a time.
/// The entries of a checked schedule, decoded one at a time.
#[derive(Clone, Debug)]
pub struct Entries<'a> {
    bytes: &'a [u8],
    next: u32,
    count: u32,
    /// Calls decoded so far: the next call's step index.
    calls: u32,
}

impl Entries<'_> {
    fn try_next(&mut self) -> Result<Entry, BundleError> {
        let step = self.next;
        let (decoded, rest) =
            take::<Entry>(self.bytes).map_err(|_| BundleError::MalformedStep { step })?;
        self.bytes = rest;
        self.next += 1;
        self.calls += u32::from(matches!(decoded, Entry::Call(_)));
        Ok(decoded)
    }
}

impl Iterator for Entries<'_> {
    type Item = Entry;

    /// Decoding cannot fail on a view made by [`ScheduleView::parse`], which decoded every entry.
    fn next(&mut self) -> Option<Entry> {
        if self.next == self.count {
            return None;
        }
        self.try_next().ok()
    }
}

/// One kernel call of a run: its step (the position of its call among the schedule's calls,
/// loop entries not counted, the same at every iteration), its kernel, and each argument's
/// region and slice at this iteration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Call {
    pub step: u32,
    pub kernel: KernelIndex,
    pub args: heapless::Vec<(Region, Span), MAX_STEP_ARGS>,
}

/// The calls of a run: see [`ScheduleView::calls`].
#[derive(Clone, Debug)]
pub struct Calls<'a> {
    entries: Entries<'a>,
    body: Option<LoopRun<'a>>,
}

/// The loop being run: its body's first entry, where it is in the body, and the iteration.
#[derive(Clone, Debug)]
struct LoopRun<'a> {
    start: Entries<'a>,
    cursor: Entries<'a>,
    steps: u16,
    done: u16,
    count: u32,
    iteration: u32,
}

impl Iterator for Calls<'_> {
    type Item = Call;

    fn next(&mut self) -> Option<Call> {
        loop {
            if let Some(run) = &mut self.body {
                if run.iteration == run.count {
                    self.body = None;
                    continue;
                }
                if run.done == run.steps {
                    run.iteration += 1;
                    run.done = 0;
                    run.cursor = run.start.clone();
                    continue;
                }
                let step = run.cursor.calls;
                run.done += 1;
                let Entry::Call(call) = run.cursor.next()? else {
                    return None;
                };
                return resolve(step, call, run.iteration);
            }
            let step = self.entries.calls;
            match self.entries.next()? {
                Entry::Call(call) => return resolve(step, call, 0),
                Entry::Loop { count, steps } => {
                    let start = self.entries.clone();
                    for _ in 0..steps {
                        self.entries.next()?;
                    }
                    self.body = Some(LoopRun {
                        cursor: start.clone(),
                        start,
                        steps,
                        done: 0,
                        count,
                        iteration: 0,
                    });
                }
            }
        }
    }
}

/// A call's arguments at `iteration` (checked by [`ScheduleView::parse`] to lie in range).
fn resolve(step: u32, call: Step, iteration: u32) -> Option<Call> {
    let mut args = heapless::Vec::new();
    for arg in &call.args {
        args.push(arg.at(iteration)?).ok()?;
    }
    Some(Call {
        step,
        kernel: call.kernel,
        args,
    })
}
