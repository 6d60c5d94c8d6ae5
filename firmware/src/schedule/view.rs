//! Checking a schedule and reading its steps.

use super::Span;
use super::{checksum, Arg, KernelIndex, Manifest, Step, TensorDesc, FORMAT_VERSION, MAGIC};
use crate::error::{BundleError, Place, Region};
use serde::Deserialize;

/// A checked schedule, read in place: its manifest, and its steps still encoded. Only
/// [`ScheduleView::parse`] makes one, so every step it yields has a kernel index and argument
/// slices within range.
#[derive(Clone, Debug)]
pub struct ScheduleView<'a> {
    manifest: Manifest,
    step_count: u32,
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
        let (step_count, steps) = take::<u32>(rest).map_err(|_| BundleError::MalformedManifest)?;
        let view = ScheduleView {
            manifest,
            step_count,
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

    pub fn step_count(&self) -> u32 {
        self.step_count
    }

    /// The steps in order, decoded one at a time.
    pub fn steps(&self) -> Steps<'a> {
        Steps {
            bytes: self.steps,
            next: 0,
            count: self.step_count,
        }
    }

    fn check_steps(&self) -> Result<(), BundleError> {
        let mut steps = self.steps();
        for step in 0..self.step_count {
            let decoded = steps.try_next()?;
            self.check_step(step, &decoded)?;
        }
        match steps.bytes.len() {
            0 => Ok(()),
            count => Err(BundleError::TrailingBytes { count }),
        }
    }

    fn check_step(&self, step: u32, decoded: &Step) -> Result<(), BundleError> {
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
            let (region, span) = match value {
                Arg::Arena(span) => (Region::Arena, span),
                Arg::Weights(span) => (Region::Weights, span),
            };
            check_span(&self.manifest, place, region, span)?;
        }
        Ok(())
    }
}

/// Checks a schedule's header and checksum and decodes its manifest, without checking the manifest
/// against a runtime: a board's build script uses this to size the arena.
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
    for (index, tensor) in manifest.inputs.iter().enumerate() {
        check_tensor(manifest, Place::Input { index: index as u8 }, tensor)?;
    }
    for (index, tensor) in manifest.outputs.iter().enumerate() {
        check_tensor(manifest, Place::Output { index: index as u8 }, tensor)?;
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
#[derive(Clone, Debug)]
pub struct Steps<'a> {
    bytes: &'a [u8],
    next: u32,
    count: u32,
}

impl Steps<'_> {
    fn try_next(&mut self) -> Result<Step, BundleError> {
        let step = self.next;
        let (decoded, rest) =
            take::<Step>(self.bytes).map_err(|_| BundleError::MalformedStep { step })?;
        self.bytes = rest;
        self.next += 1;
        Ok(decoded)
    }
}

impl Iterator for Steps<'_> {
    type Item = Step;

    /// Decoding cannot fail on a view made by [`ScheduleView::parse`], which decoded every step.
    fn next(&mut self) -> Option<Step> {
        if self.next == self.count {
            return None;
        }
        self.try_next().ok()
    }
}
