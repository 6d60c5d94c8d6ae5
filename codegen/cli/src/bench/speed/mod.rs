//! The int8 models' speed on three Cortex-M cores: each board's kernels run once under QEMU,
//! their instructions and estimated cycles per inference, the milliseconds those cycles take
//! at a clock of that core class, and the best published MLPerf Tiny result at that clock.
//! The table goes under the int8 table, in the same section of the report.

use super::models::Kind;
use super::report::{mark, opt, thousands, Row};
use super::BOARD;
use std::fmt::Write as _;

/// A core of the speed table: the board that emulates it and the clock its published results
/// were measured at.
pub struct SpeedCore {
    /// The board's folder: `qemu-an386`.
    pub board: &'static str,
    /// `M4`: the core in the table's sentences and in [`PUBLISHED`].
    pub short: &'static str,
    pub mhz: f64,
    /// Kiln's cycles are to be below the best published on this core (the M7 is for
    /// comparison).
    pub target: bool,
    /// The prefix of its numbers in `bench.tsv`: `m4`.
    pub key: &'static str,
}

impl SpeedCore {
    /// `Cortex-M4 @ 120 MHz`.
    pub fn label(&self) -> String {
        format!("Cortex-{} @ {} MHz", self.short, self.mhz)
    }
}

/// The three cores, in the table's order; the first is [`BOARD`], the main table's board.
pub const CORES: [SpeedCore; 3] = [
    SpeedCore {
        board: BOARD,
        short: "M4",
        mhz: 120.0,
        target: true,
        key: "m4",
    },
    SpeedCore {
        board: "qemu-an505",
        short: "M33",
        mhz: 160.0,
        target: true,
        key: "m33",
    },
    SpeedCore {
        board: "qemu-an500",
        short: "M7",
        mhz: 280.0,
        target: false,
        key: "m7",
    },
];

/// The boards of the speed table other than [`BOARD`]: the int8 models run on them too.
pub fn other_boards() -> Vec<&'static str> {
    CORES
        .iter()
        .map(|c| c.board)
        .filter(|&b| b != BOARD)
        .collect()
}

/// One published MLPerf Tiny latency: a model on a core class at its clock.
pub struct Published {
    /// [`SpeedCore::short`].
    pub core: &'static str,
    /// The bench's name of the model.
    pub model: &'static str,
    pub ms: f64,
    /// Who submitted it, with what, where that was checked against the results repository.
    pub by: Option<&'static str>,
}

/// Where [`PUBLISHED`] comes from.
pub const PUBLISHED_SOURCE: &str = "MLPerf Tiny inference, closed division, \
     github.com/mlcommons/tiny_results_v1.1, _v1.2 and _v1.3 (latency: the median throughput's \
     inverse)";

const ST_L4R5: &str = "STMicroelectronics, X-CUBE-AI on NUCLEO-L4R5ZI, v1.2";
const ST_H7A3: &str = "STMicroelectronics, X-CUBE-AI on NUCLEO-H7A3ZI-Q, v1.2";

/// The best published MLPerf Tiny closed-division latency per core class (at the clock of
/// [`CORES`]) and model, in ms. str_ww has none. Source: [`PUBLISHED_SOURCE`].
pub const PUBLISHED: [Published; 12] = [
    pub_ms("M4", "kws_int8", 43.2, Some(ST_L4R5)),
    pub_ms("M4", "vww_int8", 88.9, Some(ST_L4R5)),
    pub_ms("M4", "ic_int8", 165.1, Some(ST_L4R5)),
    pub_ms("M4", "ad_int8", 4.05, Some("Plumerai on NUCLEO-L4R5ZI")),
    pub_ms("M33", "kws_int8", 29.0, None),
    pub_ms("M33", "vww_int8", 59.3, None),
    pub_ms("M33", "ic_int8", 104.3, None),
    pub_ms("M33", "ad_int8", 3.21, None),
    pub_ms("M7", "kws_int8", 11.3, Some(ST_H7A3)),
    pub_ms("M7", "vww_int8", 23.8, Some(ST_H7A3)),
    pub_ms("M7", "ic_int8", 40.8, Some(ST_H7A3)),
    pub_ms("M7", "ad_int8", 1.08, None),
];

