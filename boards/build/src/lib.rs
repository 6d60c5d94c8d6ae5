//! Build-script helper for Kiln's board crates. A board's `build.rs` is one call:
//!
//! ```no_run
//! kiln_board_build::build();
//! ```
//!
//! The board names its CPU in its `.cargo/config.toml` (`[env] KILN_CPU = "cortex-m4f"`); the
//! C compiler's flags for it come from the one table of CPUs, `kiln-devices`, which the
//! compiler and the runners read too.
//!
//! It takes the bundle from the folder named by `KILN_BUNDLE_DIR` (default: the test bundle
//! `boards/testdata/add-relu`), which holds `kernels.c`, `schedule.bin` and `weights.bin`, and:
//! - compiles `kernels.c` with the `cc` crate: `-O2 -fno-math-errno` and the CPU's flags;
//! - writes `$OUT_DIR/bundle.rs` for `main.rs` to `include!`: `SCHEDULE` and `WEIGHTS`
//!   (flash, `include_bytes!`) and `ARENA`, a static sized by the bundle's manifest;
//! - puts the board's `memory.x` on the linker's path, with a linker-script assertion that the
//!   arena and a minimum stack fit in RAM (not for a hosted board, a Linux program, which the
//!   operating system places in memory).
//!
//! When `KILN_BATCH_DIR` is set, it names a folder of bundles, `case_000/`, `case_001/`, …,
//! whose kernel tables are named `kiln_case_000_kernels`, …: each one's `kernels.c` is compiled
//! too, and `$OUT_DIR/batch.rs` lists them as `CASES` (schedule, weights, kernel table) with one
//! `BATCH_ARENA` as large as the largest case needs, for a board's batch binary, which runs many
//! small models in one image. Without it, `CASES` is empty.
//!
//! A schedule whose manifest cannot be read still builds, with a warning and an empty arena:
//! the firmware is the one to refuse it, at boot, with the reason. `KILN_ARENA_BYTES`, when
//! set, sizes the arena instead of the manifest: firmware with a fixed arena, which refuses
//! bundles that need more.

use kiln_devices::{Cpu, CPU_VAR};
use kiln_firmware::schedule::read_manifest;
use std::path::{Path, PathBuf};
use std::{env, fs};

/// Stack that must remain in RAM beside the arena and the other statics.
const MIN_STACK_BYTES: u32 = 4096;

/// The bundle used when `KILN_BUNDLE_DIR` is not set, relative to a board's folder.
const DEFAULT_BUNDLE: &str = "../testdata/add-relu";

/// Everything a board's build script does; see the crate documentation.
pub fn build() {
    if let Err(message) = board_cpu().and_then(|cpu| try_build(cpu.cflags(), cpu.hosted())) {
        panic!("kiln-board-build: {message}");
    }
}

/// The CPU the board's config names.
fn board_cpu() -> Result<Cpu, String> {
    println!("cargo:rerun-if-env-changed={CPU_VAR}");
    let known = || Cpu::names().join(", ");
    let name = env::var(CPU_VAR).map_err(|_| {
        format!(
            "{CPU_VAR} is not set: name the board's CPU in the [env] of its .cargo/config.toml \
             (one of {})",
            known()
        )
    })?;
    Cpu::by_name(&name).ok_or_else(|| format!("{CPU_VAR} = {name:?} is not one of {}", known()))
}

/// Builds the bundle in; `hosted`: the program runs on an operating system, which places it
/// in memory itself (no linker scripts).
fn try_build(cflags: &[&str], hosted: bool) -> Result<(), String> {
    let board_dir = PathBuf::from(var("CARGO_MANIFEST_DIR")?);
    let out_dir = PathBuf::from(var("OUT_DIR")?);
    println!("cargo:rerun-if-env-changed=KILN_BUNDLE_DIR");
    println!("cargo:rerun-if-env-changed=KILN_ARENA_BYTES");
    println!("cargo:rerun-if-env-changed=KILN_BATCH_DIR");
    let bundle_dir = match env::var_os("KILN_BUNDLE_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => board_dir.join(DEFAULT_BUNDLE),
    };
    let bundle_dir = fs::canonicalize(&bundle_dir)
        .map_err(|e| format!("bundle folder {}: {e}", bundle_dir.display()))?;
    let [_, schedule, weights] = compile_bundle(&bundle_dir, cflags, "kiln_kernels");

    let arena_bytes = arena_bytes(&schedule)?;
    let weights_bytes = fs::metadata(&weights)
        .map_err(|e| describe(&weights, e))?
        .len();
    let bundle_rs = bundle_rs(&bundle_dir, &schedule, &weights, weights_bytes, arena_bytes);
    write(&out_dir.join("bundle.rs"), &bundle_rs)?;
    // An emulated board built with its own `rtt` feature (`kiln run --io rtt`) logs through
    // defmt like a real board, whose config names defmt's linker script itself.
    if env::var_os("CARGO_FEATURE_RTT").is_some() {
        println!("cargo:rustc-link-arg=-Tdefmt.x");
    }
    let batch_arena = batch(cflags, &out_dir)?;
    match hosted {
        true => Ok(()),
        false => link_scripts(&board_dir, &out_dir, arena_bytes.max(batch_arena)),
    }
}

