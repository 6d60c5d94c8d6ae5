//! A rendered kernel: name, source, launch sizes and cost estimates; and its process-replay
//! record.

use super::{cstyle, KernelSource, Linkage, RenderError};
use crate::kernel::{Kernel, KernelBuffer, Opt};
use crate::linearize::{linearize, LinearizeError, Linearized};
use crate::optimize::{Candidates, SearchError};
use crate::schedule::ast::Op;
use crate::uop::{ArgId, Linear, UOpKind};
use std::fmt::Write;

/// One buffer parameter of a program.
#[derive(Clone, Debug, PartialEq)]
pub struct ProgramBuffer {
    pub id: ArgId,
    pub dtype: crate::dtype::DType,
    pub mutable: bool,
}

/// A kernel ready to compile: its C-style source and what the runtime needs to call it.
#[derive(Clone, Debug)]
pub struct Program {
    pub name: String,
    /// The source with its name open, for a file of several kernels to name.
    pub source: KernelSource,
    /// The source on its own: `source` named `name`, exported (made from `source`, which is
    /// what a bundle compiles).
    pub src: String,
    pub uops: Linear,
    pub global_size: Option<Vec<usize>>,
    pub local_size: Option<Vec<usize>>,
    /// Parameters in call order (`data0`, `data1`, … by buffer id).
    pub buffers: Vec<ProgramBuffer>,
    pub flops: u64,
    pub mem_bytes: u64,
    pub applied_opts: Vec<Opt>,
    /// AST listing, for reports and process replay.
    pub ast: String,
}

/// Why a kernel did not become a program.
#[derive(Debug, thiserror::Error)]
pub enum ProgramError {
    #[error(transparent)]
    Linearize(#[from] LinearizeError),
    #[error(transparent)]
    Render(#[from] RenderError),
}

/// Linearizes and renders `k` for its target.
pub fn to_program(k: &Kernel) -> Result<Program, ProgramError> {
    to_program_aliasing(k, &[])
}

/// [`to_program`] for a kernel run in place: the buffers in `aliased` (by id) may overlap
/// another buffer of the kernel, and lose `restrict`.
pub fn to_program_aliasing(k: &Kernel, aliased: &[u32]) -> Result<Program, ProgramError> {
    let lin: Linearized = linearize(k)?;
    let source = cstyle::render(&lin.name, &lin.uops, &k.target, aliased)?;
    let mut buffers: Vec<ProgramBuffer> = Vec::new();
    for u in &lin.uops.uops {
        if let UOpKind::DefineGlobal { buf, mutable } = u.kind {
            buffers.push(ProgramBuffer {
                id: buf,
                dtype: u.dtype.expect("typed"),
                mutable,
            });
        }
    }
    buffers.sort_by_key(|b| b.id);
    let (uop_flops, uop_mem) = flops_mem(&lin.uops);
    let threads: usize = lin
        .global_size
        .iter()
        .chain(&lin.local_size)
        .flatten()
        .product();
    let (ast_flops, ast_mem) = ast_estimates(k);
    let mut ast = String::new();
    for s in &k.ast {
        let _ = write!(ast, "{s}");
    }
    Ok(Program {
        src: source.with_name(&lin.name, Linkage::External),
        source,
        name: lin.name,
        global_size: lin.global_size,
        local_size: lin.local_size,
        buffers,
        flops: ast_flops.min(uop_flops * threads as u64),
        mem_bytes: ast_mem.min(uop_mem * threads as u64),
        applied_opts: k.applied_opts.clone(),
        uops: lin.uops,
        ast,
    })
}

/// FLOPs and global-memory bytes of one thread of `l`, loops multiplied out.
pub fn flops_mem(l: &Linear) -> (u64, u64) {
    let (mut flops, mut mem) = (0u64, 0u64);
    let mut mults: Vec<u64> = vec![1];
    let konst = |i: usize| match l.uops[i].kind {
        UOpKind::Const(c) => c.as_i64().max(0) as u64,
        _ => 1,
    };
    for u in &l.uops {
        let m = *mults.last().expect("nonempty");
        match &u.kind {
            UOpKind::Range { .. } => {
                let trips = konst(u.src[1].index()).saturating_sub(konst(u.src[0].index()));
                mults.push(m * trips.max(1));
            }
            UOpKind::EndRange => {
                mults.pop();
            }
            UOpKind::Alu(op) => {
                let lanes = u.dtype.map_or(1, |d| d.count as u64);
                let w = if matches!(
                    op,
                    crate::ops::AluOp::Ternary(crate::ops::TernaryOp::MulAcc)
                ) {
                    2
                } else {
                    1
                };
                flops += m * lanes * w;
            }
            // A multiply and an add per lane of its wider operand (4, 16 with Helium, two per
            // accumulator lane with pairs in vector lanes).
            UOpKind::Dot => {
                let lanes = |k: usize| l.uops[u.src[k].index()].dtype.map_or(4, |d| d.count as u64);
                flops += m * 2 * lanes(1).max(lanes(2));
            }
            UOpKind::Load | UOpKind::Store => {
                let buf = &l.uops[u.src[0].index()];
                if matches!(buf.kind, UOpKind::DefineGlobal { .. }) {
                    let d = if matches!(u.kind, UOpKind::Load) {
                        u.dtype
                    } else {
                        l.uops[u.src[2].index()].dtype
                    };
                    mem += m * d.map_or(0, |d| d.size() as u64);
                }
            }
            _ => {}
        }
    }
    (flops, mem)
}

fn ast_estimates(k: &Kernel) -> (u64, u64) {
    let mut flops = 0u64;
    let mut seen = std::collections::HashSet::new();
    for s in &k.ast {
        for x in s.lazyops() {
            if !seen.insert(x.key()) {
                continue;
            }
            match x.op() {
                Op::Alu(_) => flops += x.shape().iter().product::<usize>() as u64,
                Op::Reduce(..) => flops += x.src()[0].shape().iter().product::<usize>() as u64,
                _ => {}
            }
        }
    }
    let mem = k
        .bufs
        .iter()
        .zip(&k.sts)
        .filter_map(|(b, st)| match b {
            KernelBuffer::Mem(m) => Some((st.real_size() * m.dtype.size()) as u64),
            _ => None,
        })
        .sum();
    (flops.max(1), mem)
}

impl Program {
    /// The process-replay record: AST, target, opts, name and source, as stable text. Diffing
    /// these before and after a change to the generator shows every kernel it changed.
    pub fn replay_record(&self, target: &str) -> String {
        let opts: Vec<String> = self.applied_opts.iter().map(|o| o.to_string()).collect();
        format!(
            "name: {}\ntarget: {target}\nopts: [{}]\nglobal: {:?}\nlocal: {:?}\n--- ast\n{}--- src\n{}",
            self.name,
            opts.join(", "),
            self.global_size,
            self.local_size,
            self.ast,
            self.src
        )
    }
}

/// What a cost model keys a BEAM candidate by: the source it renders to (`None` when it does
/// not linearize, so the search leaves it out).
pub fn candidate_key(candidate: &Kernel) -> Option<String> {
    to_program(&candidate.laid_out().0).ok().map(|p| p.src)
}

/// The programs of a group of BEAM candidates, for a cost model to measure.
pub fn candidate_programs(group: &Candidates) -> Result<Vec<Program>, SearchError> {
    group
        .kernels
        .iter()
        .map(|k| {
            to_program(&k.laid_out().0).map_err(|e| SearchError::Measure {
                kernel: group.label.clone(),
                source: Box::new(e),
            })
        })
        .collect()
}
