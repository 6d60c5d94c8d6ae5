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

/// How to run the cases.
pub struct Runner {
    /// The program that runs one case: `<exe> conformance-case DIR`.
    pub exe: PathBuf,
    pub jobs: usize,
    pub timeout: Duration,
}

fn failure(reason: &str, detail: String) -> Outcome {
    Outcome::Fail {
        reason: reason.to_string(),
        detail,
    }
}

/// Waits for `child` up to `timeout`, killing it after; its stdout goes to `out`.
fn wait(mut child: Child, timeout: Duration) -> Outcome {
    let started = Instant::now();
    let mut stdout = child.stdout.take();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(o) = stdout.as_mut() {
            let _ = o.read_to_string(&mut s);
        }
        s
    });
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() > timeout => {
                let _ = child.kill();
                let _ = child.wait();
                let _ = reader.join();
                let secs = timeout.as_secs();
                return failure("timeout", format!("no answer within {secs} s"));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return failure("child process", e.to_string()),
        }
    };
    let out = reader.join().unwrap_or_default();
    if let Some(outcome) = out.lines().rev().find_map(decode) {
        return outcome;
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            return failure(&format!("crash (signal {sig})"), status.to_string());
        }
    }
    failure("crash", format!("no outcome; {status}"))
}

impl Runner {
    /// Runs one case folder in a child process.
    pub fn run_one(&self, dir: &Path) -> Outcome {
        let child = Command::new(&self.exe)
            .arg("conformance-case")
            .arg(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
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
        let next = AtomicUsize::new(0);
        let results: Mutex<Vec<Option<CaseResult>>> = Mutex::new(vec![None; names.len()]);
        std::thread::scope(|s| {
            for _ in 0..self.jobs.max(1) {
                s.spawn(|| loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(name) = names.get(i) else { break };
                    let result = CaseResult {
                        name: name.clone(),
                        op: case_op(cases, name),
                        outcome: self.run_one(&cases.join(name)),
                    };
                    done(&result);
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
}