const fn pub_ms(
    core: &'static str,
    model: &'static str,
    ms: f64,
    by: Option<&'static str>,
) -> Published {
    Published {
        core,
        model,
        ms,
        by,
    }
}

/// Earlier results on the M4 @ 120 MHz, for context (KWS, VWW, IC, AD).
const M4_CONTEXT: &str = "For context, on the same Cortex-M4 @ 120 MHz: TFLM with CMSIS-NN took \
     181.9 / 600.6 / 704.2 / 10.05 ms on KWS / VWW / IC / AD (MLPerf Tiny v0.5), microTVM with \
     CMSIS-NN about 100 / 301 / 390 / 8.6 ms.";

/// What the cycle estimate is, and is not.
const ESTIMATE: &str = "The cycles are an estimate, not a measurement: the QEMU plugin \
     (`boards/qemu-plugin/insn.c`) classifies every Thumb-2 instruction the kernels execute and \
     gives it the core's published timing, the Cortex-M4 TRM's table 3-1 (with its load/store \
     pipelining: neighbouring single loads and stores take 1 cycle instead of 2; a taken branch's \
     pipeline refill P = 1; divisions at their worst case, 12). The Cortex-M33 has no table of its \
     own and gets the M4's, the Cortex-M7 the M4's one instruction at a time. It leaves out flash \
     wait states, bus contention and caches, and on the M7 dual issue and branch prediction (so \
     there it is about an upper bound on the core alone). The published figures are measured on \
     real boards, from their flash at their clock, so each ratio compares an estimate with a \
     measurement.";

/// The published latency of `model` on `core`, where there is one.
pub fn published(core: &SpeedCore, model: &str) -> Option<&'static Published> {
    PUBLISHED
        .iter()
        .find(|p| p.core == core.short && p.model == model)
}

/// Milliseconds `cycles` take at `mhz`.
pub(crate) fn ms(cycles: u64, mhz: f64) -> f64 {
    cycles as f64 / mhz / 1000.0
}

/// A published latency as the results give it: one decimal from 10 ms, else two.
fn published_ms(ms: f64) -> String {
    match ms < 10.0 {
        true => format!("{ms:.2}"),
        false => format!("{ms:.1}"),
    }
}

/// Millions, two decimals (three under a million): `5.18 M`, `0.486 M`.
fn millions(x: f64) -> String {
    match x < 1e6 {
        true => format!("{:.3} M", x / 1e6),
        false => format!("{:.2} M", x / 1e6),
    }
}

/// One model on one core: its numbers, and against the published figure.
struct Cell<'a> {
    model: &'a str,
    instructions: Option<u64>,
    cycles: Option<u64>,
    published: Option<&'static Published>,
}

impl Cell<'_> {
    fn published_cycles(&self, core: &SpeedCore) -> Option<f64> {
        self.published.map(|p| p.ms * core.mhz * 1000.0)
    }
    /// Kiln's cycles ÷ the published figure's at the same clock.
    fn ratio(&self, core: &SpeedCore) -> Option<f64> {
        Some(self.cycles? as f64 / self.published_cycles(core)?)
    }
}

fn cell<'a>(r: &'a Row, core: &SpeedCore) -> Cell<'a> {
    let run = r.k.on(core.board).and_then(Result::ok);
    Cell {
        model: r.m.name,
        instructions: run.map(|b| b.instructions),
        cycles: run.and_then(|b| b.cycles),
        published: published(core, r.m.name),
    }
}

/// The ratio's cell: ✓ where below the published figure, ✗ where a target is missed.
fn ratio_cell(x: Option<f64>, core: &SpeedCore) -> String {
    opt(x, |x| {
        let m = match (x < 1.0, core.target) {
            (true, _) => mark(true),
            (false, true) => mark(false),
            (false, false) => "",
        };
        format!("{x:.2}×{m}")
    })
}

