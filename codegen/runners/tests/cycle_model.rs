//! The QEMU plugin's cycle estimate (`boards/qemu-plugin/insn.c`, `core=m4`, `core=m7` and
//! `core=m55`) against small bare-metal loops (`boards/qemu-plugin/tests/loops.S`) whose Cortex-M4 cycles
//! follow from the Technical Reference Manual (DDI 0439, table 3-1, section 3.3.2 "Load/store
//! timings", table 7-1 for the FPU), and whose Cortex-M7 cycles follow from the dual-issue
//! rules (`boards/qemu-plugin/dual_issue.c`), worked out by hand below, instruction by
//! instruction; and the Cortex-M55's Helium instructions against the loops of
//! `boards/qemu-plugin/tests/helium.S` on QEMU's mps3-an547 ([`HELIUM`]). Between two marks
//! counts everything after the first marker store up to and including the second: the loop's
//! set-up `movs r4, #N` (1 cycle), the loop, and the closing `str r0, [r6]` (2 cycles: it
//! follows a branch, nothing to pipeline after). P, the refill of a taken branch, is 1.
//!
//! Needs `arm-none-eabi-gcc` and `qemu-system-arm` (`scripts/setup-toolchain.sh`). Without them
//! the test says so and passes, except with `KILN_REQUIRE_ALL=1` (`scripts/test.sh`), where it
//! fails.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// One case of `loops.S`: the instructions, and the cycles between its two marks on the
/// Cortex-M4 and on the Cortex-M7.
struct Case {
    name: &'static str,
    instructions: u64,
    cycles: u64,
    m7: u64,
}

