//! The renderer's C helpers compiled by the system C compiler and run: the tests of the vector
//! helpers against their plain C forms.

use std::process::Command;

/// Compiles the C program `src` with `flags` and, where `run`, runs it and returns the
/// integers it prints, one a line (nothing where it is only compiled).
pub(super) fn compile_and_run(src: &str, flags: &[&str], run: bool) -> Vec<i64> {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let (c, bin) = (dir.path().join("h.c"), dir.path().join("h"));
    std::fs::write(&c, src).expect("the program written");
    let cc = Command::new("cc")
        .args(["-O2", "-std=gnu11", "-Wall", "-Werror"])
        .args(flags)
        .arg("-o")
        .arg(&bin)
        .arg(&c)
        .output()
        .expect("the system C compiler");
    let err = String::from_utf8_lossy(&cc.stderr);
    assert!(cc.status.success(), "{flags:?}: {err}");
    if !run {
        return Vec::new();
    }
    let out = Command::new(&bin).output().expect("the helpers' program");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.parse().expect("an integer a line"))
        .collect()
}

/// `values` as the elements of a C initializer list.
pub(super) fn list<T: std::fmt::Display>(values: &[T]) -> String {
    let parts: Vec<String> = values.iter().map(|x| x.to_string()).collect();
    parts.join(", ")
}

/// Checks that `program` (compiled with the flags it is given, and run where told) prints
/// `want` lane by lane without AVX2, with AVX2, and with the AVX-512 `flags`: compiled
/// everywhere, run where this CPU has them (`runs`).
pub(super) fn assert_with_and_without_avx(
    program: impl Fn(&[&str], bool) -> Vec<i64>,
    want: &[i64],
    (flags, runs): (&[&str], bool),
) {
    assert_eq!(program(&["-mno-avx2"], true), want, "lane by lane");
    assert!(
        std::arch::is_x86_feature_detected!("avx2"),
        "the host has AVX2"
    );
    assert_eq!(program(&["-mavx2"], true), want, "AVX2");
    let got = program(flags, runs);
    if runs {
        assert_eq!(got, want, "AVX-512 ({flags:?})");
    }
}
