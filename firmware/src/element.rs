//! Typed views of a model's inputs and outputs: what code generated for one model uses to hand
//! out `&mut [f32; 490]` instead of bytes.

use crate::scalar::Scalar;

/// A Rust type that holds one element of a model tensor of [`DTYPE`](Element::DTYPE).
///
/// # Safety
/// The type's size and alignment are those of the element type, every bit pattern the kernels
/// write is a valid value of it, and it has no padding.
pub unsafe trait Element: Copy + 'static {
    const DTYPE: Scalar;
}

macro_rules! elements {
    ($($t:ty => $d:ident),* $(,)?) => {
        // SAFETY: plain numbers of the dtype's size: every bit pattern is valid, no padding.
        $(unsafe impl Element for $t { const DTYPE: Scalar = Scalar::$d; })*
    };
}

elements!(
    i8 => I8, u8 => U8, i16 => I16, u16 => U16, i32 => I32, u32 => U32,
    i64 => I64, u64 => U64, f32 => F32, f64 => F64,
);

// SAFETY: one byte; the kernels store only 0 and 1 into boolean tensors.
unsafe impl Element for bool {
    const DTYPE: Scalar = Scalar::Bool;
}

/// `bytes` as `N` elements of `T`, if the length and alignment allow it.
pub(crate) fn cast_mut<T: Element, const N: usize>(bytes: &mut [u8]) -> Option<&mut [T; N]> {
    let ok = bytes.len() == N * core::mem::size_of::<T>()
        && (bytes.as_ptr() as usize).is_multiple_of(core::mem::align_of::<T>());
    // SAFETY: the length and alignment were checked; `Element` types accept any bit pattern
    // the kernels write (and inputs are overwritten whole by the caller).
    ok.then(|| unsafe { &mut *bytes.as_mut_ptr().cast::<[T; N]>() })
}

/// `bytes` as `N` elements of `T`, if the length and alignment allow it.
pub(crate) fn cast<T: Element, const N: usize>(bytes: &[u8]) -> Option<&[T; N]> {
    let ok = bytes.len() == N * core::mem::size_of::<T>()
        && (bytes.as_ptr() as usize).is_multiple_of(core::mem::align_of::<T>());
    // SAFETY: as in `cast_mut`.
    ok.then(|| unsafe { &*bytes.as_ptr().cast::<[T; N]>() })
}