/// In the order `loops.S` runs them. Per loop: one iteration's instructions and cycles (its
/// first instruction follows the set-up `movs` or the loop's own branch: nothing pipelines
/// into it), times the iterations, plus P for each taken `bne` (all but the last), plus the
/// set-up `movs` (1) and the closing marker `str` (2).
///
/// On the M7 (`dual_issue.c`), cycles are counted as groups of one or two instructions issue,
/// "@t" the cycle an instruction issues in, "+" one that pairs with the instruction before it.
/// The opening marker store begins a group (the `nop` before it issues alone) and the set-up
/// `movs` pairs with it (0); the loop is its own block, so each iteration starts a group with
/// nothing pending; the closing store begins a block (1); P is 1.
const CASES: [Case; 13] = [
    // (a) 100 × { ldr r0,[r1] 2 (after movs/bne); ldr r3,[r1,#4] 1 (pipelines after the
    //     load; its address is r1, not the r0 just loaded); smlad 1; subs 1; bne 1 } = 6,
    //     600 + 99 + 1 + 2.
    //     M7: ldr @0, +ldr (load/load); smlad @2 (waits for the loads); +subs; bne @3: 4.
    Case {
        name: "(a) ldr, ldr, smlad",
        instructions: 100 * 5 + 2,
        cycles: 100 * 6 + 99 + 3,
        m7: 100 * 4 + 99 + 1,
    },
    // (b) 100 × { mul 1; mla 2; mls 2; smull 1; umlal 1; subs 1; bne 1 } = 9.
    //     M7: mul @0; mla @1 and mls @2 (one MAC pipeline; the accumulator forwarded in a
    //     cycle); smull @3; umlal @4, +subs; bne @5: 6.
    Case {
        name: "(b) mul, mla, mls, smull, umlal",
        instructions: 100 * 7 + 2,
        cycles: 100 * 9 + 99 + 3,
        m7: 100 * 6 + 99 + 1,
    },
    // (c) 100 × { sdiv 12; udiv 12 (2 to 12 by the operands: the worst case); subs 1; bne 1 }
    //     = 26.
    //     M7: sdiv and udiv alone, 12 each; subs @24, +bne: 25.
    Case {
        name: "(c) sdiv, udiv",
        instructions: 100 * 4 + 2,
        cycles: 100 * 26 + 99 + 3,
        m7: 100 * 25 + 99 + 1,
    },
    // (d) 100 × { vldr 2; vldr 2 (FP loads do not pipeline here); vmla.f32 3; vadd.f32 1;
    //     vmul.f32 1; vfma.f32 3; subs 1; bne 1 } = 14.
    //     M7: the FPU's instructions alone at the M4's figures, 12; subs, +bne: 13.
    Case {
        name: "(d) vldr, vldr, vmla, vadd, vmul, vfma",
        instructions: 100 * 8 + 2,
        cycles: 100 * 14 + 99 + 3,
        m7: 100 * 13 + 99 + 1,
    },
    // (e) 100 × { push {r0-r3} 1+4; pop {r0-r3} 1+4; ldmia.w {3 regs} 1+3; stmia.w {3 regs}
    //     1+3; ldrd 3; strd 3; subs 1; bne 1 } = 26.
    //     M7: the multiple and double transfers alone, 24; subs, +bne: 25.
    Case {
        name: "(e) push, pop, ldm, stm, ldrd, strd",
        instructions: 100 * 8 + 2,
        cycles: 100 * 26 + 99 + 3,
        m7: 100 * 25 + 99 + 1,
    },
    // (f) 100 × { cmp 1; beq not taken 1; cbz not taken 1; b taken 1+P = 2 (over a nop, which
    //     does not run); cmp 1; it 1; addhi 1 (the same whether it passes or not); subs 1;
    //     bne 1 } = 10.
    //     M7, block by block: cmp, +beq 1; cbz 1; b 1+P; cmp 1; it alone 1; addhi @2, +subs
    //     (both set flags: the second's stand); bne @3: 8.
    Case {
        name: "(f) branches not taken, a taken b, an IT block",
        instructions: 100 * 9 + 2,
        cycles: 100 * 10 + 99 + 3,
        m7: 100 * 8 + 99 + 1,
    },
    // (g) 100 × { ldr r2,[r1] 2; ldr r3,[r2] 2 (its address is the register just loaded: not
    //     pipelined); str r3,[r1,#8] 1 (pipelines after the load); subs 1; bne 1 } = 7.
    //     M7: ldr @0; ldr @2 (its address loaded at @0); str @4, +subs; bne @5: 6.
    Case {
        name: "(g) a load whose address was just loaded",
        instructions: 100 * 5 + 2,
        cycles: 100 * 7 + 99 + 3,
        m7: 100 * 6 + 99 + 1,
    },
    // (h) 100 × { str r0,[r1,r2] 2; ldr r3,[r1] 2 (nothing pipelines after a store with a
    //     register offset); str r3,[r1,#4] 1; str r3,[r1,#8] 1 (after a store with an
    //     immediate offset); ldrb r5,[r1,#1] 1; subs 1; bne 1 } = 9.
    //     M7: str @0, +ldr (load/store); str @2 (waits for r3); str @3 (not two stores),
    //     +ldrb; subs @4, +bne: 5.
    Case {
        name: "(h) pipelining after stores",
        instructions: 100 * 7 + 2,
        cycles: 100 * 9 + 99 + 3,
        m7: 100 * 5 + 99 + 1,
    },
    // (i) 10 × { bl 1+P = 2; push {r7,lr} 1+2; pop {r7,pc} 1+2+P = 4; bl 2; bx lr 1+P = 2;
    //     subs 1; bne 1 } = 15, 150 + 9 + 1 + 2.
    //     M7: the same but subs, +bne: 14.
    Case {
        name: "(i) bl, push, pop pc, bx lr",
        instructions: 10 * 7 + 2,
        cycles: 10 * 15 + 9 + 3,
        m7: 10 * 14 + 9 + 1,
    },
    // (j) once, no set-up: vpush {s16-s19} 1+4; vpop {s16-s19} 1+4; vldm {s0-s3} 1+4;
    //     vstm {s0-s2} 1+3; vdiv.f32 14; vsqrt.f32 14; vmov r0,s0 1; vmov s6,r0 1;
    //     vmov r0,r3,d0 2; vcvt.s32.f32 1; vcmp.f32 1; vmrs 1; vstr 2; vmov.f32 #1.0 1;
    //     vneg.f32 1; and the closing str 2 (after vneg: nothing to pipeline after).
    //     M7: each alone at the M4's figure, and the closing str 1.
    Case {
        name: "(j) the rest of the FPU",
        instructions: 15 + 1,
        cycles: 5 + 5 + 5 + 4 + 14 + 14 + 1 + 1 + 2 + 1 + 1 + 1 + 2 + 1 + 1 + 2,
        m7: 5 + 5 + 5 + 4 + 14 + 14 + 1 + 1 + 2 + 1 + 1 + 1 + 2 + 1 + 1 + 1,
    },
    // (l) 100 × { ldr r0,[r1] 2; ldr r2,[r8] 1; ldr r3,[r8,#4] 1; sxtb16 1; sxtb16 ror 1;
    //     smlad 1; smlad 1; subs 1; bne 1 } = 10.
    //     M7: ldr @0, +ldr; ldr @1; sxtb16 @2 (waits for r0); sxtb16 @3 and the smlads @4, @5
    //     (DSP instructions issue only first), +subs; bne @6: 7.
    Case {
        name: "(l) a packed dot product",
        instructions: 100 * 9 + 2,
        cycles: 100 * 10 + 99 + 3,
        m7: 100 * 7 + 99 + 1,
    },
    // (m) 100 × { add lsl 1; add lsl 1; ldr 2 (after an ALU instruction); adds 1; subs 1;
    //     bne 1 } = 7.
    //     M7: add @0; add @1 (one shifter), +ldr; adds @3 (the load's result), +subs; bne @4:
    //     5.
    Case {
        name: "(m) shifted operands, a load and its use",
        instructions: 100 * 6 + 2,
        cycles: 100 * 7 + 99 + 3,
        m7: 100 * 5 + 99 + 1,
    },
    // (k) set-up movs 1 and b 1+P = 2, then 100 × { cmp 1 (16-bit, at the last halfword but one
    //     of a page); mla 2 (its halves on two pages); subs 1; bne 1 } = 5. QEMU reports the
    //     cmp with size 4: costed by that size, it was a VLDM of 6 cycles more.
    //     M7: movs 0 and b 1+P; QEMU ends a block before an instruction that crosses a page:
    //     cmp 1; mla @0, +subs; bne @1: 3.
    Case {
        name: "(k) a 16-bit instruction before a page-crossing one",
        instructions: 100 * 4 + 3,
        cycles: 100 * 5 + 99 + 1 + 2 + 2,
        m7: 100 * 3 + 99 + 2 + 1,
    },
];

