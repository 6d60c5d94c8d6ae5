//! Why a bundle is refused. Every check of [`ScheduleView::parse`](crate::schedule::ScheduleView::parse) and
//! [`Executor::new`](crate::exec::Executor::new) ends in one of these, never in a panic.

use crate::scalar::Scalar;
use core::fmt;

/// The memory a slice of a schedule points into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Region {
    /// The planned arena in RAM.
    Arena,
    /// The weights in flash.
    Weights,
}

/// Which slice of a schedule an error is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Place {
    /// The model's input `index`.
    Input { index: u8 },
    /// The model's output `index`.
    Output { index: u8 },
    /// Argument `arg` of step `step`.
    StepArg { step: u32, arg: u8 },
    /// The model's state.
    State,
    /// The initial values of the model's state.
    StateInit,
}

/// A schedule that does not match this runtime, or that was damaged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum BundleError {
    /// The schedule ends before its header or body does.
    Truncated,
    /// The schedule does not start with [`MAGIC`](crate::schedule::MAGIC): not a Kiln schedule.
    BadMagic { found: [u8; 4] },
    /// The schedule was written for another version of the format.
    VersionMismatch { found: u16, expected: u16 },
    /// The body's CRC-32 is not the one its header records: the schedule was damaged.
    ChecksumMismatch { found: u32, expected: u32 },
    /// Bytes follow the end of the schedule.
    TrailingBytes { count: usize },
    /// The header could not be decoded.
    MalformedHeader,
    /// The manifest passed its checksum but could not be decoded: a writer bug.
    MalformedManifest,
    /// A step passed its checksum but could not be decoded: a writer bug, or more than
    /// [`MAX_STEP_ARGS`](crate::schedule::MAX_STEP_ARGS) arguments.
    MalformedStep { step: u32 },
    /// Entry `step` is a loop that nests in another or reaches past the last entry, or a call
    /// outside any loop with a moving (window) argument.
    MalformedLoop { step: u32 },
    /// The bundle needs a larger arena than the runtime provides.
    ArenaTooSmall { needed: usize, available: usize },
    /// The arena or the weights do not start on an [`ALIGN`](crate::exec::ALIGN) boundary.
    Misaligned { region: Region, address: usize },
    /// The bundle was compiled for another set of kernels than the ones linked in.
    KernelCountMismatch { bundle: usize, runtime: usize },
    /// A step calls a kernel past the end of the kernel table.
    KernelOutOfRange {
        step: u32,
        kernel: u16,
        kernel_count: usize,
    },
    /// A slice reaches past the end of the region it points into.
    SliceOutOfRange {
        place: Place,
        region: Region,
        offset: u32,
        bytes: u32,
        region_bytes: u32,
    },
    /// A tensor's byte size is not its shape times its element size.
    ShapeMismatch {
        place: Place,
        bytes: u32,
        shape_bytes: u64,
    },
    /// The state's initial values are not as long as the state.
    StateInitMismatch { state_bytes: u32, init_bytes: u32 },
    /// The weights linked in are not as long as the bundle's.
    WeightsSizeMismatch { found: usize, expected: usize },
    /// The weights linked in are not the bundle's.
    WeightsChecksumMismatch { found: u32, expected: u32 },
    /// The model has no such input or output.
    NoSuchTensor { place: Place },
    /// A typed view asked for other elements than the tensor holds: code generated for
    /// another bundle.
    TensorTypeMismatch {
        place: Place,
        dtype: Scalar,
        elements: u64,
        asked_dtype: Scalar,
        asked_elements: usize,
    },
}

/// A list longer than the schedule format holds: the host compiler's error when it builds a
/// [`Step`](crate::schedule::Step), [`TensorDesc`](crate::schedule::TensorDesc) or
/// [`Manifest`](crate::schedule::Manifest).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum CapacityError {
    /// More arguments than [`MAX_STEP_ARGS`](crate::schedule::MAX_STEP_ARGS).
    StepArgs { len: usize },
    /// More dimensions than [`MAX_RANK`](crate::schedule::MAX_RANK).
    Rank { len: usize },
    /// More inputs or outputs than [`MAX_MODEL_TENSORS`](crate::schedule::MAX_MODEL_TENSORS).
    ModelTensors { len: usize },
}

