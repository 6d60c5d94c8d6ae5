//! Kiln on 64-bit Arm Linux (AArch64): runs every model of the batch linked in at build time
//! (`KILN_BATCH_DIR`), one after the other, in one arena.

include!(concat!(env!("OUT_DIR"), "/batch.rs"));

fn main() {
    // SAFETY: `main` runs once, so this is the only reference to the arena.
    let arena = unsafe { BATCH_ARENA.take() };
    kiln_board::run_batch(&CASES, arena)
}
