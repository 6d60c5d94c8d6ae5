//! Running a bundle on an emulated board, or on a hosted one (feature `std`), whose files,
//! console and exit are the operating system's instead of semihosting's.
//!
//! # I/O convention
//!
//! Model input `i` is read, raw little-endian, from `input_<i>.bin` in the host's working
//! directory, and output `i` is written to `output_<i>.bin` there; a file that is missing or of
//! the wrong size is an error. The host compiler (codegen's `board::run`) runs QEMU inside a
//! fresh I/O folder.
//!
//! A streamed run (a model with state, over many invocations) asks for invocation `k` with a
//! file `s<k>_run.bin`, empty, or of one byte to reset the state first; its input `i` is
//! `s<k>_input_<i>.bin` and its output `i` is written to `s<k>_output_<i>.bin`. The firmware
//! makes invocations 0, 1, … on one executor, the state carried between them, until the next
//! `s<k>_run.bin` is missing.
//!
//! When the semihosting command line holds the word [`host::CHANNEL_WORD`] (QEMU's `-append`),
//! the inputs and outputs go through the test-vector channel instead
//! ([`kiln_firmware::channel`]) on the semihosting console, QEMU's standard input and output:
//! the same protocol a real board speaks over RTT. Messages for people go to standard error.

use crate::host::{self, Console, File, FileName, IoError};
use crate::{kernels, marker};
use core::fmt;
use kiln_firmware::channel::{self, Link, LinkError};
use kiln_firmware::exec::Executor;
use kiln_firmware::schedule::ScheduleView;
use kiln_firmware::BundleError;

/// Why a run failed.
enum RunError {
    Bundle(BundleError),
    Io(IoError),
}

impl From<BundleError> for RunError {
    fn from(error: BundleError) -> Self {
        RunError::Bundle(error)
    }
}

impl From<IoError> for RunError {
    fn from(error: IoError) -> Self {
        RunError::Io(error)
    }
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::Bundle(error) => write!(f, "bundle refused: {error}"),
            RunError::Io(error) => write!(f, "{error}"),
        }
    }
}

/// Checks the bundle, reads its inputs, runs it with the marker around each kernel, writes its
/// outputs, and exits: status 0 on success, 1 with a message on stderr on any error. The inputs
/// and outputs are files, or the test-vector channel when the host asks for it.
pub fn run(schedule: &'static [u8], weights: &'static [u8], arena: &'static mut [u8]) -> ! {
    if host::channel_requested() {
        run_channel(schedule, weights, arena)
    }
    match run_bundle(schedule, weights, arena) {
        Ok(steps) => {
            host::print(format_args!("kiln: ran {steps} steps\n"));
            host::exit(true)
        }
        Err(error) => {
            host::eprint(format_args!("kiln: {error}\n"));
            host::exit(false)
        }
    }
}

fn run_bundle(
    schedule: &'static [u8],
    weights: &'static [u8],
    arena: &'static mut [u8],
) -> Result<u32, RunError> {
    let bundle = ScheduleView::parse(schedule, arena.len(), kernels().len())?;
    let mut executor = Executor::new(bundle, kernels(), arena, weights)?;
    let calls = u32::try_from(executor.schedule().call_count()).unwrap_or(u32::MAX);
    let mut invocations = 0u32;
    while let Ok(asked) = File::open_read(FileName::invocation(invocations as usize)) {
        if asked.size() > 0 {
            executor.reset();
        }
        let k = invocations as usize;
        invoke(
            &mut executor,
            |i| FileName::invocation_input(k, i),
            |i| FileName::invocation_output(k, i),
        )?;
        invocations += 1;
    }
    if invocations == 0 {
        invoke(&mut executor, FileName::input, FileName::output)?;
        invocations = 1;
    }
    Ok(calls.saturating_mul(invocations))
}

