//! Many small models on a board with few builds: the bundles are split into batches that fit
//! the board, each batch is linked into one image (the board's batch binary, see
//! `kiln-board-build`'s `KILN_BATCH_DIR`), and the image runs every model of its batch in turn
//! ([`BatchIo`]): through semihosting files `c<case>_input_<i>.bin` / `c<case>_output_<i>.bin`
//! under QEMU, or one test-vector session per model over RTT, under QEMU (its gdbstub) or on a
//! real board through its probe, several probes sharing the batches. A model that fails (a
//! refused bundle, a crash, a hang, kernels that do not compile for the board) fails alone: the
//! models after it run in a new image. [`run_batches_counted`] also counts the instructions of
//! each model's steps (the BEAM search's board cost, see [`measure`](super::measure)).

use super::build::{build_image, BuildOptions, BuiltImage};
use super::elf::Elf;
use super::qemu::{
    channel_command_line, emulator, gdb_args, plugin, plugin_args, read_marks, run_under_gdb,
    run_with_timeout, Core, IoDir,
};
use super::rtt::{self, Sessions};
use super::{boards_dir, io_error, BoardError, BoardFiles, BoardInfo};
use crate::runner::{Case, CaseError, CaseOutcome};
use kiln_codegen::bundle::Bundle;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// What one model of a counted batch gave: its outputs and the instructions of each step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaseRun {
    pub outputs: Vec<Vec<u8>>,
    /// Instructions each step's kernel executed, in step order (exact, identical run to run).
    pub step_instructions: Vec<u64>,
    /// The cycles of `step_instructions` as the plugin estimates them for the board's core;
    /// empty where it has no estimate for that core.
    pub step_cycles: Vec<u64>,
}

/// What became of one model of a counted batch.
pub type CountedOutcome = Result<CaseRun, CaseError>;

/// Most models in one image.
const MAX_CASES: usize = 200;
/// Time for QEMU to start and finish a batch, and for each model in it.
const BATCH_TIME: Duration = Duration::from_secs(30);
const CASE_TIME: Duration = Duration::from_secs(5);

/// How a batch image's models reach it and their outputs come back.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum BatchIo {
    /// An emulated board, through semihosting files.
    #[default]
    Files,
    /// An emulated board built with its `rtt` feature, one session per model over RTT through
    /// QEMU's gdbstub: the path of a real board.
    Rtt,
    /// A real board through the probe with this serial number (`None`: the only one
    /// attached); needs feature `probe`.
    Probe(Option<String>),
}

