//! The kernel ABI and the executor that runs a bundle's steps.
//!
//! # Kernel ABI
//!
//! Every kernel is called through one C signature, [`KernelFn`]:
//!
//! ```c
//! void kiln_kernel(void *const *args);
//! ```
//!
//! `args[i]` points at argument `i` of the step: into the arena for [`Arg::Arena`] (the kernel
//! may write there) or into the weights for [`Arg::Weights`] (flash: read only); for a window
//! argument, at this iteration's slice. The compiler
//! generates one such wrapper per kernel, which unpacks the pointers into the kernel's typed
//! parameters, in the step's argument order:
//!
//! ```c
//! static void add_8(float *restrict out, const float *restrict a, const float *restrict b);
//! void kiln_add_8(void *const *args) { add_8(args[0], args[1], args[2]); }
//! ```
//!
//! The firmware links the wrappers as one table, in [`KernelIndex`] order, and its length:
//!
//! ```c
//! typedef void (*kiln_kernel_fn)(void *const *args);
//! const kiln_kernel_fn kiln_kernels[] = { kiln_add_8, kiln_relu_8 };
//! const unsigned int kiln_kernel_count = sizeof kiln_kernels / sizeof kiln_kernels[0];
//! ```
//!
//! The arena and the weights both start on an [`ALIGN`]-byte boundary; each argument is as
//! aligned as the planner placed it within them.

use crate::element::Element;
use crate::error::{BundleError, Place, Region};
#[cfg(doc)]
use crate::schedule::Arg;
use crate::schedule::{
    checksum, Call, KernelIndex, ScheduleView, Span, StateInit, TensorDesc, MAX_STEP_ARGS,
};
use core::cell::UnsafeCell;
use core::ffi::c_void;

/// Alignment of the arena and of the weights, in bytes.
pub const ALIGN: usize = 16;

/// A kernel, as the executor calls it: see the module documentation.
pub type KernelFn = unsafe extern "C" fn(args: *const *mut c_void);

/// What the executor tells its hook around each kernel call: where a board counts instructions
/// or reads a cycle counter. `step` is the call's position among the schedule's calls (loop
/// entries not counted): a step in a loop's body is called once per iteration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum KernelEvent {
    Before { step: u32, kernel: KernelIndex },
    After { step: u32, kernel: KernelIndex },
}

/// Bytes aligned for the executor: weights in flash, `Aligned(*include_bytes!(…))`.
#[repr(C, align(16))]
pub struct Aligned<T: ?Sized>(pub T);

impl<const N: usize> Aligned<[u8; N]> {
    /// `N` zero bytes: an arena to run a model in, wherever it is placed (a `static`, the
    /// stack, a `Box`).
    pub const fn zeroed() -> Self {
        Aligned([0; N])
    }
}

/// A statically allocated arena of `N` bytes, aligned for the executor.
#[repr(C, align(16))]
pub struct Arena<const N: usize>(UnsafeCell<[u8; N]>);

// SAFETY: the only access is through `take`, whose caller guarantees a single reference.
unsafe impl<const N: usize> Sync for Arena<N> {}

impl<const N: usize> Arena<N> {
    #[allow(clippy::new_without_default)]
    pub const fn new() -> Self {
        Arena(UnsafeCell::new([0; N]))
    }

    /// The arena's bytes.
    ///
    /// # Safety
    /// Call at most once: the slice must be the only reference to the arena.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn take(&'static self) -> &'static mut [u8] {
        // SAFETY: the caller guarantees no other reference exists.
        unsafe { &mut *self.0.get() }
    }
}

/// Runs a checked bundle's steps over an arena, calling kernels from a table.
pub struct Executor<'a> {
    schedule: ScheduleView<'a>,
    kernels: &'a [KernelFn],
    arena: &'a mut [u8],
    weights: &'a [u8],
}