/// The plugin's marks: (instructions, cycles when it has them), in order.
fn marks(log: &str) -> Vec<(u64, Option<u64>)> {
    log.lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            if words.next() != Some("kiln-insn") {
                return None;
            }
            let count = words.next()?.parse().ok()?;
            Some((count, words.next().map(|c| c.parse().unwrap())))
        })
        .collect()
}

/// Runs `elf` on QEMU's mps2-an386 with the plugin given `args` (after the marker); its log.
fn run(elf: &Path, dir: &Path, args: &str) -> String {
    run_on(
        ["mps2-an386", "cortex-m4"],
        elf,
        dir,
        &format!("0x20000000{args}"),
    )
}

/// Runs `elf` on QEMU's `machine` and CPU with the plugin given `args` (from the marker's
/// address on); its log.
fn run_on(machine: [&str; 2], elf: &Path, dir: &Path, args: &str) -> String {
    let log = dir.join(format!("insn{}.log", args.replace([',', '='], "_")));
    let plugin = root().join("target/qemu-plugin/libinsn.so");
    let output = Command::new("timeout")
        .args([
            "60",
            "qemu-system-arm",
            "-machine",
            machine[0],
            "-cpu",
            machine[1],
        ])
        .args([
            "-nographic",
            "-semihosting-config",
            "enable=on,target=native",
        ])
        .arg("-kernel")
        .arg(elf)
        .arg("-plugin")
        .arg(format!("{},marker={args}", plugin.display()))
        .args(["-d", "plugin", "-D"])
        .arg(&log)
        .output()
        .expect("running qemu-system-arm");
    assert!(
        output.status.success(),
        "QEMU failed ({}): {}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    std::fs::read_to_string(&log).expect("the plugin's log")
}

/// Each case whose instructions or cycles between its marks differ from the hand-worked ones:
/// `expected` is (name, instructions, cycles) per case, in the order they run.
fn mismatches(
    core: &str,
    marks: &[(u64, Option<u64>)],
    expected: &[(&str, u64, u64)],
) -> Vec<String> {
    if marks.len() != 2 * expected.len() {
        return vec![format!(
            "{core}: {} marks, not {}",
            marks.len(),
            2 * expected.len()
        )];
    }
    let mut wrong = Vec::new();
    for (&(name, want_instructions, want_cycles), m) in expected.iter().zip(marks.chunks_exact(2)) {
        let instructions = m[1].0 - m[0].0;
        let cycles = m[1].1.unwrap() - m[0].1.unwrap();
        eprintln!("{core} {name:<48} {instructions:>6} instructions {cycles:>6} cycles");
        if (instructions, cycles) != (want_instructions, want_cycles) {
            wrong.push(format!(
                "{core} {name}: {instructions} instructions, {cycles} cycles; by hand \
                 {want_instructions}, {want_cycles}"
            ));
        }
    }
    wrong
}

/// The cases' (name, instructions, cycles by `cycles`).
fn expected(cycles: impl Fn(&Case) -> u64) -> Vec<(&'static str, u64, u64)> {
    CASES
        .iter()
        .map(|c| (c.name, c.instructions, cycles(c)))
        .collect()
}

/// The QEMU plugin built and `source` (under `boards/qemu-plugin/tests/`) assembled into an ELF
/// in `dir` with `flags`; `None` where the tools are missing and the test may pass without them.
fn assembled(source: &str, flags: &[&str], dir: &Path) -> Option<PathBuf> {
    let missing: Vec<&str> = ["arm-none-eabi-gcc", "qemu-system-arm"]
        .into_iter()
        .filter(|t| !have(t))
        .collect();
    let tools = match missing.is_empty() {
        true => Ok(()),
        false => Err(format!(
            "{} missing: run scripts/setup-toolchain.sh",
            missing.join(" and ")
        )),
    };
    if !kiln_tests::available("the cycle-model loops", tools) {
        return None;
    }
    let built = Command::new("bash")
        .arg(root().join("scripts/qemu-plugin.sh"))
        .output()
        .expect("running scripts/qemu-plugin.sh");
    assert!(
        built.status.success(),
        "building the plugin: {}",
        String::from_utf8_lossy(&built.stderr)
    );
    let elf = dir.join(source.replace(".S", ".elf"));
    let output = Command::new("arm-none-eabi-gcc")
        .args(flags)
        .args(["-mthumb", "-nostdlib", "-o"])
        .arg(&elf)
        .arg(root().join("boards/qemu-plugin/tests").join(source))
        .output()
        .expect("running arm-none-eabi-gcc");
    assert!(
        output.status.success(),
        "assembling {source}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Some(elf)
}

#[test]
fn the_cycle_estimate_matches_hand_worked_small_loops() {
    let dir = tempfile::tempdir().unwrap();
    let flags = [
        "-mcpu=cortex-m4",
        "-mfpu=fpv4-sp-d16",
        "-mfloat-abi=hard",
        "-Ttext=0",
    ];
    let Some(elf) = assembled("loops.S", &flags, dir.path()) else {
        return;
    };
    let log = run(&elf, dir.path(), ",core=m4");
    let estimated = marks(&log);
    let mut wrong = mismatches("M4 (the TRM)", &estimated, &expected(|c| c.cycles));
    let m7 = marks(&run(&elf, dir.path(), ",core=m7"));
    wrong.extend(mismatches("M7 (dual issue)", &m7, &expected(|c| c.m7)));
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    let total = log
        .lines()
        .find_map(|l| l.strip_prefix("kiln-insn-total "))
        .expect("a total");
    let total: Vec<u64> = total
        .split_whitespace()
        .map(|w| w.parse().unwrap())
        .collect();
    assert_eq!(total.len(), 2, "instructions and cycles: {total:?}");
    assert!(total[1] > total[0]);

    // Without a core the log is as it always was: the same instructions, one number a line.
    let plain = run(&elf, dir.path(), "");
    let plain_marks = marks(&plain);
    assert!(plain_marks.iter().all(|m| m.1.is_none()), "{plain}");
    let counts = |m: &[(u64, Option<u64>)]| m.iter().map(|m| m.0).collect::<Vec<_>>();
    assert_eq!(counts(&plain_marks), counts(&estimated));
    assert!(plain.contains(&format!("kiln-insn-total {}\n", total[0])));
}

/// The loops of `helium.S` on the Cortex-M55: (name, instructions, cycles). Per loop, as for
/// [`CASES`]: one iteration times 100, P (1) for each taken branch back, the set-up `movs` (1)
/// and the closing marker `str` (2). A Helium instruction costs 2 cycles, 1 where it follows
/// one of the other kind (a vector load or store after vector arithmetic, or the other way
/// round); a scalar instruction between them ends the overlap.
const HELIUM: [(&str, u64, u64); 5] = [
    // (a) 100 × { vldrb 2 (after the branch); vmladava 1; vldrb 1; vmladava 1; subs 1; bne 1 }
    //     = 7.
    (
        "(a) loads and dot products interleaved",
        100 * 6 + 2,
        100 * 7 + 99 + 3,
    ),
    // (b) 100 × { vldrb 2; vldrb 2 (the same kind); vmladava 1; vmladava 2; subs 1; bne 1 }
    //     = 9.
    (
        "(b) the same, grouped by kind",
        100 * 6 + 2,
        100 * 9 + 99 + 3,
    ),
    // (c) 100 × { vldrb 2; adds 1; vmladava 2 (after a scalar instruction); subs 1; bne 1 } = 7.
    (
        "(c) a scalar instruction between",
        100 * 5 + 2,
        100 * 7 + 99 + 3,
    ),
    // (d) 100 × { vadd 2; vstrb 1; vmul 1; vmov 2 (arithmetic after arithmetic); subs 1;
    //     bne 1 } = 8.
    (
        "(d) vector arithmetic and a store",
        100 * 6 + 2,
        100 * 8 + 99 + 3,
    ),
    // (e) dls 1 after the set-up, then 100 × { vldrb 2; vmladava 1; le 1 (+P taken) } = 4.
    (
        "(e) a low-overhead loop",
        100 * 3 + 3,
        100 * 4 + 99 + 1 + 1 + 2,
    ),
];

#[test]
fn the_helium_estimate_matches_hand_worked_loops() {
    let dir = tempfile::tempdir().unwrap();
    let flags = ["-mcpu=cortex-m55", "-mfloat-abi=hard", "-Ttext=0x10000000"];
    let Some(elf) = assembled("helium.S", &flags, dir.path()) else {
        return;
    };
    let machine = ["mps3-an547", "cortex-m55"];
    let log = run_on(machine, &elf, dir.path(), "0x11000000,core=m55");
    let wrong = mismatches("M55 (Helium)", &marks(&log), &HELIUM);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
