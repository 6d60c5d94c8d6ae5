//! Running many cases, each in a child process (`kiln conformance-case DIR`), `jobs` at a time,
//! with a time limit per case.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::{case_op, CaseResult, Outcome};

/// The line a child prints for its outcome: `pass`, `skip\tREASON` or `fail\tREASON\tDETAIL`.
pub fn encode(outcome: &Outcome) -> String {
    let clean = |s: &str| s.replace(['\t', '\n', '\r'], " ");
    match outcome {
        Outcome::Pass => "pass".to_string(),
        Outcome::Skip { reason } => format!("skip\t{}", clean(reason)),
        Outcome::Fail { reason, detail } => {
            format!("fail\t{}\t{}", clean(reason), clean(detail))
        }
    }
}

/// Reads the outcome line back; `None` for anything else.
pub fn decode(line: &str) -> Option<Outcome> {
    let mut parts = line.trim_end().splitn(3, '\t');
    match (parts.next()?, parts.next(), parts.next()) {
        ("pass", None, None) => Some(Outcome::Pass),
        ("skip", Some(r), None) => Some(Outcome::Skip {
            reason: r.to_string(),
        }),
        ("fail", Some(r), d) => Some(Outcome::Fail {
            reason: r.to_string(),
            detail: d.unwrap_or_default().to_string(),
        }),
        _ => None,
    }
}

/// How to run the cases: each in a child process, `jobs` at a time.
pub struct Children {
    /// The program that runs one case: `<exe> conformance-case DIR --board PLACE`.
    pub exe: PathBuf,
    pub jobs: usize,
    pub timeout: Duration,
    /// Where each case runs: a runner's name (`host`, `opencl`).
    pub place: String,
}

fn failure(reason: &str, detail: String) -> Outcome {
    Outcome::Fail {
        reason: reason.to_string(),
        detail,
    }
}

/// Reads a pipe to its end on a thread of its own.
fn drain<R: Read + Send + 'static>(pipe: Option<R>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_string(&mut s);
        }
        s
    })
}

/// The gist of a child's stderr: a panic's place and message, else its last line; shortened.
fn last_line(stderr: &str) -> String {
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.starts_with("note:")).collect();
    let text = match lines.iter().position(|l| l.contains("panicked at")) {
        Some(i) => lines[i..]
            .iter()
            .take(2)
            .copied()
            .collect::<Vec<_>>()
            .join(" "),
        None => lines.last().copied().unwrap_or_default().to_string(),
    };
    text.chars().take(300).collect()
}

/// Waits for `child` up to `timeout`, killing it after, and reads its outcome line.
fn wait(mut child: Child, timeout: Duration) -> Outcome {
    let started = Instant::now();
    let reader = drain(child.stdout.take());
    let errors = drain(child.stderr.take());
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() > timeout => {
                let _ = child.kill();
                let _ = child.wait();
                let _ = (reader.join(), errors.join());
                let secs = timeout.as_secs();
                return failure("timeout", format!("no answer within {secs} s"));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return failure("child process", e.to_string()),
        }
    };
    let out = reader.join().unwrap_or_default();
    let err = errors.join().unwrap_or_default();
    if let Some(outcome) = out.lines().rev().find_map(decode) {
        return outcome;
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            let detail = format!("{status}: {}", last_line(&err));
            return failure(&format!("crash (signal {sig})"), detail);
        }
    }
    let reason = if err.contains("panicked") {
        "panic"
    } else {
        "crash"
    };
    failure(reason, format!("{status}: {}", last_line(&err)))
}

impl Children {
    /// Runs one case folder in a child process.
    pub fn run_one(&self, dir: &Path) -> Outcome {
        let mut command = Command::new(&self.exe);
        command.arg("conformance-case").arg(dir);
        command.args(["--board", &self.place]);
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .env("RUST_BACKTRACE", "0")
            .spawn();
        match child {
            Ok(c) => wait(c, self.timeout),
            Err(e) => failure("child process", e.to_string()),
        }
    }

    /// Runs the cases `names` of folder `cases`; `done` is called after each with its result.
    pub fn run_all(
        &self,
        cases: &Path,
        names: &[String],
        done: &(dyn Fn(&CaseResult) + Sync),
    ) -> Vec<CaseResult> {
        parallel_map(names, self.jobs, |name| {
            let result = CaseResult {
                name: name.clone(),
                op: case_op(cases, name),
                outcome: self.run_one(&cases.join(name)),
            };
            done(&result);
            result
        })
    }
}

/// `f` of every item, `jobs` threads at a time, in the items' order.
pub fn parallel_map<T: Sync, R: Send>(
    items: &[T],
    jobs: usize,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<R>>> = Mutex::new((0..items.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..jobs.max(1) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(item) = items.get(i) else { break };
                let result = f(item);
                if let Ok(mut r) = results.lock() {
                    r[i] = Some(result);
                }
            });
        }
    });
    results
        .into_inner()
        .unwrap_or_default()
        .into_iter()
        .flatten()
        .collect()
}
