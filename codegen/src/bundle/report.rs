//! The human-readable report of a bundle: kernels with their cost estimates, and memory.

use crate::plan::ArenaPlan;
use crate::render::Program;
use crate::schedule::{BufKind, Schedule};
use std::fmt;

/// One kernel launch in the report.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelLine {
    pub step: usize,
    pub name: String,
    /// FLOPs and bytes of one call.
    pub flops: u64,
    pub bytes: u64,
    /// Calls per run: a loop's count for a step in its body, else 1.
    pub runs: u64,
}

/// What a compiled model costs: kernels, FLOPs, arena and weights.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    pub model: String,
    pub steps: Vec<KernelLine>,
    /// The step of each kernel call of a run, in order (loops unrolled).
    pub calls: Vec<usize>,
    pub kernels: usize,
    pub arena_bytes: usize,
    pub arena_lower_bound: usize,
    /// The first step at which the bound's bytes are alive.
    pub arena_peak_step: usize,
    /// The arena's first bytes that the model keeps from one run to the next (0: no state).
    pub state_bytes: usize,
    pub weight_bytes: usize,
    pub inputs: Vec<(Vec<usize>, String)>,
    pub outputs: Vec<(Vec<usize>, String)>,
    pub states: Vec<(Vec<usize>, String)>,
}

impl Report {
    pub fn new(
        model: &str,
        s: &Schedule,
        programs: &[Program],
        plan: &ArenaPlan,
        weight_bytes: usize,
        kernel_names: &[String],
    ) -> Report {
        let steps = programs
            .iter()
            .enumerate()
            .map(|(i, p)| KernelLine {
                step: i,
                name: p.name.clone(),
                flops: p.flops,
                bytes: p.mem_bytes,
                runs: s.loop_of(i).map_or(1, |l| l.count as u64),
            })
            .collect();
        let io = |ids: &[crate::schedule::BufId]| {
            ids.iter()
                .map(|b| {
                    let info = &s.buffers[b.0 as usize];
                    (info.shape.clone(), info.dtype.to_string())
                })
                .collect()
        };
        debug_assert!(s
            .buffers
            .iter()
            .all(|b| !matches!(b.kind, BufKind::Weight(_)) || b.bytes() > 0));
        Report {
            model: model.to_string(),
            steps,
            calls: s.call_order(),
            kernels: kernel_names.len(),
            arena_bytes: plan.arena_bytes,
            arena_lower_bound: plan.lower_bound,
            arena_peak_step: plan.peak_step,
            state_bytes: plan.state_bytes,
            weight_bytes,
            inputs: io(&s.inputs),
            outputs: io(&s.outputs),
            states: io(&s.states.iter().map(|(b, _)| *b).collect::<Vec<_>>()),
        }
    }

    pub fn total_flops(&self) -> u64 {
        self.steps.iter().map(|k| k.flops * k.runs).sum()
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "model: {}", self.model)?;
        for (i, (shape, dt)) in self.inputs.iter().enumerate() {
            writeln!(f, "input {i}: {dt} {shape:?}")?;
        }
        for (i, (shape, dt)) in self.outputs.iter().enumerate() {
            writeln!(f, "output {i}: {dt} {shape:?}")?;
        }
        for (i, (shape, dt)) in self.states.iter().enumerate() {
            writeln!(f, "state {i}: {dt} {shape:?}")?;
        }
        writeln!(
            f,
            "\n{:>4}  {:<40} {:>12} {:>12} {:>6}",
            "step", "kernel", "FLOPs", "bytes", "runs"
        )?;
        for k in &self.steps {
            writeln!(
                f,
                "{:>4}  {:<40} {:>12} {:>12} {:>6}",
                k.step, k.name, k.flops, k.bytes, k.runs
            )?;
        }
        writeln!(
            f,
            "\nsteps: {}, calls per run: {}, distinct kernels: {}",
            self.steps.len(),
            self.calls.len(),
            self.kernels
        )?;
        writeln!(f, "total FLOPs: {}", self.total_flops())?;
        writeln!(
            f,
            "arena bytes: {} (liveness lower bound {})",
            self.arena_bytes, self.arena_lower_bound
        )?;
        if self.state_bytes > 0 {
            writeln!(
                f,
                "state bytes: {} (of the arena, kept between runs)",
                self.state_bytes
            )?;
        }
        writeln!(f, "weight bytes: {}", self.weight_bytes)
    }
}
