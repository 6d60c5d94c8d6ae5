//! `kiln run --steps DIR`: a streaming model over a sequence of invocations on one device,
//! its state carried from each to the next. Step `NN` reads `DIR/NN/inputs/`, writes
//! `--outputs/NN/`, and with `--expect E` is compared with `E/NN/expected/`; the kernels' costs
//! are summed over the steps.

use super::{compare_as, print_costs, run_stream_on, EstimatedCycles, Ran, RunArgs, Tolerance};
use crate::model::{compile_for, read_inputs_noting, write_outputs, Compiled};
use anyhow::{bail, Context, Result};
use kiln_runners::{Invocation, RunnerOptions};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The numbered step folders of `dir`, in order: `00`, `01`, … with none missing.
pub(crate) fn step_dirs(dir: &Path) -> Result<Vec<PathBuf>> {
    let entries = std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))?;
    let mut numbers = Vec::new();
    for entry in entries {
        let name = entry?.file_name().to_string_lossy().into_owned();
        if let Ok(n) = name.parse::<usize>() {
            numbers.push((n, name));
        }
    }
    numbers.sort();
    if numbers.is_empty() {
        bail!("{}: no step folders (00, 01, …)", dir.display());
    }
    for (k, (n, name)) in numbers.iter().enumerate() {
        if *n != k {
            bail!(
                "{}: step {k:02} is missing (the folders go on with {name}): the steps must \
                 be numbered from 00 without a gap",
                dir.display()
            );
        }
    }
    Ok(numbers
        .into_iter()
        .map(|(_, name)| dir.join(name))
        .collect())
}

/// Each step's inputs, read and checked against the model.
pub(crate) fn read_steps(dirs: &[PathBuf], c: &Compiled) -> Result<Vec<Vec<Vec<u8>>>> {
    (dirs.iter().enumerate())
        .map(|(k, d)| {
            read_inputs_noting(&d.join("inputs"), c, k == 0).with_context(|| format!("step {k:02}"))
        })
        .collect()
}

/// `kiln run --steps`: runs, writes, compares and reports every step.
pub(super) fn run_steps(a: &RunArgs, dir: &Path, options: &RunnerOptions) -> Result<ExitCode> {
    let dirs = step_dirs(dir)?;
    let expect_dirs = match &a.expect {
        Some(e) => Some(step_dirs(e)?),
        None => None,
    };
    if let (Some(e), Some(dirs_e)) = (&a.expect, &expect_dirs) {
        if dirs_e.len() != dirs.len() {
            bail!(
                "{} has {} steps, {} has {}",
                dir.display(),
                dirs.len(),
                e.display(),
                dirs_e.len()
            );
        }
    }
    let (c, runs) = run_all(a, &dirs, options)?;
    for (k, run) in runs.iter().enumerate() {
        write_outputs(&a.outputs.join(format!("{k:02}")), &c, &run.outputs)?;
    }
    let all = summed(&runs);
    print_costs(&c, &all);
    let (cost, cycles) = average(&all, runs.len());
    let cycles = cycles.map_or(String::new(), |c| format!(", {c:.0} est. cycles"));
    println!(
        "{} steps from the initial state, {} B of state carried between them; a step: {cost:.0} {} \
         on average{cycles}",
        runs.len(),
        c.bundle.report.state_bytes,
        all.unit
    );
    let Some(expect_dirs) = expect_dirs else {
        return Ok(ExitCode::SUCCESS);
    };
    let tol = Tolerance {
        rtol: a.rtol,
        atol: a.atol,
        lsb: a.lsb,
    };
    let mut matched = true;
    for (k, (run, d)) in runs.iter().zip(&expect_dirs).enumerate() {
        let prefix = format!("step {k:02}, ");
        matched &= compare_as(&c, &run.outputs, &d.join("expected"), tol, &prefix)
            .with_context(|| format!("step {k:02}"))?;
    }
    match matched {
        true => println!("all {} steps match", runs.len()),
        false => println!("MISMATCH in some of the {} steps", runs.len()),
    }
    Ok(if matched {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Compiles the model for `--board` and runs every step's inputs on one device: the compiled
/// model and each run.
fn run_all(a: &RunArgs, dirs: &[PathBuf], options: &RunnerOptions) -> Result<(Compiled, Vec<Ran>)> {
    let runner = kiln_runners::by_name(&a.board, options)?;
    let c = compile_for(&a.model, runner.as_ref())?;
    let inputs = read_steps(dirs, &c)?;
    let invocations: Vec<Invocation> = inputs.iter().map(|i| Invocation::Run(i)).collect();
    let runs = run_stream_on(&a.board, &c, &invocations, options)?;
    Ok((c, runs))
}

/// A run's cost on average over `runs` runs summed as `all` ([`summed`]): in `all`'s unit, and
/// in estimated cycles where the board has an estimate.
pub(crate) fn average(all: &Ran, runs: usize) -> (f64, Option<f64>) {
    let n = runs.max(1) as f64;
    let cost = all.step_cost.iter().sum::<f64>() / n;
    let cycles = (all.cycles.as_ref()).map(|e| e.per_step.iter().sum::<u64>() as f64 / n);
    (cost, cycles)
}

/// The runs as one: each kernel's cost and cycles summed over them, the last run's outputs.
pub(crate) fn summed(runs: &[Ran]) -> Ran {
    let last = runs.last().expect("at least one step");
    let add = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x + y).collect::<Vec<_>>();
    let step_cost = (runs.iter()).fold(vec![0.0; last.step_cost.len()], |sum, r| {
        add(&sum, &r.step_cost)
    });
    let cycles = last.cycles.as_ref().map(|e| EstimatedCycles {
        core: e.core,
        per_step: (0..e.per_step.len())
            .map(|i| {
                let each = runs
                    .iter()
                    .filter_map(|r| r.cycles.as_ref()?.per_step.get(i));
                each.sum()
            })
            .collect(),
    });
    Ran {
        outputs: last.outputs.clone(),
        step_cost,
        unit: last.unit,
        image: last.image,
        cycles,
        notes: Vec::new(),
    }
}
