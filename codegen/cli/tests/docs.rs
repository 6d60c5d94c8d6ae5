//! The README and the chapters of `docs/` name only what exists: every relative link's file, and
//! every repository path they write in backticks.

use std::path::{Path, PathBuf};

/// The folders a path in backticks starts with to count as a repository path.
const ROOTS: [&str; 6] = [
    "codegen/",
    "scripts/",
    "tests/",
    "boards/",
    "firmware/",
    "docs/",
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The README and every Markdown file of `docs/`.
fn pages(root: &Path) -> Vec<PathBuf> {
    let mut pages = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

/// The targets of the `[text](target)` links of a line.
fn links(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let Some(end) = after.find(')') else { break };
        out.push(&after[..end]);
        rest = &after[end..];
    }
    out
}

/// The text of the inline code spans of a line.
fn code_spans(line: &str) -> Vec<&str> {
    line.split('`').skip(1).step_by(2).collect()
}

/// Whether a code span is a repository path to check (not a glob, a placeholder or a command).
fn repo_path(span: &str) -> Option<&str> {
    let span = span.trim_end_matches(['.', ',', ':', ';']);
    let placeholder = |c: char| c.is_whitespace() || "*?<>{}[]$…|".contains(c);
    (ROOTS.iter().any(|r| span.starts_with(r)) && !span.contains(placeholder)).then_some(span)
}

/// `file:line: what` for every link or path of `page` that does not exist.
fn broken(root: &Path, page: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(page).unwrap();
    let name = page
        .strip_prefix(root)
        .unwrap_or(page)
        .display()
        .to_string();
    let dir = page.parent().unwrap();
    let mut out = Vec::new();
    let mut fence = false;
    for (n, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fence = !fence;
            continue;
        }
        if fence {
            continue;
        }
        for target in links(line) {
            let file = target.split('#').next().unwrap();
            if file.is_empty() || file.contains("://") || file.starts_with("mailto:") {
                continue;
            }
            if !dir.join(file).exists() {
                out.push(format!("{name}:{}: link to {target}: no such file", n + 1));
            }
        }
        for span in code_spans(line) {
            if let Some(path) = repo_path(span) {
                if !root.join(path).exists() {
                    out.push(format!("{name}:{}: `{path}`: no such path", n + 1));
                }
            }
        }
    }
    out
}

#[test]
fn links_and_paths_exist() {
    let root = root();
    let broken: Vec<String> = pages(&root).iter().flat_map(|p| broken(&root, p)).collect();
    assert!(broken.is_empty(), "\n{}", broken.join("\n"));
}

#[test]
fn finds_links_paths_and_skips_placeholders() {
    assert_eq!(
        links("see [a](docs/a.md) and [b](b.md#x)."),
        ["docs/a.md", "b.md#x"]
    );
    assert_eq!(
        repo_path("codegen/src/schedule/ast.rs"),
        Some("codegen/src/schedule/ast.rs")
    );
    assert_eq!(repo_path("scripts/make_*.py"), None);
    assert_eq!(repo_path("tests/conformance/<board>.pass"), None);
    assert_eq!(repo_path("kernel/dot.rs"), None);
}