/// Compiles the `kernels.c` of the bundle in `dir` into library `library`; returns the paths of
/// its kernels, schedule and weights, each watched for changes.
fn compile_bundle(dir: &Path, cflags: &[&str], library: &str) -> [PathBuf; 3] {
    let files = bundle_files(dir);
    compile_kernels(&[&files[0]], cflags, library);
    files
}

/// The kernels, schedule and weights of the bundle in `dir`, each watched for changes.
fn bundle_files(dir: &Path) -> [PathBuf; 3] {
    let files = ["kernels.c", "schedule.bin", "weights.bin"].map(|name| dir.join(name));
    for file in &files {
        println!("cargo:rerun-if-changed={}", file.display());
    }
    files
}

/// Compiles `sources` into one library, `library`: `-O2 -fno-math-errno` and the CPU's flags.
fn compile_kernels(sources: &[&PathBuf], cflags: &[&str], library: &str) {
    cc::Build::new()
        .files(sources)
        .opt_level(2)
        .flag("-fno-math-errno")
        .flags(cflags)
        .warnings(true)
        .force_frame_pointer(false)
        .compile(library);
}

/// Compiles the bundles of `KILN_BATCH_DIR`, if set, and writes `batch.rs`; returns the
/// batch arena's size.
fn batch(cflags: &[&str], out_dir: &Path) -> Result<u32, String> {
    let mut cases = Vec::new();
    if let Some(dir) = env::var_os("KILN_BATCH_DIR") {
        let dir = PathBuf::from(dir);
        let entries = fs::read_dir(&dir).map_err(|e| describe(&dir, e))?;
        let mut names: Vec<String> = entries
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| n.starts_with("case_"))
            .collect();
        names.sort();
        let compiled = compile_cases(&dir, &names, cflags);
        for (name, [_, schedule, weights]) in names.into_iter().zip(compiled) {
            let weights_bytes = fs::metadata(&weights)
                .map_err(|e| describe(&weights, e))?
                .len();
            // A damaged schedule still builds: the firmware refuses that case, with the reason.
            let arena = arena_bytes(&schedule)?;
            cases.push((name, schedule, weights, weights_bytes, arena));
        }
    }
    let arena = cases.iter().map(|c| c.4).max().unwrap_or(0);
    let mut rs = String::from("// @generated by kiln-board-build from KILN_BATCH_DIR.\n\n");
    for (name, _, weights, bytes, _) in &cases {
        let upper = name.to_uppercase();
        rs += &format!(
            "static {upper}_WEIGHTS: kiln_firmware::exec::Aligned<[u8; {bytes}]> =\n    \
             kiln_firmware::exec::Aligned(*include_bytes!({:?}));\n\
             unsafe extern \"C\" {{\n    #[link_name = \"kiln_{name}_kernels\"]\n    \
             static {upper}_KERNELS: [kiln_firmware::exec::KernelFn; 0];\n    \
             #[link_name = \"kiln_{name}_kernel_count\"]\n    \
             static {upper}_KERNEL_COUNT: core::ffi::c_uint;\n}}\n\
             fn {name}_kernels() -> &'static [kiln_firmware::exec::KernelFn] {{\n    \
             // SAFETY: the case's kernels.c defines the table and its length, never written.\n    \
             unsafe {{\n        core::slice::from_raw_parts(\n            \
             core::ptr::addr_of!({upper}_KERNELS).cast(),\n            \
             {upper}_KERNEL_COUNT as usize,\n        )\n    }}\n}}\n",
            weights.display().to_string(),
        );
    }
    rs += &format!(
        "\n/// The batch's models, in case order.\n\
         pub static CASES: [kiln_board::BatchCase; {}] = [\n",
        cases.len()
    );
    for (name, schedule, ..) in &cases {
        let upper = name.to_uppercase();
        rs += &format!(
            "    kiln_board::BatchCase {{\n        schedule: include_bytes!({:?}),\n        \
             weights: &{upper}_WEIGHTS.0,\n        kernels: {name}_kernels,\n    }},\n",
            schedule.display().to_string(),
        );
    }
    rs += &format!(
        "];\n\n/// One arena, as large as the largest case needs.\n\
         pub static BATCH_ARENA: kiln_firmware::exec::Arena<{arena}> = \
         kiln_firmware::exec::Arena::new();\n"
    );
    write(&out_dir.join("batch.rs"), &rs)?;
    Ok(arena)
}