/// The speed table of the int8 `rows`, with its caption and the notes under it; nothing where
/// no row ran on a board (`--no-board`).
pub fn markdown(rows: &[Row]) -> String {
    let rows: Vec<&Row> = rows.iter().filter(|r| r.m.kind == Kind::Int8).collect();
    let ran = |r: &&Row| CORES.iter().any(|c| r.k.on(c.board).is_some());
    if !rows.iter().any(ran) {
        return String::new();
    }
    let mut s = caption();
    s += "| core | model | instructions | est. cycles | est. ms | best published ms | \
          published cycles | Kiln/published |\n";
    s += "|---|---|---:|---:|---:|---:|---:|---:|\n";
    let mut missed = Vec::new();
    for core in &CORES {
        for r in &rows {
            let c = cell(r, core);
            let ratio = c.ratio(core);
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} | {} | {} |",
                core.label(),
                c.model,
                opt(c.instructions, thousands),
                opt(c.cycles, thousands),
                opt(c.cycles, |n| format!("{:.2}", ms(n, core.mhz))),
                opt(c.published, |p| published_ms(p.ms)),
                opt(c.published_cycles(core), millions),
                ratio_cell(ratio, core),
            );
            if let (true, Some(x), Some(n), Some(p)) =
                (core.target, ratio, c.cycles, c.published_cycles(core))
            {
                if x >= 1.0 {
                    missed.push(format!(
                        "{} on the {}: {} cycles against {}, {x:.2}×.",
                        c.model,
                        core.short,
                        millions(n as f64),
                        millions(p)
                    ));
                }
            }
        }
    }
    s += &targets_note(&rows, &missed);
    s += &outputs_note(&rows);
    s += &published_note();
    let _ = writeln!(s, "\n{ESTIMATE}");
    s += &errors(&rows);
    s
}

/// How the table was made.
fn caption() -> String {
    let mut targets: Vec<&str> = CORES
        .iter()
        .map(|c| crate::run::target_for(c.board).map_or("c", |t| t.name))
        .collect();
    targets.dedup();
    let boards: Vec<String> = CORES
        .iter()
        .map(|c| format!("{} as a {}", c.board, c.label()))
        .collect();
    let targeted: Vec<&str> = CORES.iter().filter(|c| c.target).map(|c| c.short).collect();
    let compared: Vec<&str> = CORES
        .iter()
        .filter(|c| !c.target)
        .map(|c| c.short)
        .collect();
    format!(
        "\nSpeed on three cores: each int8 model's kernels compiled for the board's kernel target \
         (`{}`: packed int8 dot products with SMLAD) and run once under QEMU, {}: instructions in \
         the kernels per inference, cycles estimated from them by the core's instruction \
         timings (an estimate, see below), and milliseconds at the core's clock (cycles ÷ MHz ÷ \
         1000). Against the best published MLPerf Tiny result for that core class at that \
         clock: Kiln ÷ published (cycles), ✓ where below; target: below on the {} on each of \
         KWS, VWW, IC and AD (✗ where missed); the {} rows are for comparison. str_ww has no \
         MLPerf Tiny figure.\n\n",
        targets.join("`, `"),
        boards.join(", "),
        targeted.join(" and the "),
        compared.join(", "),
    )
}

/// One sentence per target missed, or that none is.
fn targets_note(rows: &[&Row], missed: &[String]) -> String {
    let compared = CORES
        .iter()
        .filter(|c| c.target)
        .any(|c| rows.iter().any(|r| cell(r, c).ratio(c).is_some()));
    if !compared {
        return String::new();
    }
    if missed.is_empty() {
        "\nEvery target compared here is met: the estimated cycles are below the best published \
         on the M4 and the M33.\n"
            .to_string()
    } else {
        format!("\nTargets missed: {}\n", missed.join(" "))
    }
}

/// How far the outputs on the other boards are from TFLM's, where compared.
fn outputs_note(rows: &[&Row]) -> String {
    let mut diffs = Vec::new();
    for core in CORES.iter().filter(|c| c.board != BOARD) {
        for r in rows {
            if let Some(Ok(b)) = r.k.on(core.board) {
                if let Some(d) = b.diff {
                    diffs.push((r.m.name, core.board, d));
                }
            }
        }
    }
    if diffs.is_empty() {
        return String::new();
    }
    let others: Vec<&str> = other_boards();
    if diffs.iter().all(|(_, _, d)| *d == 0.0) {
        return format!(
            "\nKiln's outputs on {} equal TFLM's on every model compared, as on {BOARD}.\n",
            others.join(" and ")
        );
    }
    let list: Vec<String> = diffs
        .iter()
        .map(|(m, b, d)| format!("{m} on {b} {d}"))
        .collect();
    format!(
        "\nKiln's outputs on {} against TFLM's, largest difference in steps: {}.\n",
        others.join(" and "),
        list.join(", ")
    )
}

