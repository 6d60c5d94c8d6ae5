//! Many small models run as a suite (the conformance cases): [`Case`], what became of each
//! ([`CaseOutcome`]), and how a runner's error for one case becomes that case's outcome.

use super::RunError;
use crate::gpu::DeviceError;
use crate::host::HostError;
use kiln_codegen::bundle::Bundle;
use kiln_codegen::error::chain;
use kiln_codegen::gpu::GpuError;
use std::path::PathBuf;
use std::sync::Arc;

/// One small model of a suite: its bundle and its inputs (raw little-endian, one per model
/// input).
#[derive(Clone, Copy, Debug)]
pub struct Case<'a> {
    pub bundle: &'a Bundle,
    pub inputs: &'a [Vec<u8>],
    /// How many times the model runs on the inputs, its state kept between the runs; the last
    /// outputs are the case's. On a board, above 1 only over semihosting files.
    pub invocations: usize,
}

/// What became of one model: its last run's outputs, or why it gave none.
pub type CaseOutcome = Result<Vec<Vec<u8>>, CaseError>;

/// Why a model of a suite gave no outputs.
#[derive(Clone, Debug, thiserror::Error)]
pub enum CaseError {
    /// The place cannot run it at all (a type its C compiler lacks, a feature its device
    /// lacks).
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// Its kernels did not compile for the place (the compiler's first lines).
    #[error("its kernels do not compile:\n{0}")]
    Build(String),
    /// The runtime refused it, or it stopped (a crash, a hang, a driver's error).
    #[error("{0}")]
    Failed(String),
    /// It ran, but one of its output files cannot be read.
    #[error("{}", path.display())]
    Output {
        path: PathBuf,
        #[source]
        source: Arc<std::io::Error>,
    },
}

/// How many lines of a compiler's complaint a case keeps.
const BUILD_LINES: usize = 5;

impl From<RunError> for CaseError {
    /// A run's error as its case's outcome: a feature the device lacks makes the case
    /// unsupported there, a compiler's complaint is a build failure, anything else a failure.
    fn from(e: RunError) -> CaseError {
        match &e {
            RunError::Gpu(DeviceError::Kernel(GpuError::MissingFeature { .. })) => {
                CaseError::Unsupported(e.to_string())
            }
            RunError::Host(HostError::Compile { stderr, .. }) => {
                let head: Vec<&str> = stderr.lines().take(BUILD_LINES).collect();
                CaseError::Build(head.join("\n"))
            }
            _ => CaseError::Failed(chain(&e)),
        }
    }
}