/// Compiles the bundles `names` of `dir`, as many at a time as cargo gives this build jobs
/// (`NUM_JOBS`): a batch of many cases is mostly C to compile. Each job's cases go into one
/// library, so the compiler's set-up and the archiver run once a job, not once a case (their
/// kernel tables are named per case). Returns each case's files, in order; a case that does not
/// compile fails the build, as it would alone.
fn compile_cases(dir: &Path, names: &[String], cflags: &[&str]) -> Vec<[PathBuf; 3]> {
    let jobs = env::var("NUM_JOBS")
        .ok()
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or(1)
        .clamp(1, names.len().max(1));
    let per_job = names.len().div_ceil(jobs).max(1);
    let files: Vec<[PathBuf; 3]> = names.iter().map(|n| bundle_files(&dir.join(n))).collect();
    std::thread::scope(|scope| {
        let handles: Vec<_> = (files.chunks(per_job).enumerate())
            .map(|(job, chunk)| {
                scope.spawn(move || {
                    let sources: Vec<&PathBuf> = chunk.iter().map(|f| &f[0]).collect();
                    compile_kernels(&sources, cflags, &format!("kiln_batch_{job}"));
                })
            })
            .collect();
        for handle in handles {
            handle
                .join()
                .unwrap_or_else(|e| std::panic::resume_unwind(e));
        }
    });
    files
}

/// `KILN_ARENA_BYTES` if set, else the arena size the schedule's manifest asks for, or 0 if
/// the manifest cannot be read.
fn arena_bytes(schedule: &Path) -> Result<u32, String> {
    if let Ok(fixed) = env::var("KILN_ARENA_BYTES") {
        return fixed
            .parse()
            .map_err(|_| format!("KILN_ARENA_BYTES={fixed} is not a byte count"));
    }
    let bytes = fs::read(schedule).map_err(|e| describe(schedule, e))?;
    match read_manifest(&bytes) {
        Ok(manifest) => Ok(manifest.arena_bytes),
        Err(error) => {
            let path = schedule.display();
            println!("cargo:warning={path}: {error}; the firmware will refuse it at boot");
            Ok(0)
        }
    }
}

fn bundle_rs(
    dir: &Path,
    schedule: &Path,
    weights: &Path,
    weights_bytes: u64,
    arena: u32,
) -> String {
    let literal = |path: &Path| format!("{:?}", path.display().to_string());
    format!(
        "// @generated by kiln-board-build from the bundle in {dir}.\n\
         \n\
         /// The bundle's schedule, in flash.\n\
         pub static SCHEDULE: &[u8] = include_bytes!({schedule});\n\
         \n\
         /// The bundle's weights, in flash, aligned for the executor.\n\
         pub static WEIGHTS: kiln_firmware::exec::Aligned<[u8; {weights_bytes}]> =\n    \
         kiln_firmware::exec::Aligned(*include_bytes!({weights}));\n\
         \n\
         /// The arena, sized by the bundle's manifest.\n\
         pub static ARENA: kiln_firmware::exec::Arena<{arena}> =\n    \
         kiln_firmware::exec::Arena::new();\n",
        dir = dir.display(),
        schedule = literal(schedule),
        weights = literal(weights),
    )
}

/// Puts `memory.x` and `kiln.x` (the assertion that the arena fits) on the linker's path.
fn link_scripts(board_dir: &Path, out_dir: &Path, arena_bytes: u32) -> Result<(), String> {
    let memory = board_dir.join("memory.x");
    println!("cargo:rerun-if-changed={}", memory.display());
    fs::copy(&memory, out_dir.join("memory.x")).map_err(|e| describe(&memory, e))?;
    // `__euninit` ends the statics (the arena is one) in both cortex-m-rt and riscv-rt; the
    // region the stack grows down from is named differently.
    let ram = match var("CARGO_CFG_TARGET_ARCH")?.as_str() {
        "riscv32" => "REGION_STACK",
        _ => "RAM",
    };
    let assertion = format!(
        "/* @generated by kiln-board-build. */\n\
         ASSERT(__euninit + {MIN_STACK_BYTES} <= ORIGIN({ram}) + LENGTH({ram}),\n       \
         \"kiln: the model's {arena_bytes}-byte arena and a {MIN_STACK_BYTES}-byte stack do not \
         fit in this board's RAM: the model is too large for this board\");\n"
    );
    write(&out_dir.join("kiln.x"), &assertion)?;
    println!("cargo:rustc-link-search={}", out_dir.display());
    println!("cargo:rustc-link-arg=-Tkiln.x");
    Ok(())
}

fn var(name: &str) -> Result<String, String> {
    env::var(name).map_err(|_| format!("{name} is not set: call this from a build script"))
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    fs::write(path, text).map_err(|e| describe(path, e))
}

fn describe(path: &Path, error: std::io::Error) -> String {
    format!("{}: {error}", path.display())
}
