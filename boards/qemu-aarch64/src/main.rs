//! Kiln on 64-bit Arm Linux (AArch64): runs the bundle linked in at build time, its inputs and
//! outputs files in the working directory. The same program runs on an Arm board with Linux.

include!(concat!(env!("OUT_DIR"), "/bundle.rs"));

fn main() {
    // SAFETY: `main` runs once, so this is the only reference to the arena.
    let arena = unsafe { ARENA.take() };
    kiln_board::run(SCHEDULE, &WEIGHTS.0, arena)
}
