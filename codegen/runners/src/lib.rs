//! Where Kiln's bundles run, above the compiler (`kiln-codegen`): the host ([`host`]: the
//! kernels compiled by the system C compiler, run by the firmware's executor in this process),
//! the boards ([`board`]: firmware built with the bundle, run under QEMU or flashed with
//! probe-rs), and edge GPUs ([`gpu`]: the OpenCL and Vulkan runtimes). The host and the
//! emulated boards are also cost models for the compiler's BEAM search
//! ([`host::HostWallTime`], [`board::measure::BoardCost`]). All of them are
//! [`Runner`]s, chosen by name with [`by_name`].

pub mod board;
pub mod gpu;
pub mod host;
pub mod runner;

pub use runner::{
    by_name, Case, CaseError, CaseOutcome, Measure, Ran, RunError, Runner, RunnerOptions, Timed,
};

/// One invocation of a model kept loaded between invocations.
#[derive(Clone, Copy, Debug)]
pub enum Invocation<'a> {
    /// A run on these inputs, from the state the previous runs left.
    Run(&'a [Vec<u8>]),
    /// The state back to its initial values (`Executor::reset`).
    Reset,
}