/// Runs every case on `board` through semihosting files (see [`run_batches_with`]).
pub fn run_batches(
    board: &BoardInfo,
    cases: &[Case],
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Vec<CaseOutcome>, BoardError> {
    run_batches_with(board, cases, &BatchIo::Files, progress)
}

/// Runs every case on `board`, in as few images as fit it, through `io`; one outcome per case,
/// in order. `progress` gets (cases done, cases in all). Errors are about the board or its
/// toolchain (no batch binary, a failed build, no probe): the cases' own failures are their
/// outcomes.
pub fn run_batches_with(
    board: &BoardInfo,
    cases: &[Case],
    io: &BatchIo,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Vec<CaseOutcome>, BoardError> {
    let runs = batches(board, cases, None, io, progress)?;
    Ok(runs.into_iter().map(|r| r.map(|r| r.outputs)).collect())
}

/// [`run_batches_with`] on several real boards of one kind at once, one per probe (`serials`):
/// the cases are split into as many contiguous shares, each run on its own board.
pub fn run_batches_on_probes(
    board: &BoardInfo,
    cases: &[Case],
    serials: &[String],
    progress: &mut (dyn FnMut(usize, usize) + Send),
) -> Result<Vec<CaseOutcome>, BoardError> {
    if serials.len() <= 1 {
        let io = BatchIo::Probe(serials.first().cloned());
        return run_batches_with(board, cases, &io, progress);
    }
    let share = cases.len().div_ceil(serials.len()).max(1);
    let done = std::sync::Mutex::new((vec![0; serials.len()], progress));
    let results: Vec<Result<Vec<CaseOutcome>, BoardError>> = std::thread::scope(|scope| {
        let threads: Vec<_> = cases
            .chunks(share)
            .zip(serials)
            .enumerate()
            .map(|(n, (part, serial))| {
                let done = &done;
                scope.spawn(move || {
                    let io = BatchIo::Probe(Some(serial.clone()));
                    run_batches_with(board, part, &io, &mut |finished, _| {
                        let mut done = done.lock().unwrap_or_else(|e| e.into_inner());
                        done.0[n] = finished;
                        let sum = done.0.iter().sum();
                        (done.1)(sum, cases.len());
                    })
                })
            })
            .collect();
        threads
            .into_iter()
            .map(|t| t.join().expect("a probe's thread does not panic"))
            .collect()
    });
    let mut outcomes = Vec::with_capacity(cases.len());
    for result in results {
        outcomes.extend(result?);
    }
    Ok(outcomes)
}

/// [`run_batches`] with the instruction-count plugin watching the marker: each case's outcome
/// also holds the instructions of each of its steps. `case_time` is how long QEMU may take per
/// case (a case of many large kernels takes longer than a conformance case).
pub fn run_batches_counted(
    board: &BoardInfo,
    cases: &[Case],
    case_time: Duration,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Vec<CountedOutcome>, BoardError> {
    batches(board, cases, Some(case_time), &BatchIo::Files, progress)
}

/// Runs the cases in batches, counting instructions when given a time per case.
fn batches(
    board: &BoardInfo,
    cases: &[Case],
    counted: Option<Duration>,
    io: &BatchIo,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Vec<CountedOutcome>, BoardError> {
    let files = BoardFiles::read(&board.name)?;
    if !files.dir.join("src/batch.rs").is_file() {
        return Err(BoardError::Config {
            board: board.name.clone(),
            file: files.dir.join("src/batch.rs"),
            reason: "the board has no batch binary: run its models one image each".into(),
        });
    }
    check_io(board, io)?;
    let mut outcomes: Vec<Option<CountedOutcome>> = (cases.iter())
        .map(|c| unsupported(board, c, counted.is_some() || *io != BatchIo::Files))
        .collect();
    let runnable: Vec<usize> = (0..cases.len())
        .filter(|&i| outcomes[i].is_none())
        .collect();
    let mut done = cases.len() - runnable.len();
    let mut queue = std::collections::VecDeque::new();
    let mut start = 0;
    while start < runnable.len() {
        let take = batch_len(board, runnable[start..].iter().map(|&i| &cases[i]));
        queue.push_back(runnable[start..start + take].to_vec());
        start += take;
    }
    while let Some(batch) = queue.pop_front() {
        let members: Vec<Case> = batch.iter().map(|&i| cases[i]).collect();
        let ran = match run_batch(board, &files.target_dir(), &members, counted, io) {
            Ok(ran) => ran,
            // One case's kernels that do not compile for the board fail that case alone: halve
            // the batch until it is found.
            Err(BoardError::BuildFailed { tail, .. }) if batch.len() == 1 => {
                outcomes[batch[0]] = Some(Err(CaseError::Build(tail)));
                done += 1;
                progress(done, cases.len());
                continue;
            }
            Err(BoardError::BuildFailed { .. }) => {
                let (a, b) = batch.split_at(batch.len() / 2);
                queue.push_front(b.to_vec());
                queue.push_front(a.to_vec());
                continue;
            }
            Err(other) => return Err(other),
        };
        // A case the image never finished (a crash, a hang) fails; the ones after it go into
        // another image.
        let finished = ran.iter().take_while(|o| o.is_some()).count();
        for (&i, outcome) in batch.iter().zip(ran).take(finished) {
            outcomes[i] = outcome;
        }
        done += finished;
        if finished < batch.len() {
            let why = "the image stopped in this case (a crash or a hang)";
            outcomes[batch[finished]] = Some(Err(CaseError::Failed(why.into())));
            done += 1;
            if finished + 1 < batch.len() {
                queue.push_front(batch[finished + 1..].to_vec());
            }
        }
        progress(done, cases.len());
    }
    Ok(outcomes
        .into_iter()
        .map(|o| o.expect("every case ran"))
        .collect())
}

/// The outcome of a case the board cannot build at all, or the batch cannot run as asked
/// (several invocations where it runs each case once: over a channel, or counted), found
/// before building.
fn unsupported(board: &BoardInfo, case: &Case, once: bool) -> Option<CountedOutcome> {
    if once && case.invocations > 1 {
        let why = format!(
            "{} invocations of one model: a batch runs them over semihosting files, uncounted",
            case.invocations
        );
        return Some(Err(CaseError::Unsupported(why)));
    }
    super::unsupported_kernels(board, &case.bundle.kernels_c)
        .map(|reason| Err(CaseError::Unsupported(reason.to_string())))
}

/// How many of `cases`, from the first, fit one image: at most [`MAX_CASES`], their weights and
/// (estimated) code in half the board's flash, the largest arena in half its RAM. At least one.
fn batch_len<'a, 'b: 'a>(board: &BoardInfo, cases: impl Iterator<Item = &'a Case<'b>>) -> usize {
    let mut flash = 0;
    let mut n = 0;
    for case in cases.take(MAX_CASES) {
        let b = case.bundle;
        flash += b.weights.len() + b.schedule.len() + b.kernels_c.len() / 2;
        if n > 0 && (flash > board.flash_bytes / 2 || b.report.arena_bytes > board.ram_bytes / 2) {
            break;
        }
        n += 1;
    }
    n.max(1)
}

/// Checks, before anything is built, that `io` fits the board: files and RTT through QEMU for
/// an emulated board (RTT where its firmware has the feature), a probe that is there for a real
/// one.
fn check_io(board: &BoardInfo, io: &BatchIo) -> Result<(), BoardError> {
    let unsupported = |reason: &str| BoardError::Unsupported {
        board: board.name.clone(),
        reason: reason.into(),
    };
    match (io, board.emulated) {
        (BatchIo::Probe(_), true) => Err(BoardError::NotReal {
            board: board.name.clone(),
        }),
        (BatchIo::Files | BatchIo::Rtt, false) => Err(unsupported(
            "a real board runs batches through its probe, over RTT",
        )),
        (BatchIo::Rtt, true) if !BoardFiles::read(&board.name)?.has_feature("rtt") => {
            Err(unsupported("its firmware has no `rtt` feature"))
        }
        #[cfg(feature = "probe")]
        (BatchIo::Probe(serial), false) => {
            super::probe::find(&board.name, serial.as_deref()).map(|_| ())
        }
        #[cfg(not(feature = "probe"))]
        (BatchIo::Probe(_), false) => Err(BoardError::NoProbeSupport {
            board: board.name.clone(),
        }),
        _ => Ok(()),
    }
}

/// Builds and runs one image of `cases`; `None` for a case the image did not finish.
fn run_batch(
    board: &BoardInfo,
    target_dir: &Path,
    cases: &[Case],
    counted: Option<Duration>,
    io: &BatchIo,
) -> Result<Vec<Option<CountedOutcome>>, BoardError> {
    // A folder of its own: the images of two batches (of two processes, or of two probes)
    // must not mix.
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let dir = target_dir.join(format!("batch-{}-{n}", std::process::id()));
    write_cases(&dir, cases)?;
    let ran = build_and_run(board, &dir, cases, counted, io);
    let _ = std::fs::remove_dir_all(&dir);
    ran
}

/// Builds the batch image of the bundles in `dir` and runs `cases` on it through `io`, with
/// the instruction-count plugin when `counted` (a time per case).
fn build_and_run(
    board: &BoardInfo,
    dir: &Path,
    cases: &[Case],
    counted: Option<Duration>,
    io: &BatchIo,
) -> Result<Vec<Option<CountedOutcome>>, BoardError> {
    let default_bundle = boards_dir().join("testdata/add-relu");
    let options = BuildOptions {
        rtt: *io == BatchIo::Rtt,
        ..Default::default()
    };
    let image = build_image(board, &default_bundle, options, Some(dir), &mut |_| {})?;
    let timeout = BATCH_TIME + counted.unwrap_or(CASE_TIME) * cases.len() as u32;
    match io {
        BatchIo::Files => run_files(board, &image, cases, counted, timeout),
        BatchIo::Rtt => run_rtt(board, &image, cases, counted, timeout),
        BatchIo::Probe(serial) => run_probe(board, &image, cases, serial.as_deref(), timeout),
    }
}

/// Runs a batch image under QEMU through semihosting files.
fn run_files(
    board: &BoardInfo,
    image: &BuiltImage,
    cases: &[Case],
    counted: Option<Duration>,
    timeout: Duration,
) -> Result<Vec<Option<CountedOutcome>>, BoardError> {
    let qemu = emulator(board, image)?;
    let io = IoDir::new()?;
    for (c, case) in cases.iter().enumerate() {
        for (i, bytes) in case.inputs.iter().enumerate() {
            let path = io.path.join(format!("c{c}_input_{i}.bin"));
            std::fs::write(&path, bytes).map_err(io_error(&path))?;
        }
        if case.invocations > 1 {
            let path = io.path.join(format!("c{c}_runs.bin"));
            std::fs::write(&path, vec![0u8; case.invocations]).map_err(io_error(&path))?;
        }
    }
    let mut command = std::process::Command::new(&qemu[0]);
    let log = io.path.join("insn.log");
    if counted.is_some() {
        count_instructions(&mut command, &image.elf, &log, Core::of(board))?;
    }
    command.args(&qemu[1..]).arg(&image.elf);
    let output = match run_with_timeout(&mut command, &io.path, &board.name, timeout) {
        Ok((_, output)) => output,
        // What the cases before the hang wrote is still there.
        Err(BoardError::Timeout { .. }) => {
            let path = io.path.join("qemu.stdout");
            String::from_utf8_lossy(&std::fs::read(&path).map_err(io_error(&path))?).into_owned()
        }
        Err(other) => return Err(other),
    };
    let mut outcomes = case_outcomes(&output, &io.path, cases);
    if counted.is_some() {
        add_counts(&mut outcomes, &log, cases);
    }
    Ok(outcomes)
}

/// Hands the cases their steps' instructions from the plugin's `log`; a log cut short by a
/// hang still counts the cases before it.
fn add_counts(outcomes: &mut [Option<CountedOutcome>], log: &Path, cases: &[Case]) {
    let marks = std::fs::read_to_string(log)
        .map(|text| read_marks(&text))
        .unwrap_or_default();
    let calls: Vec<&[usize]> = cases.iter().map(|c| &c.bundle.report.calls[..]).collect();
    attribute_counts(outcomes, &calls, &marks);
}

/// Runs a batch image built with the `rtt` feature under QEMU: one session per case over RTT
/// through the gdbstub.
fn run_rtt(
    board: &BoardInfo,
    image: &BuiltImage,
    cases: &[Case],
    counted: Option<Duration>,
    timeout: Duration,
) -> Result<Vec<Option<CountedOutcome>>, BoardError> {
    let qemu = emulator(board, image)?;
    let block = super::rtt_control_block(image)?;
    let io = IoDir::new()?;
    let socket = io.path.join("gdb.sock");
    let mut command = std::process::Command::new(&qemu[0]);
    let log = io.path.join("insn.log");
    if counted.is_some() {
        count_instructions(&mut command, &image.elf, &log, Core::of(board))?;
    }
    command
        .args(channel_command_line(&qemu[1..]))
        .arg(&image.elf)
        .args(gdb_args(&socket));
    let inputs: Vec<&[Vec<u8>]> = cases.iter().map(|c| c.inputs).collect();
    let run = run_under_gdb(
        &mut command,
        &io.path,
        &board.name,
        &socket,
        timeout,
        |stub| {
            let sessions = rtt::exchange_each(stub, block, &inputs, timeout);
            let ends = sessions.stopped.is_none();
            (sessions, ends)
        },
    )?;
    let sessions = run.session.unwrap_or_else(|error| Sessions {
        runs: Vec::new(),
        stopped: Some(error.into()),
    });
    let mut outcomes = session_outcomes(sessions, cases.len());
    if counted.is_some() {
        add_counts(&mut outcomes, &log, cases);
    }
    Ok(outcomes)
}

/// Runs a batch image on a real board through its probe: one session per case over RTT.
#[cfg(feature = "probe")]
fn run_probe(
    board: &BoardInfo,
    image: &BuiltImage,
    cases: &[Case],
    serial: Option<&str>,
    timeout: Duration,
) -> Result<Vec<Option<CountedOutcome>>, BoardError> {
    let options = super::probe::ProbeOptions {
        serial: serial.map(str::to_string),
        timeout,
    };
    let inputs: Vec<&[Vec<u8>]> = cases.iter().map(|c| c.inputs).collect();
    let sessions = super::probe::run_each(board, image, &inputs, &options)?;
    Ok(session_outcomes(sessions, cases.len()))
}

#[cfg(not(feature = "probe"))]
fn run_probe(
    board: &BoardInfo,
    _: &BuiltImage,
    _: &[Case],
    _: Option<&str>,
    _: Duration,
) -> Result<Vec<Option<CountedOutcome>>, BoardError> {
    Err(BoardError::NoProbeSupport {
        board: board.name.clone(),
    })
}

/// Each case's outcome from the sessions: its outputs, or the device's own error; none for a
/// case after the sessions stopped.
fn session_outcomes(sessions: Sessions, cases: usize) -> Vec<Option<CountedOutcome>> {
    let mut outcomes: Vec<Option<CountedOutcome>> = vec![None; cases];
    for (outcome, run) in outcomes.iter_mut().zip(sessions.runs) {
        *outcome = Some(match run {
            Ok(run) => Ok(CaseRun {
                outputs: run.outputs,
                step_instructions: Vec::new(),
                step_cycles: Vec::new(),
            }),
            Err(error) => Err(CaseError::Failed(error.to_string())),
        });
    }
    outcomes
}

/// Adds the instruction-count plugin to `command`, before any other argument (a user-mode
/// QEMU takes what follows the program as the program's), counting by the image's
/// `KILN_MARKER` stores into `log`, with the cycle estimate of `core` (its log lines then carry the
/// estimated cycles after the instructions, which [`read_marks`] reads too).
fn count_instructions(
    command: &mut std::process::Command,
    elf_path: &Path,
    log: &Path,
    core: Option<Core>,
) -> Result<(), BoardError> {
    let bytes = std::fs::read(elf_path).map_err(io_error(elf_path))?;
    let elf = Elf::parse(&bytes).map_err(|reason| BoardError::Image {
        path: elf_path.to_path_buf(),
        reason,
    })?;
    let Some((marker, _)) = elf.symbol("KILN_MARKER") else {
        return Err(BoardError::Image {
            path: elf_path.to_path_buf(),
            reason: "the batch image has no KILN_MARKER to count instructions by".into(),
        });
    };
    command
        .arg("-plugin")
        .arg(plugin_args(&plugin()?, marker, core))
        .args(["-d", "plugin", "-D"])
        .arg(log);
    Ok(())
}

/// Each case's outcome from the image's `kiln: case N …` lines of `output` and the outputs it
/// wrote into `io`; none for a case that did not report.
fn case_outcomes(output: &str, io: &Path, cases: &[Case]) -> Vec<Option<CountedOutcome>> {
    let mut outcomes: Vec<Option<CountedOutcome>> = vec![None; cases.len()];
    for line in output.lines() {
        let Some(rest) = line.strip_prefix("kiln: case ") else {
            continue;
        };
        let (index, verdict) = rest.split_once(' ').unwrap_or((rest, ""));
        let Some(c) = index.parse::<usize>().ok().filter(|&c| c < cases.len()) else {
            continue;
        };
        outcomes[c] = Some(match verdict.strip_prefix("failed: ") {
            Some(why) => Err(CaseError::Failed(why.to_string())),
            None => read_outputs(io, c, cases[c].bundle)
                .map(|outputs| CaseRun {
                    outputs,
                    step_instructions: Vec::new(),
                    step_cycles: Vec::new(),
                })
                .map_err(|(path, e)| CaseError::Output {
                    path,
                    source: Arc::new(e),
                }),
        });
    }
    outcomes
}

/// Hands each finished case its steps' instructions and estimated cycles from `marks` (the
/// running counts at each marker store: two per kernel call, in the order the cases ran);
/// `calls` is each case's step of each call, so a step in a loop sums its iterations. A case
/// that ran fails before its first step (the firmware checks a bundle whole before running
/// it), so it has no marks; a case whose marks are missing fails.
fn attribute_counts(
    outcomes: &mut [Option<CountedOutcome>],
    calls: &[&[usize]],
    marks: &[(u64, Option<u64>)],
) {
    let mut next = 0;
    for (outcome, &calls) in outcomes.iter_mut().zip(calls) {
        let n = calls.len();
        match outcome {
            Some(Ok(run)) => match marks.get(next..next + 2 * n) {
                Some(mine) => {
                    let steps = calls.iter().max().map_or(0, |&s| s + 1);
                    run.step_instructions = vec![0; steps];
                    let mut cycles = Some(vec![0; steps]);
                    for (&step, m) in calls.iter().zip(mine.chunks_exact(2)) {
                        run.step_instructions[step] += m[1].0 - m[0].0;
                        cycles = cycles.zip(m[0].1.zip(m[1].1)).map(|(mut c, (a, b))| {
                            c[step] += b - a;
                            c
                        });
                    }
                    run.step_cycles = cycles.unwrap_or_default();
                    next += 2 * n;
                }
                None => {
                    let why = "the instruction count ended before this case's steps";
                    *outcome = Some(Err(CaseError::Failed(why.into())));
                    next = marks.len();
                }
            },
            Some(Err(_)) => {}
            None => break,
        }
    }
}

/// Writes each case's bundle into `dir/case_NNN/`, its kernel table named after the case.
fn write_cases(dir: &Path, cases: &[Case]) -> Result<(), BoardError> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(io_error(dir))?;
    }
    std::fs::create_dir_all(dir).map_err(io_error(dir))?;
    for (c, case) in cases.iter().enumerate() {
        let name = format!("case_{c:03}");
        let mut bundle = case.bundle.clone();
        bundle.kernels_c = bundle.kernels_c_with_prefix(&format!("kiln_{name}"));
        let path: PathBuf = dir.join(&name);
        bundle.write(&path).map_err(|source| BoardError::Bundle {
            path: path.clone(),
            source,
        })?;
    }
    Ok(())
}

/// Case `c`'s outputs, as many as its bundle has; the file that cannot be read.
fn read_outputs(
    dir: &Path,
    c: usize,
    bundle: &Bundle,
) -> Result<Vec<Vec<u8>>, (PathBuf, std::io::Error)> {
    (0..bundle.report.outputs.len())
        .map(|i| {
            let path = dir.join(format!("c{c}_output_{i}.bin"));
            std::fs::read(&path).map_err(|e| (path, e))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok() -> Option<CountedOutcome> {
        Some(Ok(CaseRun {
            outputs: Vec::new(),
            step_instructions: Vec::new(),
            step_cycles: Vec::new(),
        }))
    }

    /// Marks without cycles, as the plugin writes them for a core it has no estimate for.
    fn plain(counts: &[u64]) -> Vec<(u64, Option<u64>)> {
        counts.iter().map(|&n| (n, None)).collect()
    }

    #[test]
    fn counts_go_to_the_cases_that_ran_their_steps() {
        let refused = Some(Err(CaseError::Failed("bundle refused".into())));
        let mut outcomes = vec![ok(), refused, ok(), None];
        // Case 0 has two steps, case 2 one; case 1 was refused before its first step.
        attribute_counts(
            &mut outcomes,
            &[&[0, 1], &[0], &[0], &[0]],
            &plain(&[10, 15, 20, 40, 50, 53]),
        );
        let steps = |o: &Option<CountedOutcome>| o.clone().unwrap().unwrap().step_instructions;
        assert_eq!(steps(&outcomes[0]), [5, 20]);
        assert!(outcomes[1].as_ref().unwrap().is_err());
        assert_eq!(steps(&outcomes[2]), [3]);
        assert!(outcomes[3].is_none());
        // Marks cut short: the case they end in fails.
        let mut outcomes = vec![ok(), ok()];
        attribute_counts(&mut outcomes, &[&[0], &[0, 1]], &plain(&[0, 7, 9, 11]));
        assert_eq!(steps(&outcomes[0]), [7]);
        assert!(outcomes[1].as_ref().unwrap().is_err());
    }

    #[test]
    fn a_step_in_a_loop_counts_all_its_calls() {
        // Step 1 is a loop's body, called three times.
        let mut outcomes = vec![ok()];
        let marks = [0, 2, 2, 5, 5, 9, 9, 14, 14, 15];
        let cycles: Vec<(u64, Option<u64>)> = marks.iter().map(|&n| (n, Some(3 * n))).collect();
        attribute_counts(&mut outcomes, &[&[0, 1, 1, 1, 2]], &cycles);
        let run = outcomes[0].clone().unwrap().unwrap();
        assert_eq!(run.step_instructions, [2, 12, 1]);
        assert_eq!(run.step_cycles, [6, 36, 3]);
        // Without cycles the steps have none.
        let mut outcomes = vec![ok()];
        attribute_counts(&mut outcomes, &[&[0, 1, 1, 1, 2]], &plain(&marks));
        assert!(outcomes[0].clone().unwrap().unwrap().step_cycles.is_empty());
    }
}
