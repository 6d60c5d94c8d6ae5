//! The renderer's C helpers compiled by the system C compiler and run: the tests of the vector
//! helpers against their plain C forms. Their NEON forms are compiled by the AArch64 cross
//! compiler and run under QEMU's user-mode emulation (`scripts/setup-toolchain.sh` installs
//! both).

use std::process::Command;

/// Compiles the C program `src` with `flags` and, where `run`, runs it and returns the
/// integers it prints, one a line (nothing where it is only compiled).
pub(super) fn compile_and_run(src: &str, flags: &[&str], run: bool) -> Vec<i64> {
    build_and_run(("cc", flags), None, src, run)
}

/// Compiles `src` for AArch64 with `-march=` `arch` (statically linked) and runs it under
/// `qemu-aarch64` emulating `cpu` (`cortex-a53`: Armv8.0-A, whose NEON has no dot products, so
/// an `SDOT` would stop the program), returning the integers it prints.
pub(super) fn compile_and_run_aarch64(src: &str, arch: &str, cpu: &str) -> Vec<i64> {
    let march = format!("-march={arch}");
    let compiler = ("aarch64-linux-gnu-gcc", &["-static", march.as_str()][..]);
    build_and_run(compiler, Some(("qemu-aarch64", &["-cpu", cpu])), src, true)
}

/// Compiles `src` with a C compiler and its flags and, where `run`, runs the program (under
/// `runner` and its arguments where given) and returns the integers it prints.
fn build_and_run(
    (cc, flags): (&str, &[&str]),
    runner: Option<(&str, &[&str])>,
    src: &str,
    run: bool,
) -> Vec<i64> {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let (c, bin) = (dir.path().join("h.c"), dir.path().join("h"));
    std::fs::write(&c, src).expect("the program written");
    let built = Command::new(cc)
        .args(["-O2", "-std=gnu11", "-Wall", "-Werror"])
        .args(flags)
        .arg("-o")
        .arg(&bin)
        .arg(&c)
        .output()
        .unwrap_or_else(|e| panic!("{cc} (scripts/setup-toolchain.sh): {e}"));
    let err = String::from_utf8_lossy(&built.stderr);
    assert!(built.status.success(), "{cc} {flags:?}: {err}");
    if !run {
        return Vec::new();
    }
    let mut program = match runner {
        Some((emulator, args)) => {
            let mut c = Command::new(emulator);
            c.args(args).arg(&bin);
            c
        }
        None => Command::new(&bin),
    };
    let out = program
        .output()
        .unwrap_or_else(|e| panic!("the helpers' program ({runner:?}): {e}"));
    assert!(out.status.success(), "{flags:?} under {runner:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.parse().expect("an integer a line"))
        .collect()
}

/// Checks that `src` prints `want` compiled for Armv8-A and run on a Cortex-A53 (the helpers'
/// NEON forms), and compiled with dot products (Armv8.2-A `dotprod`: their `SDOT` forms) and
/// run on QEMU's most capable CPU.
pub(super) fn assert_on_aarch64(src: &str, want: &[i64]) {
    let plain = compile_and_run_aarch64(src, "armv8-a", "cortex-a53");
    assert_eq!(plain, want, "Armv8-A on a Cortex-A53");
    let dot = compile_and_run_aarch64(src, "armv8.2-a+dotprod", "max");
    assert_eq!(dot, want, "Armv8.2-A with dot products");
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
