//! The instruction-count marker: the executor's hook stores to [`KILN_MARKER`] before and after
//! each kernel, and QEMU's instruction-count plugin (`boards/qemu-plugin/insn.c`), given this
//! symbol's address, prints its running count at each store.

use core::mem::MaybeUninit;
use kiln_firmware::exec::KernelEvent;

/// The word the marker stores go to; its address is all that matters. It lives in `.uninit`,
/// which the startup code neither zeroes nor copies into: a store there at boot would read as
/// a marker. (A hosted program's statics are the operating system's: zeroed, never stored to.)
#[no_mangle]
#[cfg_attr(target_os = "none", link_section = ".uninit.kiln_marker")]
static mut KILN_MARKER: MaybeUninit<u32> = MaybeUninit::uninit();

/// The executor's hook: one store to the marker per event, with the step index.
pub fn mark(event: KernelEvent) {
    let (KernelEvent::Before { step, .. } | KernelEvent::After { step, .. }) = event;
    // SAFETY: a plain store to a word nothing else reads; no reference to it is made.
    unsafe {
        core::ptr::addr_of_mut!(KILN_MARKER)
            .cast::<u32>()
            .write_volatile(step)
    };
}
