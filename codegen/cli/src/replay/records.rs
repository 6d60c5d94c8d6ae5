//! Process-replay records on disk, and the comparison of two sets of them.
//!
//! One text file per model (`<corpus>/<model>.txt`); in it, per target, either the record of
//! every kernel of the model's schedule, in step order, or the error that stopped it:
//!
//! ```text
//! === target c
//! === kernel 0
//! name: r_32_5_5_10_5_2_4
//! …
//! === target opencl
//! === error
//! compiling …: target `opencl` cannot render a buffer of f64
//! ```

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

const TARGET: &str = "=== target ";
const KERNEL: &str = "=== kernel ";
const ERROR: &str = "=== error";

/// What compiling a model for one target gave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TargetRecord {
    /// Each step's kernel record, in schedule order.
    Kernels(Vec<String>),
    /// The model did not compile for the target: the message.
    Error(String),
}

/// Every target's record of one model.
pub type ModelRecord = BTreeMap<String, TargetRecord>;

/// The records of a whole corpus, by corpus key (`mlperf/kws_float`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecordSet {
    pub models: BTreeMap<String, ModelRecord>,
}

impl RecordSet {
    pub fn kernel_count(&self) -> usize {
        self.records()
            .filter_map(kernels)
            .map(<[String]>::len)
            .sum()
    }

    /// Targets that a model did not compile for.
    pub fn error_count(&self) -> usize {
        self.records()
            .filter(|r| matches!(r, TargetRecord::Error(_)))
            .count()
    }

    fn records(&self) -> impl Iterator<Item = &TargetRecord> {
        self.models.values().flat_map(BTreeMap::values)
    }

    /// Writes the set into `dir`, replacing it whole (written next to it first, so a failure
    /// leaves the old records as they were).
    pub fn write(&self, dir: &Path) -> std::io::Result<()> {
        let parent = dir.parent().filter(|p| !p.as_os_str().is_empty());
        let parent = parent.unwrap_or(Path::new("."));
        std::fs::create_dir_all(parent)?;
        let tmp = tempfile::tempdir_in(parent)?;
        for (key, model) in &self.models {
            let path = super::record_path(tmp.path(), key);
            if let Some(p) = path.parent() {
                std::fs::create_dir_all(p)?;
            }
            std::fs::write(path, render_model(model))?;
        }
        if dir.exists() {
            std::fs::remove_dir_all(dir)?;
        }
        let written = tmp.keep();
        std::fs::rename(&written, dir).inspect_err(|_| {
            let _ = std::fs::remove_dir_all(&written);
        })
    }

    /// Reads a set written by [`RecordSet::write`].
    pub fn read(dir: &Path) -> std::io::Result<RecordSet> {
        let mut set = RecordSet::default();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for entry in std::fs::read_dir(&d)? {
                let path = entry?.path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|e| e == "txt") {
                    let rel = path.strip_prefix(dir).unwrap_or(&path).with_extension("");
                    let key = rel.to_string_lossy().replace('\\', "/");
                    let text = std::fs::read_to_string(&path)?;
                    let model = parse_model(&text).map_err(|line| {
                        std::io::Error::new(
                            std::io::ErrorKind::InvalidData,
                            format!("{}: line {line} is not in a target section", path.display()),
                        )
                    })?;
                    set.models.insert(key, model);
                }
            }
        }
        Ok(set)
    }
}

fn kernels(r: &TargetRecord) -> Option<&[String]> {
    match r {
        TargetRecord::Kernels(k) => Some(k),
        TargetRecord::Error(_) => None,
    }
}

/// One model's file.
pub fn render_model(model: &ModelRecord) -> String {
    let mut s = String::new();
    for (target, record) in model {
        let _ = writeln!(s, "{TARGET}{target}");
        match record {
            TargetRecord::Kernels(ks) => {
                for (i, k) in ks.iter().enumerate() {
                    let _ = writeln!(s, "{KERNEL}{i}");
                    s.push_str(k);
                    if !k.ends_with('\n') {
                        s.push('\n');
                    }
                }
            }
            TargetRecord::Error(e) => {
                let _ = writeln!(s, "{ERROR}\n{}", e.trim_end());
            }
        }
    }
    s
}

