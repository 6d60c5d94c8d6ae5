//! Summaries of a run: the per-op table, the grouped skip and failure reasons, the pass list
//! and the section of `docs/conformance.md`.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::{CaseResult, Outcome};

/// Passed, failed and skipped counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub passed: usize,
    pub failed: usize,
    pub skipped: usize,
}

impl Counts {
    fn add(&mut self, o: &Outcome) {
        match o {
            Outcome::Pass => self.passed += 1,
            Outcome::Fail { .. } => self.failed += 1,
            Outcome::Skip { .. } => self.skipped += 1,
        }
    }

    /// The summary line: `N passed, M failed, K skipped`.
    pub fn line(&self) -> String {
        format!(
            "{} passed, {} failed, {} skipped",
            self.passed, self.failed, self.skipped
        )
    }
}

/// The counts of all results.
pub fn totals(results: &[CaseResult]) -> Counts {
    let mut c = Counts::default();
    for r in results {
        c.add(&r.outcome);
    }
    c
}

/// Counts per op type, by op name.
pub fn per_op(results: &[CaseResult]) -> BTreeMap<&str, Counts> {
    let mut ops: BTreeMap<&str, Counts> = BTreeMap::new();
    for r in results {
        ops.entry(&r.op).or_default().add(&r.outcome);
    }
    ops
}

/// The per-op table as plain text.
pub fn table(results: &[CaseResult]) -> String {
    let mut s = format!(
        "{:<32} {:>7} {:>7} {:>7}\n",
        "op", "passed", "failed", "skipped"
    );
    for (op, c) in per_op(results) {
        let _ = writeln!(
            s,
            "{op:<32} {:>7} {:>7} {:>7}",
            c.passed, c.failed, c.skipped
        );
    }
    s
}

/// The per-op table as Markdown, with a total row.
pub fn markdown(results: &[CaseResult]) -> String {
    markdown_with(results, &[], &BTreeMap::new())
}

/// The per-op table as Markdown with more columns: their `headers`, and per op its cells
/// (`extra`; empty cells for an op without).
pub fn markdown_with(
    results: &[CaseResult],
    headers: &[&str],
    extra: &BTreeMap<String, Vec<String>>,
) -> String {
    let mut s = String::from("| op | passed | failed | skipped |");
    let mut rule = String::from("|---|---:|---:|---:|");
    for h in headers {
        s += &format!(" {h} |");
        rule += "---|";
    }
    s += &format!("\n{rule}\n");
    for (op, c) in per_op(results) {
        let _ = write!(s, "| {op} | {} | {} | {} |", c.passed, c.failed, c.skipped);
        let cells = extra.get(op).map(Vec::as_slice).unwrap_or_default();
        for k in 0..headers.len() {
            let _ = write!(s, " {} |", cells.get(k).map_or("", String::as_str));
        }
        s.push('\n');
    }
    let t = totals(results);
    let _ = write!(
        s,
        "| **total** | **{}** | **{}** | **{}** |",
        t.passed, t.failed, t.skipped
    );
    s += &" |".repeat(headers.len());
    s.push('\n');
    s
}

/// Skip reasons (`skips`) or failure reasons with their counts, most frequent first.
pub fn reasons(results: &[CaseResult], skips: bool) -> Vec<(String, usize)> {
    let mut by: BTreeMap<&str, usize> = BTreeMap::new();
    for r in results {
        let reason = match (&r.outcome, skips) {
            (Outcome::Skip { reason }, true) | (Outcome::Fail { reason, .. }, false) => reason,
            _ => continue,
        };
        *by.entry(reason).or_default() += 1;
    }
    let mut v: Vec<(String, usize)> = by.into_iter().map(|(r, n)| (r.to_string(), n)).collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    v
}

/// The names of the passing cases, sorted: the pass list's lines.
pub fn passing(results: &[CaseResult]) -> Vec<String> {
    let mut v: Vec<String> = results
        .iter()
        .filter(|r| r.outcome == Outcome::Pass)
        .map(|r| r.name.clone())
        .collect();
    v.sort();
    v
}