/// Who the published figures are from, and the M4's earlier results.
fn published_note() -> String {
    let mut by: Vec<(&str, Vec<String>)> = Vec::new();
    for p in &PUBLISHED {
        let who = p.by.unwrap_or("best published closed-division result");
        let what = format!("{} {}", p.core, p.model.trim_end_matches("_int8"));
        match by.iter_mut().find(|(w, _)| *w == who) {
            Some((_, list)) => list.push(what),
            None => by.push((who, vec![what])),
        }
    }
    let parts: Vec<String> = by
        .iter()
        .map(|(who, what)| format!("{}: {who}", what.join(", ")))
        .collect();
    format!(
        "\nPublished figures ({PUBLISHED_SOURCE}) — {}. {M4_CONTEXT}\n",
        parts.join("; ")
    )
}

/// The runs on the other boards that failed, one paragraph each (the main board's are under the
/// int8 table).
fn errors(rows: &[&Row]) -> String {
    let mut s = String::new();
    for r in rows {
        for (board, run) in &r.k.other_boards {
            if let Err(e) = run {
                let _ = writeln!(s, "\n{} on {board}: {e}", r.m.name);
            }
        }
    }
    s
}

/// The speed numbers of one row for `bench.tsv`, `model, key, value` lines: per core its
/// instructions and estimated cycles (the main board's instructions are the table's
/// `m4_instructions`), the other boards' image and outputs, and the published figure.
pub fn tsv_row(r: &Row) -> String {
    let mut s = String::new();
    let n = r.m.name;
    for core in &CORES {
        let k = core.key;
        if let Some(Ok(b)) = r.k.on(core.board) {
            if core.board != BOARD {
                let _ = writeln!(s, "{n}\t{k}_instructions\t{}", b.instructions);
                let _ = writeln!(s, "{n}\t{k}_flash\t{}", b.flash);
                let _ = writeln!(s, "{n}\t{k}_ram\t{}", b.ram);
                if let Some(d) = b.diff {
                    let _ = writeln!(s, "{n}\t{k}_diff_vs_tflm\t{d}");
                }
            }
            if let Some(c) = b.cycles {
                let _ = writeln!(s, "{n}\t{k}_cycles_est\t{c}");
                let _ = writeln!(s, "{n}\t{k}_ms_est\t{}", ms(c, core.mhz));
            }
        }
        if r.m.kind == Kind::Int8 {
            if let Some(p) = published(core, n) {
                let _ = writeln!(s, "{n}\t{k}_published_ms\t{}", p.ms);
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::kiln::{BoardNumbers, KilnNumbers};
    use crate::bench::models::BenchModel;

    fn numbers(instructions: u64, cycles: u64) -> BoardNumbers {
        BoardNumbers {
            instructions,
            cycles: Some(cycles),
            flash: 1_000,
            ram: 300,
            diff: Some(0.0),
        }
    }

    fn row<'a>(m: &'a BenchModel, cycles: [u64; 3]) -> Row<'a> {
        Row {
            m,
            k: KilnNumbers {
                board: Some(numbers(cycles[0] / 2, cycles[0])),
                other_boards: vec![
                    ("qemu-an505", Ok(numbers(cycles[1] / 2, cycles[1]))),
                    ("qemu-an500", Err("no QEMU".into())),
                ],
                ..KilnNumbers::default()
            },
            ort_us: None,
            tinygrad_us: None,
            tflm_us: None,
            litert_us: None,
            tflm: None,
            tflm_image: None,
        }
    }

    #[test]
    fn the_published_table_has_every_core_and_mlperf_model() {
        for core in &CORES {
            for m in ["kws_int8", "vww_int8", "ic_int8", "ad_int8"] {
                assert!(published(core, m).is_some(), "{} {m}", core.short);
            }
            assert!(published(core, "str_ww_int8").is_none());
        }
        // The cycle figures on the M4: 43.2 ms at 120 MHz is 5.18 M cycles.
        let kws = published(&CORES[0], "kws_int8").unwrap();
        assert_eq!(millions(kws.ms * 120.0 * 1000.0), "5.18 M");
        assert_eq!(other_boards(), ["qemu-an505", "qemu-an500"]);
        assert_eq!(CORES[2].label(), "Cortex-M7 @ 280 MHz");
    }

    #[test]
    fn compares_the_estimate_with_the_published_and_says_where_a_target_is_missed() {
        let (kws, ad, str_ww) = (
            BenchModel::named("kws_int8", Kind::Int8),
            BenchModel::named("ad_int8", Kind::Int8),
            BenchModel::named("str_ww_int8", Kind::Int8),
        );
        // kws: 7.1 M cycles on the M4 (over 5.18 M), 3 M on the M33 (under 4.64 M);
        // ad: 0.4 M on the M4 (under 0.486 M), 0.6 M on the M33 (over 0.5136 M).
        let rows = [
            row(&kws, [7_100_000, 3_000_000, 0]),
            row(&ad, [400_000, 600_000, 0]),
            row(&str_ww, [1_000_000, 1_000_000, 0]),
        ];
        let md = markdown(&rows);
        let lines: Vec<&str> = md.lines().filter(|l| l.starts_with('|')).collect();
        assert_eq!(lines.len(), 2 + 9, "{md}");
        assert_eq!(
            lines[2],
            "| Cortex-M4 @ 120 MHz | kws_int8 | 3,550,000 | 7,100,000 | 59.17 | 43.2 | 5.18 M | \
             1.37× ✗ |"
        );
        assert!(md.contains("| ad_int8 | 200,000 | 400,000 | 3.33 | 4.05 | 0.486 M | 0.82× ✓ |"));
        assert!(md.contains(
            "| Cortex-M4 @ 120 MHz | str_ww_int8 | 500,000 | 1,000,000 | 8.33 | — | — | — |"
        ));
        assert!(md.contains("| Cortex-M33 @ 160 MHz | kws_int8 | 1,500,000 | 3,000,000 | 18.75 | 29.0 | 4.64 M | 0.65× ✓ |"), "{md}");
        // The M7 did not run: dashes, and its error under the table.
        assert!(
            md.contains("| Cortex-M7 @ 280 MHz | kws_int8 | — | — | — | 11.3 | 3.16 M | — |"),
            "{md}"
        );
        assert!(md.contains("\nkws_int8 on qemu-an500: no QEMU\n"), "{md}");
        assert!(
            md.contains(
                "Targets missed: kws_int8 on the M4: 7.10 M cycles against 5.18 M, 1.37×. \
                 ad_int8 on the M33: 0.600 M cycles against 0.514 M, 1.17×.\n"
            ),
            "{md}"
        );
        assert!(md.contains("equal TFLM's on every model compared"), "{md}");
        assert!(
            md.contains("M4 kws, M4 vww, M4 ic: STMicroelectronics, X-CUBE-AI on NUCLEO-L4R5ZI")
        );
        assert!(md.contains("an estimate with a measurement"));
        let numbers = tsv_row(&rows[0]);
        assert!(
            numbers.contains("kws_int8\tm4_cycles_est\t7100000\n"),
            "{numbers}"
        );
        assert!(numbers.contains("kws_int8\tm33_instructions\t1500000\n"));
        assert!(
            numbers.contains("kws_int8\tm33_cycles_est\t3000000\nkws_int8\tm33_ms_est\t18.75\n")
        );
        assert!(numbers.contains("kws_int8\tm7_published_ms\t11.3\n"));
        assert!(!numbers.contains("m4_instructions"), "{numbers}");
    }

    #[test]
    fn a_run_without_boards_has_no_speed_table() {
        let kws = BenchModel::named("kws_int8", Kind::Int8);
        let mut r = row(&kws, [1, 1, 1]);
        r.k.board = None;
        r.k.other_boards.clear();
        assert_eq!(markdown(&[r]), "");
    }
}