/// Parses one model's file; `Err(line number)` for text outside any target.
pub fn parse_model(text: &str) -> Result<ModelRecord, usize> {
    let mut model = ModelRecord::new();
    let mut target: Option<String> = None;
    let mut record: Option<TargetRecord> = None;
    let mut current = String::new();
    let flush = |record: &mut Option<TargetRecord>, current: &mut String| {
        let text = std::mem::take(current);
        match record {
            Some(TargetRecord::Kernels(ks)) if !text.is_empty() => ks.push(text),
            Some(TargetRecord::Error(e)) => *e = text.trim_end().to_string(),
            _ => {}
        }
    };
    for (n, line) in text.lines().enumerate() {
        if let Some(t) = line.strip_prefix(TARGET) {
            flush(&mut record, &mut current);
            if let (Some(t), Some(r)) = (target.take(), record.take()) {
                model.insert(t, r);
            }
            target = Some(t.to_string());
            record = Some(TargetRecord::Kernels(Vec::new()));
        } else if line.starts_with(KERNEL) {
            flush(&mut record, &mut current);
        } else if line == ERROR {
            record = Some(TargetRecord::Error(String::new()));
        } else if target.is_none() {
            return Err(n + 1);
        } else {
            current.push_str(line);
            current.push('\n');
        }
    }
    flush(&mut record, &mut current);
    if let (Some(t), Some(r)) = (target, record) {
        model.insert(t, r);
    }
    Ok(model)
}

/// One difference between two record sets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// A model is in one set only.
    Model { key: String, added: bool },
    /// A kernel's record differs.
    Kernel {
        key: String,
        target: String,
        step: usize,
        before: String,
        now: String,
    },
    /// The number of steps differs (beyond the steps both have).
    Steps {
        key: String,
        target: String,
        before: usize,
        now: usize,
    },
    /// It compiled on one side only, or failed differently.
    Outcome {
        key: String,
        target: String,
        before: String,
        now: String,
    },
}

/// What [`diff_sets`] found.
#[derive(Debug, Default)]
pub struct Report {
    pub compared: usize,
    pub changes: Vec<Change>,
}

impl Report {
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }

    /// The report as text: a line per change (with up to `lines` lines of a changed kernel's
    /// diff), then the totals.
    pub fn render(&self, lines: usize) -> String {
        let mut s = String::new();
        for c in &self.changes {
            match c {
                Change::Model { key, added } => {
                    let what = if *added { "added" } else { "removed" };
                    let _ = writeln!(s, "{key}: model {what}");
                }
                Change::Kernel {
                    key,
                    target,
                    step,
                    before,
                    now,
                } => {
                    let _ = writeln!(
                        s,
                        "{key} [{target}] step {step}: kernel {} changed",
                        name_of(now)
                    );
                    for l in changed_lines(before, now).into_iter().take(lines) {
                        let _ = writeln!(s, "    {l}");
                    }
                }
                Change::Steps {
                    key,
                    target,
                    before,
                    now,
                } => {
                    let _ = writeln!(s, "{key} [{target}]: {before} steps, now {now}");
                }
                Change::Outcome {
                    key,
                    target,
                    before,
                    now,
                } => {
                    let _ = writeln!(s, "{key} [{target}]: was {before}, now {now}");
                }
            }
        }
        let kernels = self
            .changes
            .iter()
            .filter(|c| matches!(c, Change::Kernel { .. }))
            .count();
        let _ = writeln!(
            s,
            "replay: {} kernels compared, {kernels} changed, {} other differences",
            self.compared,
            self.changes.len() - kernels
        );
        s
    }
}

/// The `name:` line of a record.
fn name_of(record: &str) -> &str {
    record
        .lines()
        .find_map(|l| l.strip_prefix("name: "))
        .unwrap_or("?")
}