/// One run: the inputs read from the files `input` names, the outputs written to `output`'s.
fn invoke(
    executor: &mut Executor<'_>,
    input: impl Fn(usize) -> FileName,
    output: impl Fn(usize) -> FileName,
) -> Result<(), RunError> {
    for index in 0..executor.schedule().inputs().len() {
        let Some(bytes) = executor.input_mut(index) else {
            break;
        };
        File::open_read(input(index))?.read_exact(bytes)?;
    }
    executor.run(&mut marker::mark)?;
    for index in 0..executor.schedule().outputs().len() {
        let Some(bytes) = executor.output(index) else {
            break;
        };
        File::create(output(index))?.write_all(bytes)?;
    }
    Ok(())
}

/// Runs every case of a batch image in turn in one arena: case `c`'s input `i` is read from
/// `c<c>_input_<i>.bin`, its output `i` written to `c<c>_output_<i>.bin` (a case with a
/// `c<c>_runs.bin` of `n` bytes runs `n` times on those inputs, its state kept between the
/// runs, and writes the last outputs). Each case ends with a
/// line on standard output, `kiln: case <c> ok` or `kiln: case <c> failed: <why>`; a failed
/// case does not stop the others. Exits with status 0 once every case has been tried. Each case
/// starts on a zeroed arena, and its steps store to the marker like [`run`]'s, so the host can
/// count each step's instructions (a case that fails does so before its first step).
pub fn run_batch(cases: &[crate::BatchCase], arena: &'static mut [u8]) -> ! {
    for (index, case) in cases.iter().enumerate() {
        match run_case(index, case, arena) {
            Ok(()) => host::print(format_args!("kiln: case {index} ok\n")),
            Err(error) => host::print(format_args!("kiln: case {index} failed: {error}\n")),
        }
    }
    host::exit(true)
}

fn run_case(index: usize, case: &crate::BatchCase, arena: &mut [u8]) -> Result<(), RunError> {
    arena.fill(0);
    let kernels = (case.kernels)();
    let bundle = ScheduleView::parse(case.schedule, arena.len(), kernels.len())?;
    let mut executor = Executor::new(bundle, kernels, arena, case.weights)?;
    let runs = File::open_read(FileName::case_runs(index)).map_or(1, |f| f.size().max(1));
    for _ in 0..runs {
        invoke(
            &mut executor,
            |i| FileName::case_input(index, i),
            |i| FileName::case_output(index, i),
        )?;
    }
    Ok(())
}

/// [`run`] over the test-vector channel: a refused bundle is the session's `Error`.
fn run_channel(schedule: &'static [u8], weights: &'static [u8], arena: &'static mut [u8]) -> ! {
    let Ok(console) = Console::open() else {
        host::eprint(format_args!("kiln: cannot open the console\n"));
        host::exit(false)
    };
    let mut link = Link::new(console);
    let executor = ScheduleView::parse(schedule, arena.len(), kernels().len())
        .and_then(|bundle| Executor::new(bundle, kernels(), arena, weights));
    let mut executor = match executor {
        Ok(executor) => executor,
        Err(error) => {
            host::eprint(format_args!("kiln: bundle refused: {error}\n"));
            let _ = link.send_error(format_args!("bundle refused: {error}"));
            host::exit(false)
        }
    };
    let served = channel::serve(&mut link, &mut executor, |event| {
        marker::mark(event);
        None
    });
    match served {
        Ok(runs) => {
            host::eprint(format_args!("kiln: served {runs} runs\n"));
            host::exit(true)
        }
        Err(error) => {
            let why = match error {
                LinkError::Transport(_) => "the console failed",
                LinkError::Closed => "the host closed the console",
                LinkError::BadFrame => "a frame from the host did not decode",
                LinkError::Protocol => "the host broke the protocol",
                LinkError::Run => "a step failed",
            };
            host::eprint(format_args!("kiln: channel: {why}\n"));
            host::exit(false)
        }
    }
}

#[cfg(not(feature = "std"))]
#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    host::eprint(format_args!("kiln: panic: {info}\n"));
    host::exit(false)
}