/// Reads a pass list: one case name a line; blank lines and `#` comments are ignored.
pub fn parse_pass_list(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

/// The markers of the ONNX suite's generated section.
pub const START: &str = "<!-- conformance:start -->";
pub const END: &str = "<!-- conformance:end -->";

/// `readme` with the text between the markers of a suite's host table replaced by `body`:
/// the ONNX suite's ([`START`], [`END`]) for the empty `prefix`, else
/// `<!-- conformance-<prefix>start -->` (`prefix` ends with `-`, as `tflite-`); `None` without
/// markers.
pub fn replace_section(readme: &str, prefix: &str, body: &str) -> Option<String> {
    match prefix.strip_suffix('-') {
        None => replace_between(readme, START, END, body),
        Some(suite) => replace_board_section(readme, suite, body),
    }
}

/// The same for a board's section, between `<!-- conformance-<board>:start -->` and its end.
pub fn replace_board_section(readme: &str, board: &str, body: &str) -> Option<String> {
    let start = format!("<!-- conformance-{board}:start -->");
    let end = format!("<!-- conformance-{board}:end -->");
    replace_between(readme, &start, &end, body)
}

fn replace_between(
    readme: &str,
    start_marker: &str,
    end_marker: &str,
    body: &str,
) -> Option<String> {
    let start = readme.find(start_marker)? + start_marker.len();
    let end = start + readme[start..].find(end_marker)?;
    Some(format!("{}\n{}{}", &readme[..start], body, &readme[end..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(name: &str, op: &str, outcome: Outcome) -> CaseResult {
        CaseResult {
            name: name.into(),
            op: op.into(),
            outcome,
        }
    }

    #[test]
    fn counts_tables_and_sections() {
        let skip = Outcome::Skip { reason: "x".into() };
        let fail = Outcome::Fail {
            reason: "y".into(),
            detail: String::new(),
        };
        let rs = vec![
            r("test_b", "Add", Outcome::Pass),
            r("test_a", "Add", skip.clone()),
            r("test_c", "Mul", fail),
            r("test_d", "Mul", skip),
        ];
        assert_eq!(totals(&rs).line(), "1 passed, 1 failed, 2 skipped");
        assert_eq!(passing(&rs), vec!["test_b".to_string()]);
        assert_eq!(reasons(&rs, true), vec![("x".to_string(), 2)]);
        assert!(markdown(&rs).contains("| Mul | 0 | 1 | 1 |"));
        let extra = BTreeMap::from([("Add".to_string(), vec!["int8".to_string()])]);
        let wide = markdown_with(&rs, &["types"], &extra);
        assert!(wide.contains("| Add | 1 | 0 | 1 | int8 |"), "{wide}");
        assert!(wide.contains("| Mul | 0 | 1 | 1 |  |"), "{wide}");
        assert!(
            wide.contains("| **total** | **1** | **1** | **2** | |"),
            "{wide}"
        );
        let readme = format!("a\n{START}\nold\n{END}\nb\n");
        let new = replace_section(&readme, "", "new\n").unwrap();
        assert_eq!(new, format!("a\n{START}\nnew\n{END}\nb\n"));
        let tflite = "<!-- conformance-tflite:start -->\nold\n<!-- conformance-tflite:end -->\n";
        assert_eq!(
            replace_section(tflite, "tflite-", "new\n").unwrap(),
            "<!-- conformance-tflite:start -->\nnew\n<!-- conformance-tflite:end -->\n"
        );
        assert!(replace_section(&readme, "tflite-", "new\n").is_none());
        let board = "<!-- conformance-b:start -->\nold\n<!-- conformance-b:end -->\n";
        assert_eq!(
            replace_board_section(board, "b", "new\n").unwrap(),
            "<!-- conformance-b:start -->\nnew\n<!-- conformance-b:end -->\n"
        );
        assert!(replace_board_section(board, "c", "new\n").is_none());
        assert_eq!(
            parse_pass_list("# c\n\ntest_x\n"),
            vec!["test_x".to_string()]
        );
    }
}
