//! The host board: a bundle's kernels compiled by the system C compiler into a shared library,
//! run by the firmware crate's executor in this process.

use crate::Invocation;
use kiln_codegen::bundle::{Bundle, KERNELS_FILE};
use kiln_codegen::kernel::Kernel;
use kiln_codegen::optimize::{Candidates, CostModel, SearchError};
use kiln_codegen::render::{candidate_key, candidate_programs, Linkage};
use kiln_firmware::exec::{Executor, KernelEvent, KernelFn};
use kiln_firmware::schedule::ScheduleView;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Errors of the host board.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("could not run the C compiler `{cc}`")]
    NoCompiler {
        cc: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the C compiler failed on {file}:\n{stderr}")]
    Compile { file: String, stderr: String },
    #[error("loading the kernels library {path}")]
    Load {
        path: String,
        #[source]
        source: libloading::Error,
    },
    /// Making the files of a timing run: `doing` says which.
    #[error("{doing}")]
    Io {
        doing: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the bundle was refused")]
    Refused(#[source] kiln_firmware::error::BundleError),
    #[error("input {index}: expected {expected} bytes, got {got}")]
    InputSize {
        index: usize,
        expected: usize,
        got: usize,
    },
    #[error("the model has {expected} inputs, {got} were given")]
    InputCount { expected: usize, got: usize },
}

/// The C compiler for the host: `$CC`, else `cc`.
pub fn host_cc() -> String {
    std::env::var("CC").unwrap_or_else(|_| "cc".to_string())
}

/// The optimization flags host kernels are compiled with: the host's own vector units.
pub const HOST_OPT: &str = "-O2 -march=native";

/// Builds `dir/kernels.c` into the library `dir/libkernels.so`.
pub fn build_library(dir: &Path) -> Result<PathBuf, HostError> {
    build_library_with(dir, HOST_OPT)
}

/// The BEAM search's cost on this host: the wall time of each candidate, compiled with
/// [`HOST_OPT`] (see [`time_kernels`]).
pub struct HostWallTime;

impl CostModel for HostWallTime {
    fn context(&self) -> Result<String, SearchError> {
        Ok(format!("host-wall {HOST_OPT}"))
    }

    fn key(&mut self, candidate: &Kernel) -> Option<String> {
        candidate_key(candidate)
    }

    fn measure(&mut self, groups: &[Candidates]) -> Result<Vec<Vec<Option<f64>>>, SearchError> {
        groups
            .iter()
            .map(|g| {
                let programs = candidate_programs(g)?;
                time_kernels(&programs, &g.buffer_bytes).map_err(|e| SearchError::Measure {
                    kernel: g.label.clone(),
                    source: Box::new(e),
                })
            })
            .collect()
    }
}

/// Rounds of timing in [`time_kernels`].
const TIMING_ROUNDS: usize = 5;

/// Wall time of one call of each program (seconds), all compiled into one library with
/// [`HOST_OPT`] and run on zeroed buffers of `buf_bytes` (by AST buffer index): the best of
/// `TIMING_ROUNDS` timings of enough repeated calls to last about a millisecond, the programs
/// timed in turn in each round.
pub fn time_kernels(
    programs: &[kiln_codegen::render::Program],
    buf_bytes: &[usize],
) -> Result<Vec<Option<f64>>, HostError> {
    let dir = tempfile::tempdir().map_err(|source| HostError::Io {
        doing: "creating a temporary folder".into(),
        source,
    })?;
    let file = dir.path().join(KERNELS_FILE);
    std::fs::write(&file, timing_source(programs)).map_err(|source| HostError::Io {
        doing: format!("writing {}", file.display()),
        source,
    })?;
    let lib = build_library(dir.path())?;
    let load = |source| HostError::Load {
        path: lib.display().to_string(),
        source,
    };
    // SAFETY: the library was generated and compiled just now from the programs above.
    let library = unsafe { libloading::Library::new(&lib) }.map_err(load)?;
    let mut storage: Vec<Vec<u128>> = buf_bytes.iter().map(|&n| aligned(n)).collect();
    let pointers: Vec<*mut std::ffi::c_void> =
        storage.iter_mut().map(|v| v.as_mut_ptr().cast()).collect();
    // Each runnable program, with its function and how many calls last about a millisecond.
    let mut timed: Vec<Option<(TimeFn, i32)>> = Vec::with_capacity(programs.len());
    for (i, p) in programs.iter().enumerate() {
        if p.buffers.iter().any(|b| b.id.0 as usize >= pointers.len()) {
            timed.push(None);
            continue;
        }
        // SAFETY: `kiln_time{i}` has this type; every buffer it touches has the size the
        // schedule gave it.
        let f: TimeFn = unsafe {
            *library
                .get::<TimeFn>(format!("kiln_time{i}\0").as_bytes())
                .map_err(load)?
        };
        // SAFETY: as above.
        let once = unsafe { f(pointers.as_ptr(), 1) }.max(1e-9);
        timed.push(Some((f, (1e-3 / once).clamp(1.0, 10_000.0) as i32)));
    }
    let best = best_of_rounds(&timed, &pointers);
    Ok(timed
        .iter()
        .zip(best)
        .map(|(t, b)| t.as_ref().map(|_| b))
        .collect())
}

/// A timing function of the generated library: seconds for `reps` calls of one program on the
/// buffers.
type TimeFn = unsafe extern "C" fn(*const *mut std::ffi::c_void, i32) -> f64;

/// The C of [`time_kernels`]: each program as `kiln_cand{i}`, and `kiln_time{i}`, which times
/// `reps` calls of it on the buffers.
fn timing_source(programs: &[kiln_codegen::render::Program]) -> String {
    use std::fmt::Write as _;
    let mut c = String::from("#include <time.h>\n");
    for (i, p) in programs.iter().enumerate() {
        let src = p
            .source
            .with_name(&format!("kiln_cand{i}"), Linkage::Internal);
        let args: Vec<String> = p
            .buffers
            .iter()
            .map(|b| {
                let t = kiln_codegen::render::c_type_name(b.dtype);
                let q = if b.mutable { "" } else { "const " };
                format!("({q}{t}*)b[{}]", b.id.0)
            })
            .collect();
        let _ = writeln!(
            c,
            "{src}\ndouble kiln_time{i}(void *const *b, int reps) {{\n  struct timespec t0, t1;\n  \
             clock_gettime(CLOCK_MONOTONIC, &t0);\n  for (int r = 0; r < reps; r++) {{ \
             kiln_cand{i}({}); __asm__ volatile(\"\" ::: \"memory\"); }}\n  \
             clock_gettime(CLOCK_MONOTONIC, &t1);\n  \
             return (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);\n}}",
            args.join(", ")
        );
    }
    c
}

/// Rounds over all programs in turn, so that a slow moment of the machine falls on every
/// program alike; each keeps its best round: seconds per call (infinity where not `timed`).
fn best_of_rounds(timed: &[Option<(TimeFn, i32)>], pointers: &[*mut std::ffi::c_void]) -> Vec<f64> {
    let mut best = vec![f64::INFINITY; timed.len()];
    for _ in 0..TIMING_ROUNDS {
        for (b, t) in best.iter_mut().zip(timed) {
            if let Some((f, reps)) = t {
                // SAFETY: `f` is a `kiln_time{i}` of the library, loaded by `time_kernels` and
                // still loaded; its buffers are `pointers`, of the sizes the schedule gave them.
                let s = unsafe { f(pointers.as_ptr(), *reps) } / f64::from(*reps);
                *b = b.min(s);
            }
        }
    }
    best
}

/// [`build_library`] with the optimization flags `opt` (`-O1`, `-O2 -march=native`, …).
pub fn build_library_with(dir: &Path, opt: &str) -> Result<PathBuf, HostError> {
    let cc = host_cc();
    let src = dir.join(KERNELS_FILE);
    let lib = dir.join("libkernels.so");
    let out = Command::new(&cc)
        .args(opt.split_whitespace())
        // `-fwrapv`: integer arithmetic wraps, as the kernels' graph defines it (a signed
        // overflow is undefined in C, and the vectorizer exploits that).
        .args([
            "-std=gnu11",
            "-fPIC",
            "-shared",
            "-fno-math-errno",
            "-fwrapv",
            "-o",
        ])
        .arg(&lib)
        .arg(&src)
        .arg("-lm")
        .output()
        .map_err(|source| HostError::NoCompiler {
            cc: cc.clone(),
            source,
        })?;
    if !out.status.success() {
        return Err(HostError::Compile {
            file: src.display().to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        });
    }
    Ok(lib)
}

/// The outputs of one run and the time each step took.
#[derive(Debug, Clone)]
pub struct HostRun {
    pub outputs: Vec<Vec<u8>>,
    pub step_times: Vec<Duration>,
    /// Wall time of each whole repeated inference ([`run_repeated`]), without per-step timing.
    pub run_times: Vec<Duration>,
}

/// 16-byte aligned zeroed bytes.
fn aligned(len: usize) -> Vec<u128> {
    vec![0u128; len.div_ceil(16).max(1)]
}

fn bytes_mut(v: &mut [u128], len: usize) -> &mut [u8] {
    // SAFETY: u128 storage is plain bytes; `len` is within it.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u8>(), len) }
}

/// Runs the bundle's schedule once with the kernels of `lib` on `inputs` (raw little-endian).
pub fn run(bundle: &Bundle, lib: &Path, inputs: &[Vec<u8>]) -> Result<HostRun, HostError> {
    run_repeated(bundle, lib, inputs, 0)
}

/// [`run`], each step's time the best of `runs` runs (at least one) of the loaded model: the
/// per-kernel times of a model whose whole run is short against a shared machine's noise.
pub fn run_best_steps(
    bundle: &Bundle,
    lib: &Path,
    inputs: &[Vec<u8>],
    runs: usize,
) -> Result<HostRun, HostError> {
    execute(bundle, lib, inputs, runs, 0)
}

/// [`run`], then `repeats` more whole inferences on the same inputs (copied in again before
/// each, outside the timed part), each timed as one piece into [`HostRun::run_times`].
pub fn run_repeated(
    bundle: &Bundle,
    lib: &Path,
    inputs: &[Vec<u8>],
    repeats: usize,
) -> Result<HostRun, HostError> {
    execute(bundle, lib, inputs, 1, repeats)
}

/// Loads the kernels and the bundle once; runs the schedule `step_runs` times (at least once)
/// timing each step, keeping each step's best, then `repeats` whole inferences timed whole.
/// A model with state carries it from each run to the next.
fn execute(
    bundle: &Bundle,
    lib: &Path,
    inputs: &[Vec<u8>],
    step_runs: usize,
    repeats: usize,
) -> Result<HostRun, HostError> {
    with_executor(bundle, lib, |ex| {
        copy_inputs(ex, inputs)?;
        let mut step_times = run_timing_steps(ex)?;
        let outputs = outputs_of(ex);
        for _ in 1..step_runs {
            copy_inputs(ex, inputs)?;
            let again = run_timing_steps(ex)?;
            for (b, t) in step_times.iter_mut().zip(again) {
                *b = (*b).min(t);
            }
        }
        let mut run_times = Vec::with_capacity(repeats);
        for _ in 0..repeats {
            copy_inputs(ex, inputs)?;
            let started = Instant::now();
            ex.run(&mut |_| {}).map_err(HostError::Refused)?;
            run_times.push(started.elapsed());
        }
        Ok(HostRun {
            outputs,
            step_times,
            run_times,
        })
    })
}

/// Loads the kernels and the bundle once and makes each invocation in order on the same arena,
/// so a streaming model carries its state from run to run: each run's outputs and step times.
pub fn run_invocations(
    bundle: &Bundle,
    lib: &Path,
    invocations: &[Invocation<'_>],
) -> Result<Vec<HostRun>, HostError> {
    with_executor(bundle, lib, |ex| {
        let mut runs = Vec::new();
        for invocation in invocations {
            match invocation {
                Invocation::Reset => ex.reset(),
                Invocation::Run(inputs) => {
                    copy_inputs(ex, inputs)?;
                    let step_times = run_timing_steps(ex)?;
                    runs.push(HostRun {
                        outputs: outputs_of(ex),
                        step_times,
                        run_times: Vec::new(),
                    });
                }
            }
        }
        Ok(runs)
    })
}

/// Loads the kernels of `lib` and checks the bundle against them; `f` gets the executor over a
/// fresh arena (its state at the initial values).
fn with_executor<T>(
    bundle: &Bundle,
    lib: &Path,
    f: impl FnOnce(&mut Executor<'_>) -> Result<T, HostError>,
) -> Result<T, HostError> {
    let load = |source| HostError::Load {
        path: lib.display().to_string(),
        source,
    };
    // SAFETY: the library is the bundle's own kernels.c, compiled just now.
    let library = unsafe { libloading::Library::new(lib) }.map_err(load)?;
    // SAFETY: kernels.c defines these two symbols with these types.
    let kernels: &[KernelFn] = unsafe {
        let table = library
            .get::<*const KernelFn>(b"kiln_kernels\0")
            .map_err(load)?;
        let count = library
            .get::<*const u32>(b"kiln_kernel_count\0")
            .map_err(load)?;
        std::slice::from_raw_parts(*table, **count as usize)
    };
    let plan =
        kiln_firmware::schedule::read_manifest(&bundle.schedule).map_err(HostError::Refused)?;
    let arena_len = plan.arena_bytes as usize;
    let parsed = ScheduleView::parse(&bundle.schedule, arena_len, kernels.len())
        .map_err(HostError::Refused)?;
    let mut arena = aligned(arena_len);
    let mut weights = aligned(bundle.weights.len());
    bytes_mut(&mut weights, bundle.weights.len()).copy_from_slice(&bundle.weights);
    let weights_bytes: &[u8] = bytes_mut(&mut weights, bundle.weights.len());
    let mut ex = Executor::new(
        parsed,
        kernels,
        bytes_mut(&mut arena, arena_len),
        weights_bytes,
    )
    .map_err(HostError::Refused)?;
    f(&mut ex)
}

/// The bytes of every model output after a run.
fn outputs_of(ex: &Executor<'_>) -> Vec<Vec<u8>> {
    let count = ex.schedule().outputs().len();
    (0..count)
        .map(|i| ex.output(i).unwrap_or_default().to_vec())
        .collect()
}

/// Copies `inputs` into the executor's input slots, each checked against its size.
fn copy_inputs(ex: &mut Executor<'_>, inputs: &[Vec<u8>]) -> Result<(), HostError> {
    let expected = ex.schedule().inputs().len();
    if inputs.len() != expected {
        return Err(HostError::InputCount {
            expected,
            got: inputs.len(),
        });
    }
    for (i, data) in inputs.iter().enumerate() {
        let slot = ex.input_mut(i).ok_or(HostError::InputCount {
            expected: i,
            got: inputs.len(),
        })?;
        if slot.len() != data.len() {
            return Err(HostError::InputSize {
                index: i,
                expected: slot.len(),
                got: data.len(),
            });
        }
        slot.copy_from_slice(data);
    }
    Ok(())
}

/// Runs the schedule once, timing each step (over all its calls, for a step in a loop).
fn run_timing_steps(ex: &mut Executor<'_>) -> Result<Vec<Duration>, HostError> {
    let mut times: Vec<Duration> = Vec::new();
    let mut started = Instant::now();
    ex.run(&mut |e| match e {
        KernelEvent::Before { .. } => started = Instant::now(),
        KernelEvent::After { step, .. } => {
            let step = step as usize;
            if times.len() <= step {
                times.resize(step + 1, Duration::ZERO);
            }
            times[step] += started.elapsed();
        }
    })
    .map_err(HostError::Refused)?;
    Ok(times)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_codegen::kernel::{Opt, OptOp};
    use kiln_codegen::optimize::search::apply_all;
    use kiln_codegen::target::Target;

    #[test]
    fn the_host_timer_measures_every_candidate() {
        let fresh = kiln_codegen::kernel::examples::matvec(16, 8, Target::c());
        let up = apply_all(&fresh, &[Opt::new(OptOp::Upcast, 0, 4)]).unwrap();
        let group = Candidates {
            kernel: 0,
            label: fresh.label(),
            kernels: vec![fresh.clone(), up],
            buffer_bytes: vec![16 * 4, 128 * 4, 8 * 4],
        };
        let mut cost = HostWallTime;
        assert!(cost.key(&fresh).is_some());
        let t = cost.measure(&[group]).unwrap();
        assert_eq!(t.len(), 1);
        assert_eq!(t[0].len(), 2);
        assert!(
            t[0].iter().all(|c| c.is_some_and(|c| c > 0.0 && c < 1e-2)),
            "{t:?}"
        );
        assert!(cost.context().unwrap().starts_with("host-wall"));
    }
}