impl fmt::Display for CapacityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use crate::schedule::{MAX_MODEL_TENSORS, MAX_RANK, MAX_STEP_ARGS};
        match self {
            CapacityError::StepArgs { len } => {
                write!(
                    f,
                    "a step has {len} arguments, the runtime passes at most {MAX_STEP_ARGS}"
                )
            }
            CapacityError::Rank { len } => {
                write!(
                    f,
                    "a model tensor has {len} dimensions, the format holds {MAX_RANK}"
                )
            }
            CapacityError::ModelTensors { len } => write!(
                f,
                "the model has {len} inputs or outputs, the format holds {MAX_MODEL_TENSORS} \
                 of each"
            ),
        }
    }
}

/// So that host code can keep it as the `source` of its own errors.
impl core::error::Error for CapacityError {}

impl fmt::Display for Region {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Region::Arena => "arena",
            Region::Weights => "weights",
        })
    }
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Place::Input { index } => write!(f, "input {index}"),
            Place::Output { index } => write!(f, "output {index}"),
            Place::StepArg { step, arg } => write!(f, "step {step} argument {arg}"),
            Place::State => f.write_str("the state"),
            Place::StateInit => f.write_str("the state's initial values"),
        }
    }
}

impl fmt::Display for BundleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use BundleError::*;
        match self {
            Truncated => f.write_str("schedule is truncated"),
            BadMagic { found } => write!(f, "not a Kiln schedule (starts with {found:02x?})"),
            VersionMismatch { found, expected } => write!(
                f,
                "schedule format version {found}, this runtime reads version {expected}"
            ),
            ChecksumMismatch { found, expected } => write!(
                f,
                "schedule is damaged: body CRC-32 {found:#010x}, header says {expected:#010x}"
            ),
            TrailingBytes { count } => write!(f, "{count} bytes follow the end of the schedule"),
            MalformedHeader => f.write_str("schedule header cannot be decoded"),
            MalformedManifest => f.write_str("schedule manifest cannot be decoded"),
            MalformedStep { step } => write!(f, "schedule step {step} cannot be decoded"),
            MalformedLoop { step } => write!(
                f,
                "schedule step {step}: a loop nests or runs past the last step, or a moving \
                 argument is outside any loop"
            ),
            ArenaTooSmall { needed, available } => write!(
                f,
                "bundle needs a {needed}-byte arena, the runtime has {available} bytes"
            ),
            Misaligned { region, address } => {
                write!(
                    f,
                    "the {region} region at {address:#x} is not aligned to 16 bytes"
                )
            }
            KernelCountMismatch { bundle, runtime } => write!(
                f,
                "bundle was compiled for {bundle} kernels, the firmware links {runtime}"
            ),
            KernelOutOfRange {
                step,
                kernel,
                kernel_count,
            } => write!(
                f,
                "step {step} calls kernel {kernel}, the kernel table has {kernel_count}"
            ),
            SliceOutOfRange {
                place,
                region,
                offset,
                bytes,
                region_bytes,
            } => write!(
                f,
                "{place}: {bytes} bytes at {region} offset {offset} reach past its \
                 {region_bytes} bytes"
            ),
            ShapeMismatch {
                place,
                bytes,
                shape_bytes,
            } => write!(
                f,
                "{place}: {bytes} bytes, but its shape and element type make {shape_bytes}"
            ),
            StateInitMismatch {
                state_bytes,
                init_bytes,
            } => write!(
                f,
                "the state is {state_bytes} bytes, its initial values {init_bytes}"
            ),
            WeightsSizeMismatch { found, expected } => write!(
                f,
                "weights are {found} bytes, the bundle's are {expected} bytes"
            ),
            WeightsChecksumMismatch { found, expected } => write!(
                f,
                "weights are not the bundle's: CRC-32 {found:#010x}, expected {expected:#010x}"
            ),
            NoSuchTensor { place } => write!(f, "the model has no {place}"),
            TensorTypeMismatch {
                place,
                dtype,
                elements,
                asked_dtype,
                asked_elements,
            } => write!(
                f,
                "{place} holds {elements} {dtype:?} elements, asked for {asked_elements} \
                 {asked_dtype:?}"
            ),
        }
    }
}

impl core::error::Error for BundleError {}