/// The lines between the common head and tail of two texts, `-` before and `+` now.
fn changed_lines(before: &str, now: &str) -> Vec<String> {
    let a: Vec<&str> = before.lines().collect();
    let b: Vec<&str> = now.lines().collect();
    let head = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let tail = a[head..]
        .iter()
        .rev()
        .zip(b[head..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let old = a[head..a.len() - tail].iter().map(|l| format!("- {l}"));
    let new = b[head..b.len() - tail].iter().map(|l| format!("+ {l}"));
    old.chain(new).collect()
}

fn summary(r: &TargetRecord) -> String {
    match r {
        TargetRecord::Kernels(k) => format!("{} kernels", k.len()),
        TargetRecord::Error(e) => format!("error `{e}`"),
    }
}

/// The differences of `now` from `before`, over the models and targets `now` has and the models
/// of `before` that `wanted` says the corpus of `now` covers.
pub fn diff_sets(before: &RecordSet, now: &RecordSet, wanted: &dyn Fn(&str) -> bool) -> Report {
    let mut report = Report::default();
    for key in before.models.keys().filter(|k| wanted(k)) {
        if !now.models.contains_key(key) {
            report.changes.push(Change::Model {
                key: key.clone(),
                added: false,
            });
        }
    }
    for (key, model) in &now.models {
        let Some(old) = before.models.get(key) else {
            report.changes.push(Change::Model {
                key: key.clone(),
                added: true,
            });
            continue;
        };
        for (target, record) in model {
            let missing = TargetRecord::Error("not recorded".into());
            let previous = old.get(target).unwrap_or(&missing);
            diff_target(key, target, previous, record, &mut report);
        }
    }
    report
}

fn diff_target(
    key: &str,
    target: &str,
    before: &TargetRecord,
    now: &TargetRecord,
    report: &mut Report,
) {
    let (TargetRecord::Kernels(a), TargetRecord::Kernels(b)) = (before, now) else {
        if before != now {
            report.changes.push(Change::Outcome {
                key: key.to_string(),
                target: target.to_string(),
                before: summary(before),
                now: summary(now),
            });
        }
        return;
    };
    for (step, (x, y)) in a.iter().zip(b).enumerate() {
        report.compared += 1;
        if x != y {
            report.changes.push(Change::Kernel {
                key: key.to_string(),
                target: target.to_string(),
                step,
                before: x.clone(),
                now: y.clone(),
            });
        }
    }
    if a.len() != b.len() {
        report.changes.push(Change::Steps {
            key: key.to_string(),
            target: target.to_string(),
            before: a.len(),
            now: b.len(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(name: &str, src: &str) -> String {
        format!("name: {name}\ntarget: c\n--- src\n{src}\n")
    }

    fn set(models: &[(&str, &str, TargetRecord)]) -> RecordSet {
        let mut s = RecordSet::default();
        for (key, target, r) in models {
            s.models
                .entry(key.to_string())
                .or_default()
                .insert(target.to_string(), r.clone());
        }
        s
    }

    #[test]
    fn a_model_file_reads_back_as_written() {
        let mut m = ModelRecord::new();
        m.insert(
            "c".into(),
            TargetRecord::Kernels(vec![kernel("E_4", "a;\nb;"), kernel("r_8", "c;")]),
        );
        m.insert("vulkan".into(), TargetRecord::Error("no i64".into()));
        assert_eq!(parse_model(&render_model(&m)), Ok(m));
        assert_eq!(parse_model("stray\n"), Err(1));
    }

    #[test]
    fn a_set_reads_back_from_disk() {
        let s = set(&[
            (
                "mlperf/kws",
                "c",
                TargetRecord::Kernels(vec![kernel("E_4", "x;")]),
            ),
            (
                "conformance/test_abs",
                "host",
                TargetRecord::Error("bad".into()),
            ),
        ]);
        let dir = tempfile::tempdir().unwrap();
        let at = dir.path().join("rec");
        s.write(&at).unwrap();
        assert_eq!(RecordSet::read(&at).unwrap(), s);
        assert_eq!((s.kernel_count(), s.error_count()), (1, 1));
    }

    #[test]
    fn every_kind_of_change_is_reported() {
        let k = |n: &str, src: &str| TargetRecord::Kernels(vec![kernel(n, src)]);
        let before = set(&[
            ("a", "c", k("E_4", "x = 1;")),
            ("b", "c", TargetRecord::Error("bad".into())),
            ("gone", "c", k("E_1", "y;")),
            ("same", "c", k("E_2", "z;")),
        ]);
        let now = set(&[
            ("a", "c", k("E_4", "x = 2;")),
            ("b", "c", k("E_1", "ok;")),
            ("new", "c", k("E_1", "y;")),
            ("same", "c", k("E_2", "z;")),
        ]);
        let report = diff_sets(&before, &now, &|_| true);
        let text = report.render(4);
        assert!(text.contains("a [c] step 0: kernel E_4 changed"), "{text}");
        assert!(
            text.contains("- x = 1;") && text.contains("+ x = 2;"),
            "{text}"
        );
        assert!(
            text.contains("b [c]: was error `bad`, now 1 kernels"),
            "{text}"
        );
        assert!(text.contains("gone: model removed") && text.contains("new: model added"));
        assert!(text.ends_with("replay: 2 kernels compared, 1 changed, 3 other differences\n"));
        assert!(diff_sets(&now, &now, &|_| true).is_empty());
        // A model the current corpus does not cover is not "removed".
        assert!(!diff_sets(&before, &now, &|k| k != "gone")
            .render(0)
            .contains("gone"));
    }

    #[test]
    fn a_step_more_or_less_is_reported() {
        let before = set(&[("m", "c", TargetRecord::Kernels(vec![kernel("E_1", "a;")]))]);
        let two = vec![kernel("E_1", "a;"), kernel("E_2", "b;")];
        let now = set(&[("m", "c", TargetRecord::Kernels(two))]);
        let r = diff_sets(&before, &now, &|_| true);
        assert_eq!(
            r.changes,
            vec![Change::Steps {
                key: "m".into(),
                target: "c".into(),
                before: 1,
                now: 2
            }]
        );
    }
}
