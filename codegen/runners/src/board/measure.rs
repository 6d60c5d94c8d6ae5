//! Kernel candidates measured on an emulated board: the cost of the board's BEAM search. Each
//! kernel's candidates become one synthetic bundle, whose kernel table holds every candidate
//! and whose schedule runs each once on the same zeroed buffers (sized like the kernel's);
//! the bundles of many kernels are linked into as few batch images as fit the board
//! ([`run_batches_counted`]), and each step's cycles, as the instruction-count plugin
//! estimates them for the board's core, are the candidates' costs (its instructions on a core
//! it has no estimate for).
//! A candidate whose C does not compile for the board, or that the image does not finish, has
//! no cost; only the board and its toolchain are errors.

use super::batch::run_batches_counted;
use super::{BoardError, BoardFiles, BoardInfo, Core};
use crate::runner::{Case, CaseError};
use kiln_codegen::bundle::{self, Bundle};
use kiln_codegen::dtype::DType;
use kiln_codegen::kernel::Kernel;
use kiln_codegen::optimize::{Candidates, CostModel, SearchError};
use kiln_codegen::plan::{ArenaPlan, Placement, ALIGN};
use kiln_codegen::render::{candidate_key, candidate_programs, Program};
use kiln_codegen::schedule::{BufId, BufKind, BufferInfo, Schedule, ScheduleItem};
use std::time::Duration;

/// Time QEMU may take per case (one kernel's candidates) of a measuring image.
const CASE_TIME: Duration = Duration::from_secs(60);

/// One kernel's candidates to measure.
#[derive(Clone, Copy, Debug)]
pub struct KernelCandidates<'a> {
    /// The kernel's name, for errors.
    pub kernel: &'a str,
    pub programs: &'a [Program],
    /// Bytes of each of the kernel's buffers, by AST buffer index.
    pub buffer_bytes: &'a [usize],
}

/// What a candidate's cost counts on `board`: the estimated cycles of its core, or its
/// instructions.
pub fn cost_unit(board: &BoardInfo) -> &'static str {
    match Core::of(board) {
        Some(_) => "estimated cycles",
        None => "instructions",
    }
}

/// The name of the board's cost, for the search cache's key: what it counts, the board, its
/// target, its CPU's C compiler flags, and a digest of the build files (so that a change of
/// either is another cost).
pub fn cost_name(board: &BoardInfo) -> Result<String, BoardError> {
    let files = BoardFiles::read(&board.name)?;
    let read = |path: std::path::PathBuf| {
        std::fs::read_to_string(&path).map_err(|source| BoardError::ConfigIo {
            board: board.name.clone(),
            file: path,
            source,
        })
    };
    let build_rs = read(files.dir.join("build.rs"))?;
    let flags = board.cpu.cflags().join(" ");
    let helper = read(super::boards_dir().join("build/src/lib.rs"))?;
    let digest =
        kiln_codegen::optimize::cache::stable_hash(&format!("{build_rs}\n{helper}\n{flags}"));
    let unit = match Core::of(board) {
        Some(core) => format!("qemu-cycles core={}", core.plugin_arg()),
        None => "qemu-insn".to_string(),
    };
    Ok(format!(
        "{unit} board={} target={} cflags=[{flags}] build={digest:016x}",
        board.name, board.target
    ))
}

/// The BEAM search's cost on an emulated board: each candidate's estimated cycles there, or
/// its instructions (see [`cost_candidates`]).
pub struct BoardCost {
    pub board: BoardInfo,
}

impl BoardCost {
    fn error(&self, e: BoardError) -> SearchError {
        SearchError::CostModel {
            place: self.board.name.clone(),
            source: Box::new(e),
        }
    }
}

impl CostModel for BoardCost {
    fn context(&self) -> Result<String, SearchError> {
        cost_name(&self.board).map_err(|e| self.error(e))
    }

    fn key(&mut self, candidate: &Kernel) -> Option<String> {
        candidate_key(candidate)
    }

    fn measure(&mut self, groups: &[Candidates]) -> Result<Vec<Vec<Option<f64>>>, SearchError> {
        let programs = groups
            .iter()
            .map(candidate_programs)
            .collect::<Result<Vec<_>, _>>()?;
        let kernels: Vec<KernelCandidates> = groups
            .iter()
            .zip(&programs)
            .map(|(g, programs)| KernelCandidates {
                kernel: &g.label,
                programs,
                buffer_bytes: &g.buffer_bytes,
            })
            .collect();
        let counts = cost_candidates(&self.board, &kernels, &mut |_, _| {});
        let counts = counts.map_err(|e| self.error(e))?;
        Ok(counts
            .into_iter()
            .map(|c| c.into_iter().map(|n| n.map(|n| n as f64)).collect())
            .collect())
    }
}