impl<'a> Executor<'a> {
    /// Checks that the kernels, arena and weights are the ones the bundle was compiled for: the
    /// kernel count, the arena's size and alignment, the weights' size, alignment and checksum.
    /// The model's state, if it keeps one, starts from its initial values.
    pub fn new(
        schedule: ScheduleView<'a>,
        kernels: &'a [KernelFn],
        arena: &'a mut [u8],
        weights: &'a [u8],
    ) -> Result<Self, BundleError> {
        let manifest = schedule.manifest();
        if kernels.len() != usize::from(manifest.kernel_count) {
            let bundle = usize::from(manifest.kernel_count);
            return Err(BundleError::KernelCountMismatch {
                bundle,
                runtime: kernels.len(),
            });
        }
        if arena.len() < manifest.arena_bytes as usize {
            let needed = manifest.arena_bytes as usize;
            return Err(BundleError::ArenaTooSmall {
                needed,
                available: arena.len(),
            });
        }
        check_aligned(Region::Arena, arena)?;
        check_aligned(Region::Weights, weights)?;
        if weights.len() != manifest.weights.bytes as usize {
            let expected = manifest.weights.bytes as usize;
            return Err(BundleError::WeightsSizeMismatch {
                found: weights.len(),
                expected,
            });
        }
        let found = checksum(weights);
        if found != manifest.weights.crc {
            return Err(BundleError::WeightsChecksumMismatch {
                found,
                expected: manifest.weights.crc,
            });
        }
        let mut executor = Executor {
            schedule,
            kernels,
            arena,
            weights,
        };
        executor.reset();
        Ok(executor)
    }

    /// Returns the model's state to its initial values: the next run starts a new stream. Runs
    /// in between keep the state each one leaves; a model without state is unaffected.
    pub fn reset(&mut self) {
        let state = self.schedule.manifest().state;
        // `ScheduleView::parse` checked both spans against the manifest's regions, and `new`
        // the regions against the manifest; an empty range if they were not.
        let range = state.span.within(self.arena.len() as u32).unwrap_or(0..0);
        let init = match state.init {
            StateInit::Zeros => None,
            StateInit::Weights(span) => span.within(self.weights.len() as u32),
        };
        let arena = &mut self.arena[range];
        match init.map(|r| &self.weights[r]) {
            Some(bytes) if bytes.len() == arena.len() => arena.copy_from_slice(bytes),
            _ => arena.fill(0),
        }
    }

    /// The bytes of the model's state (empty if it keeps none).
    pub fn state(&self) -> &[u8] {
        let span = self.schedule.manifest().state.span;
        let range = span.within(self.arena.len() as u32).unwrap_or(0..0);
        &self.arena[range]
    }

