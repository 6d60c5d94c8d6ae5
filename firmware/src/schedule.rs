//! The schedule format: what a bundle's `schedule.bin` holds. The host compiler writes it with
//! [`encode`] (feature `std`); the runtime checks and reads it with [`ScheduleView::parse`]. Both use
//! the types below, so the two sides cannot drift apart.
//!
//! # Layout
//!
//! Every value is encoded with postcard (integers as LEB128 varints, byte arrays raw), one after
//! the other, in this order:
//!
//! | part | content |
//! | --- | --- |
//! | header | [`MAGIC`], format version (`u16`), body bytes (`u32`), CRC-32 of the body (`u32`) |
//! | body | a [`Manifest`], the number of entries (`u32`), then that many [`Entry`]s |
//!
//! The checksum is CRC-32/ISO-HDLC (the zlib one) over the body bytes. The header's fields are
//! read one at a time, so a schedule of another format version is refused as such before
//! anything version-specific is decoded.
//!
//! # Reading without a heap
//!
//! The manifest is decoded whole into fixed-capacity `heapless` collections: at most
//! [`MAX_MODEL_TENSORS`] inputs and as many outputs, each of at most [`MAX_RANK`] dimensions.
//! Entries are not decoded into a collection: a model has hundreds of them and a small board a
//! few KiB of RAM. [`ScheduleView::parse`] decodes every entry once, to check its kernel index,
//! the range of each argument (a window's at its loop's first and last iteration) and that loops
//! neither nest nor run past the end, and keeps the encoded entries; the executor then decodes
//! one at a time as it runs ([`ScheduleView::calls`]), going back to a loop body's first entry
//! for each iteration. RAM use does not grow with the number of steps or iterations, and since
//! the bundle borrows the bytes immutably, the steps that run are the steps that were checked.
//! A step has at most [`MAX_STEP_ARGS`] arguments (the executor passes them from a stack array).

mod view;

pub use view::{read_manifest, Call, Calls, Entries, ScheduleView};

use crate::error::{CapacityError, Region};
pub use crate::scalar::Scalar;
use serde::{Deserialize, Serialize};

/// The first four bytes of every schedule.
pub const MAGIC: [u8; 4] = *b"KILN";
/// The format version this crate writes and reads. Bump it on any change to the layout.
pub const FORMAT_VERSION: u16 = 3;
/// Most arguments one step can pass to its kernel.
pub const MAX_STEP_ARGS: usize = 16;
/// Most inputs, and most outputs, a model can have.
pub const MAX_MODEL_TENSORS: usize = 8;
/// Most dimensions of a model input or output.
pub const MAX_RANK: usize = 8;

/// The checksum of the schedule body, and of the weights: CRC-32/ISO-HDLC.
pub fn checksum(bytes: &[u8]) -> u32 {
    const CRC32: crc::Crc<u32> = crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC);
    CRC32.checksum(bytes)
}

/// The fixed start of a schedule. Field order is the wire order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    pub magic: [u8; 4],
    pub version: u16,
    pub body_bytes: u32,
    pub body_crc: u32,
}

/// Position of a kernel in the firmware's kernel table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct KernelIndex(pub u16);

/// `bytes` bytes starting `offset` bytes into a region.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Span {
    pub offset: u32,
    pub bytes: u32,
}

impl Span {
    pub const fn new(offset: u32, bytes: u32) -> Self {
        Span { offset, bytes }
    }

    /// The byte range of the span, if it lies within a region of `region_bytes` bytes.
    pub fn within(self, region_bytes: u32) -> Option<core::ops::Range<usize>> {
        let end = self.offset.checked_add(self.bytes)?;
        (end <= region_bytes).then_some(self.offset as usize..end as usize)
    }
}

/// One buffer passed to a kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Arg {
    /// A slice of the arena: read and written by the kernel.
    Arena(Span),
    /// A slice of the weights: read only.
    Weights(Span),
    /// In a loop's body: a slice of the arena that is `span` at the first iteration and moves
    /// `stride` bytes at each next one (a time step's row of a sequence).
    ArenaWindow { span: Span, stride: i32 },
    /// In a loop's body: a moving slice of the weights, as [`Arg::ArenaWindow`].
    WeightsWindow { span: Span, stride: i32 },
}

impl Arg {
    /// The region the argument points into, and its slice at `iteration` of the enclosing
    /// loop (`None` if that slice would start outside the 32-bit address range).
    pub fn at(self, iteration: u32) -> Option<(Region, Span)> {
        let moved = |span: Span, stride: i32| {
            let offset = i64::from(span.offset) + i64::from(stride) * i64::from(iteration);
            Some(Span::new(u32::try_from(offset).ok()?, span.bytes))
        };
        match self {
            Arg::Arena(span) => Some((Region::Arena, span)),
            Arg::Weights(span) => Some((Region::Weights, span)),
            Arg::ArenaWindow { span, stride } => Some((Region::Arena, moved(span, stride)?)),
            Arg::WeightsWindow { span, stride } => Some((Region::Weights, moved(span, stride)?)),
        }
    }

    /// Whether the argument moves with a loop's iterations.
    pub fn is_window(self) -> bool {
        matches!(self, Arg::ArenaWindow { .. } | Arg::WeightsWindow { .. })
    }
}

/// One kernel call: the kernel and the buffers it gets, in its parameter order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    pub kernel: KernelIndex,
    pub args: heapless::Vec<Arg, MAX_STEP_ARGS>,
}