/// The cost of one run of each candidate of each kernel on `board`, in order: its estimated
/// cycles where the plugin has an estimate for the board's core, else its instructions
/// ([`cost_unit`]); `None` for a candidate that could not be measured (its C does not compile
/// for the board, it uses a buffer the kernel lacks, the image stopped in it). Errors are
/// about the board or its toolchain. `progress` gets (kernels done, kernels in all) of each
/// image run.
pub fn cost_candidates(
    board: &BoardInfo,
    kernels: &[KernelCandidates],
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Vec<Vec<Option<u64>>>, BoardError> {
    if !board.emulated {
        return Err(BoardError::NotMeasurable {
            board: board.name.clone(),
        });
    }
    let mut counts: Vec<Vec<Option<u64>>> = kernels
        .iter()
        .map(|k| vec![None; k.programs.len()])
        .collect();
    // Pieces still to measure: a kernel and some of its candidates. A piece whose C does not
    // compile is split in halves until the candidates that fail are found.
    let mut pieces: Vec<(usize, Vec<usize>)> = kernels
        .iter()
        .enumerate()
        .map(|(k, c)| {
            let usable = (0..c.programs.len())
                .filter(|&i| fits(&c.programs[i], c.buffer_bytes))
                .collect();
            (k, usable)
        })
        .filter(|(_, usable): &(usize, Vec<usize>)| !usable.is_empty())
        .collect();
    while !pieces.is_empty() {
        let bundles: Vec<Bundle> = pieces
            .iter()
            .map(|(k, which)| {
                let c = &kernels[*k];
                let programs: Vec<&Program> = which.iter().map(|&i| &c.programs[i]).collect();
                candidates_bundle(c.kernel, &programs, c.buffer_bytes)
            })
            .collect::<Result<_, _>>()?;
        let cases: Vec<Case> = bundles
            .iter()
            .map(|bundle| Case {
                bundle,
                inputs: &[],
                invocations: 1,
            })
            .collect();
        let outcomes = run_batches_counted(board, &cases, CASE_TIME, progress)?;
        let mut again = Vec::new();
        for ((k, which), outcome) in pieces.into_iter().zip(outcomes) {
            match outcome {
                Ok(run) if run.step_instructions.len() == which.len() => {
                    let costs = match run.step_cycles.len() == which.len() {
                        true => &run.step_cycles,
                        false => &run.step_instructions,
                    };
                    for (&i, &n) in which.iter().zip(costs) {
                        counts[k][i] = Some(n);
                    }
                }
                Err(CaseError::Build(_)) if which.len() > 1 => {
                    let (a, b) = which.split_at(which.len() / 2);
                    again.push((k, a.to_vec()));
                    again.push((k, b.to_vec()));
                }
                // Unmeasured: left `None`.
                _ => {}
            }
        }
        pieces = again;
    }
    Ok(counts)
}

/// Whether every buffer `p` uses is one of the kernel's.
fn fits(p: &Program, buffer_bytes: &[usize]) -> bool {
    p.buffers
        .iter()
        .all(|b| (b.id.0 as usize) < buffer_bytes.len())
}

/// A bundle that runs each of `programs` once, in order, on one set of buffers of
/// `buffer_bytes` placed side by side in the arena: no inputs, no outputs, no weights.
fn candidates_bundle(
    kernel: &str,
    programs: &[&Program],
    buffer_bytes: &[usize],
) -> Result<Bundle, BoardError> {
    let steps = programs.len();
    let buffers: Vec<BufferInfo> = buffer_bytes
        .iter()
        .map(|&n| BufferInfo {
            kind: BufKind::Intermediate,
            dtype: DType::U8,
            shape: vec![n.max(1)],
        })
        .collect();
    let mut placements = Vec::with_capacity(buffers.len());
    let mut offset = 0;
    for (i, b) in buffers.iter().enumerate() {
        placements.push(Placement {
            buf: BufId(i as u32),
            offset,
            bytes: b.bytes(),
            first: 0,
            last: steps.saturating_sub(1),
        });
        offset = (offset + b.bytes()).next_multiple_of(ALIGN);
    }
    let plan = ArenaPlan {
        placements,
        arena_bytes: offset,
        lower_bound: offset,
        peak_step: 0,
        in_place: Vec::new(),
        state_bytes: 0,
    };
    let schedule = Schedule {
        loops: vec![],
        // The kernel's wrapper passes its parameters in the order of the program's buffers.
        items: programs
            .iter()
            .map(|p| ScheduleItem {
                ast: Vec::new(),
                bufs: p.buffers.iter().map(|b| BufId(b.id.0)).collect(),
            })
            .collect(),
        buffers,
        inputs: Vec::new(),
        outputs: Vec::new(),
        states: vec![],
        weights: Vec::new(),
        channels_last: Default::default(),
    };
    let programs: Vec<Program> = programs.iter().map(|&p| p.clone()).collect();
    bundle::build(kernel, &schedule, &[], &programs, &plan, "c").map_err(|source| {
        BoardError::Candidates {
            kernel: kernel.to_string(),
            source,
        }
    })
}