    /// The checked schedule this executor runs.
    pub fn schedule(&self) -> &ScheduleView<'a> {
        &self.schedule
    }

    /// The bytes of model input `index`, to fill before [`run`](Self::run).
    pub fn input_mut(&mut self, index: usize) -> Option<&mut [u8]> {
        let range = self
            .schedule
            .inputs()
            .get(index)?
            .span
            .within(self.arena.len() as u32)?;
        self.arena.get_mut(range)
    }

    /// The bytes of model output `index`, valid after [`run`](Self::run).
    pub fn output(&self, index: usize) -> Option<&[u8]> {
        let range = self
            .schedule
            .outputs()
            .get(index)?
            .span
            .within(self.arena.len() as u32)?;
        self.arena.get(range)
    }

    /// Model input `index` as `N` elements of `T`, to fill before [`run`](Self::run).
    pub fn input_array_mut<T: Element, const N: usize>(
        &mut self,
        index: usize,
    ) -> Result<&mut [T; N], BundleError> {
        let place = Place::Input { index: index as u8 };
        let desc = self.schedule.inputs().get(index);
        let range = typed_range::<T, N>(place, desc, self.arena.len())?;
        let bytes = &mut self.arena[range];
        let address = bytes.as_ptr() as usize;
        crate::element::cast_mut(bytes).ok_or(BundleError::Misaligned {
            region: Region::Arena,
            address,
        })
    }

    /// Model output `index` as `N` elements of `T`, valid after [`run`](Self::run).
    pub fn output_array<T: Element, const N: usize>(
        &self,
        index: usize,
    ) -> Result<&[T; N], BundleError> {
        let place = Place::Output { index: index as u8 };
        let desc = self.schedule.outputs().get(index);
        let bytes = &self.arena[typed_range::<T, N>(place, desc, self.arena.len())?];
        crate::element::cast(bytes).ok_or(BundleError::Misaligned {
            region: Region::Arena,
            address: bytes.as_ptr() as usize,
        })
    }

    /// Runs every step in order, each loop's body its count of times; `hook` sees each kernel
    /// call before and after it.
    pub fn run(&mut self, hook: &mut dyn FnMut(KernelEvent)) -> Result<(), BundleError> {
        let mut ran = 0u64;
        for Call { step, kernel, args } in self.schedule.calls() {
            let kernel_fn =
                *self
                    .kernels
                    .get(usize::from(kernel.0))
                    .ok_or(BundleError::KernelOutOfRange {
                        step,
                        kernel: kernel.0,
                        kernel_count: self.kernels.len(),
                    })?;
            let pointers = self.pointers(&args);
            hook(KernelEvent::Before { step, kernel });
            // SAFETY: every pointer lies within the arena or the weights (checked by
            // `ScheduleView::parse` against the manifest, at a window's first and last
            // iteration, and by `new` against the real lengths), and the kernel table holds
            // kernels of the ABI above, generated for this bundle.
            unsafe { kernel_fn(pointers.as_ptr()) };
            hook(KernelEvent::After { step, kernel });
            ran += 1;
        }
        match ran == self.schedule.call_count() {
            true => Ok(()),
            false => Err(BundleError::MalformedStep {
                step: self.schedule.entry_count(),
            }),
        }
    }

    /// One pointer per argument, into the arena or the weights.
    fn pointers(&mut self, args: &[(Region, Span)]) -> [*mut c_void; MAX_STEP_ARGS] {
        let arena = self.arena.as_mut_ptr();
        let weights = self.weights.as_ptr();
        let mut pointers = [core::ptr::null_mut(); MAX_STEP_ARGS];
        for (pointer, &(region, span)) in pointers.iter_mut().zip(args) {
            // Offsets were checked to lie within the regions; `wrapping_add` keeps this free of
            // undefined behaviour even if they did not.
            *pointer = match region {
                Region::Arena => arena.wrapping_add(span.offset as usize).cast(),
                Region::Weights => weights.wrapping_add(span.offset as usize).cast_mut().cast(),
            };
        }
        pointers
    }
}

/// The arena bytes of a model tensor, if it holds `N` elements of `T`.
fn typed_range<T: Element, const N: usize>(
    place: Place,
    desc: Option<&TensorDesc>,
    arena_bytes: usize,
) -> Result<core::ops::Range<usize>, BundleError> {
    let desc = desc.ok_or(BundleError::NoSuchTensor { place })?;
    let elements = desc.shape.iter().map(|&d| u64::from(d)).product::<u64>();
    if desc.dtype != T::DTYPE || elements != N as u64 {
        return Err(BundleError::TensorTypeMismatch {
            place,
            dtype: desc.dtype,
            elements,
            asked_dtype: T::DTYPE,
            asked_elements: N,
        });
    }
    // `ScheduleView::parse` checked the span against the manifest's arena, `Executor::new` the
    // arena against the manifest.
    desc.span
        .within(arena_bytes as u32)
        .ok_or(BundleError::SliceOutOfRange {
            place,
            region: Region::Arena,
            offset: desc.span.offset,
            bytes: desc.span.bytes,
            region_bytes: arena_bytes as u32,
        })
}

/// Empty regions are never read, so their (dangling) address does not matter.
fn check_aligned(region: Region, bytes: &[u8]) -> Result<(), BundleError> {
    let address = bytes.as_ptr() as usize;
    match bytes.is_empty() || address.is_multiple_of(ALIGN) {
        true => Ok(()),
        false => Err(BundleError::Misaligned { region, address }),
    }
}

#[cfg(test)]
pub(crate) mod tests;