impl Step {
    pub fn new(kernel: KernelIndex, args: &[Arg]) -> Result<Self, CapacityError> {
        let args = bounded(args, CapacityError::StepArgs { len: args.len() })?;
        Ok(Step { kernel, args })
    }
}

/// One entry of a schedule: a kernel call, or the start of a counted loop.
// Entries are decoded one at a time onto the stack, and the runtime has no heap to box a call in.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Entry {
    Call(Step),
    /// The next `steps` entries, all calls, run `count` times in order; their window arguments
    /// move at each iteration. Loops do not nest.
    Loop {
        count: u32,
        steps: u16,
    },
}

/// A model input or output: where it lives in the arena, and what it holds (row-major,
/// little-endian, densely packed).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TensorDesc {
    pub span: Span,
    pub dtype: Scalar,
    pub shape: heapless::Vec<u32, MAX_RANK>,
}

impl TensorDesc {
    pub fn new(span: Span, dtype: Scalar, shape: &[u32]) -> Result<Self, CapacityError> {
        let shape = bounded(shape, CapacityError::Rank { len: shape.len() })?;
        Ok(TensorDesc { span, dtype, shape })
    }

    /// Bytes the shape and element type make; `None` on overflow.
    pub fn shape_bytes(&self) -> Option<u64> {
        let elements = self
            .shape
            .iter()
            .try_fold(1u64, |n, &d| n.checked_mul(u64::from(d)));
        elements?.checked_mul(self.dtype.size() as u64)
    }
}

/// Size and checksum of the weights a bundle was compiled with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WeightsDigest {
    pub bytes: u32,
    pub crc: u32,
}

impl WeightsDigest {
    pub fn of(weights: &[u8]) -> Self {
        WeightsDigest {
            bytes: weights.len() as u32,
            crc: checksum(weights),
        }
    }
}

/// Where a model's state starts from: after [`Executor::new`](crate::exec::Executor::new) and
/// at each [`Executor::reset`](crate::exec::Executor::reset).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum StateInit {
    /// All zero bytes.
    Zeros,
    /// A copy of this slice of the weights, as long as the state.
    Weights(Span),
}

/// A model's persistent state: bytes of the arena that keep their values from one run to the
/// next (a streaming model's ring buffers, a recurrent layer's hidden state). The planner places
/// nothing else there; the kernels read the state and write its next value in place.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct StateDesc {
    /// Where it lives in the arena; 0 bytes: the model keeps no state.
    pub span: Span,
    pub init: StateInit,
}

impl StateDesc {
    /// No state.
    pub const NONE: StateDesc = StateDesc {
        span: Span::new(0, 0),
        init: StateInit::Zeros,
    };
}

/// Everything about a bundle but its steps.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// Bytes of arena the steps use, from offset 0.
    pub arena_bytes: u32,
    pub weights: WeightsDigest,
    /// Length of the kernel table the bundle's steps index.
    pub kernel_count: u16,
    pub inputs: heapless::Vec<TensorDesc, MAX_MODEL_TENSORS>,
    pub outputs: heapless::Vec<TensorDesc, MAX_MODEL_TENSORS>,
    pub state: StateDesc,
}

impl Manifest {
    /// A manifest of a model without state (add it with [`Manifest::with_state`]).
    pub fn new(
        arena_bytes: u32,
        weights: WeightsDigest,
        kernel_count: u16,
        inputs: &[TensorDesc],
        outputs: &[TensorDesc],
    ) -> Result<Self, CapacityError> {
        let inputs = bounded(inputs, CapacityError::ModelTensors { len: inputs.len() })?;
        let outputs = bounded(outputs, CapacityError::ModelTensors { len: outputs.len() })?;
        Ok(Manifest {
            arena_bytes,
            weights,
            kernel_count,
            inputs,
            outputs,
            state: StateDesc::NONE,
        })
    }

    /// The manifest of a model that keeps `state` between runs.
    pub fn with_state(self, state: StateDesc) -> Self {
        Manifest { state, ..self }
    }
}

/// `items` in a fixed-capacity vector, or `error` if they do not fit.
fn bounded<T: Clone, const N: usize>(
    items: &[T],
    error: CapacityError,
) -> Result<heapless::Vec<T, N>, CapacityError> {
    heapless::Vec::from_slice(items).map_err(|_| error)
}

/// Writes a schedule: header, manifest, entries. Nothing is checked here; [`ScheduleView::parse`]
/// is the one check, and the host should run it on what it writes.
#[cfg(any(feature = "std", test))]
pub fn encode(manifest: &Manifest, entries: &[Entry]) -> std::vec::Vec<u8> {
    let mut body = append(std::vec::Vec::new(), manifest);
    body = append(body, &(entries.len() as u32));
    for entry in entries {
        body = append(body, entry);
    }
    let header = Header {
        magic: MAGIC,
        version: FORMAT_VERSION,
        body_bytes: body.len() as u32,
        body_crc: checksum(&body),
    };
    let mut schedule = append(std::vec::Vec::new(), &header);
    schedule.extend(body);
    schedule
}

#[cfg(any(feature = "std", test))]
fn append<T: Serialize>(out: std::vec::Vec<u8>, value: &T) -> std::vec::Vec<u8> {
    // Serializing into a growable buffer fails only for types postcard cannot write (maps or
    // sequences of unknown length); the schedule types have none.
    postcard::to_extend(value, out).expect("schedule types always serialize")
}

#[cfg(test)]
mod tests;
