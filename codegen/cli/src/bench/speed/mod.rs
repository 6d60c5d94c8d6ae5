//! The int8 models' speed on four Cortex-M cores: each board's kernels run once under QEMU,
//! their instructions and estimated cycles per inference, the milliseconds those cycles take
//! at a clock of that core class, the best published MLPerf Tiny result at that clock
//! ([`published::PUBLISHED`]), and TFLM with CMSIS-NN's kernels measured the same way on the same board
//! ([`cmsis`], [`super::peer`]). The table goes under the int8 table, in the same section of the
//! report.

mod cmsis;
mod published;
mod wide;

use super::models::Kind;
use super::report::{listed, mark, opt, thousands, Row};
use super::BOARD;
pub use published::{published, Published};
use published::{published_ms, published_note, ESTIMATE};
use std::fmt::Write as _;
pub use wide::wide_boards;

/// A core of the speed table: the board that emulates it and the clock its published results
/// were measured at.
pub struct SpeedCore {
    /// The board's folder: `qemu-an386`.
    pub board: &'static str,
    /// `M4`: the core in the table's sentences and in [`published::PUBLISHED`].
    pub short: &'static str,
    pub mhz: f64,
    /// Kiln's cycles are to be below the best published on this core (the M7 is for
    /// comparison).
    pub target: bool,
    /// The prefix of its numbers in `bench.tsv`: `m4`.
    pub key: &'static str,
    /// The folder of [`super::peer::DIR`] with the TFLM + CMSIS-NN images for this board
    /// (`an386`), where there is one.
    pub peer: Option<&'static str>,
}

impl SpeedCore {
    /// `Cortex-M4 @ 120 MHz`.
    pub fn label(&self) -> String {
        format!("Cortex-{} @ {} MHz", self.short, self.mhz)
    }
}

/// The four cores, in the table's order; the first is [`BOARD`], the main table's board.
pub const CORES: [SpeedCore; 4] = [
    SpeedCore {
        board: BOARD,
        short: "M4",
        mhz: 120.0,
        target: true,
        key: "m4",
        peer: Some("an386"),
    },
    SpeedCore {
        board: "qemu-an505",
        short: "M33",
        mhz: 160.0,
        target: true,
        key: "m33",
        peer: Some("an505"),
    },
    SpeedCore {
        board: "qemu-an500",
        short: "M7",
        mhz: 280.0,
        target: true,
        key: "m7",
        peer: None,
    },
    // Helium's: the published figures are a Cortex-M85's at 480 MHz (no M55 result is faster).
    SpeedCore {
        board: "qemu-an547",
        short: "M55",
        mhz: 480.0,
        target: true,
        key: "m55",
        peer: None,
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

/// Milliseconds `cycles` take at `mhz`.
pub(crate) fn ms(cycles: u64, mhz: f64) -> f64 {
    cycles as f64 / mhz / 1000.0
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
        self.published.map(|p| p.cycles(core))
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
          published cycles | Kiln/published | TFLM + CMSIS-NN est. cycles | Kiln ÷ CMSIS-NN |\n";
    s += "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n";
    let mut missed = Vec::new();
    for core in &CORES {
        for r in &rows {
            let (line, miss) = table_row(r, core);
            s += &line;
            missed.extend(miss);
        }
    }
    s += &targets_note(&rows, &missed);
    s += &cmsis::note(&rows);
    s += &outputs_note(&rows);
    s += &published_note();
    let _ = writeln!(s, "\n{ESTIMATE}");
    s += &errors(&rows);
    s += &wide::markdown(&rows);
    s
}

/// The table's line of `r` on `core`, and the sentence of the published target it misses.
fn table_row(r: &Row, core: &SpeedCore) -> (String, Option<String>) {
    let c = cell(r, core);
    let ratio = c.ratio(core);
    let [peer, vs_peer] = cmsis::cells(r, core);
    let line = format!(
        "| {} | {} | {} | {} | {} | {} | {} | {} | {peer} | {vs_peer} |\n",
        core.label(),
        c.model,
        opt(c.instructions, thousands),
        opt(c.cycles, thousands),
        opt(c.cycles, |n| format!("{:.2}", ms(n, core.mhz))),
        opt(c.published, |p| published_ms(p.ms)),
        opt(c.published_cycles(core), millions),
        ratio_cell(ratio, core),
    );
    let missed = match (core.target, ratio, c.cycles, c.published_cycles(core)) {
        (true, Some(x), Some(n), Some(p)) if x >= 1.0 => Some(format!(
            "{} on the {}: {} cycles against {}, {x:.2}×.",
            c.model,
            core.short,
            millions(n as f64),
            millions(p)
        )),
        _ => None,
    };
    (line, missed)
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
    let compared = match named(false).is_empty() {
        true => String::new(),
        false => format!("; the {} rows are for comparison", named(false)),
    };
    format!(
        "\nSpeed on four cores: each int8 model's kernels compiled for the board's kernel target \
         (`{}`: packed int8 dot products with SMLAD, and with Helium's VMLADAVA as well on the \
         M55) and run once under QEMU, {}: instructions in the kernels per inference, cycles \
         estimated from them by the core's instruction timings (an estimate, see below), and \
         milliseconds at the core's clock (cycles ÷ MHz ÷ 1000). Against the best published \
         MLPerf Tiny result for that core class at that clock: Kiln ÷ published (cycles), ✓ \
         where below; target: below on the {} on each of KWS, VWW, IC, AD and str_ww (✗ where \
         missed){compared}. str_ww's published figure is a busy time per window with the \
         features computed on the board, not the model alone (see the notes).\n\n",
        targets.join("`, `"),
        boards.join(", "),
        named(true),
    )
}

/// The cores whose [`SpeedCore::target`] is `target`: `M4, M33 and M7`.
fn named(target: bool) -> String {
    let names: Vec<&str> = CORES
        .iter()
        .filter(|c| c.target == target)
        .map(|c| c.short)
        .collect();
    listed(&names)
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
        format!(
            "\nEvery target compared here is met: the estimated cycles are below the best \
             published on the {}.\n",
            named(true)
        )
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
            listed(&others)
        );
    }
    let list: Vec<String> = diffs
        .iter()
        .map(|(m, b, d)| format!("{m} on {b} {d}"))
        .collect();
    format!(
        "\nKiln's outputs on {} against TFLM's, largest difference in steps: {}.\n",
        listed(&others),
        list.join(", ")
    )
}

/// The runs on the other boards that failed and the peer's failed runs, one paragraph each (the
/// main board's are under the int8 table).
fn errors(rows: &[&Row]) -> String {
    let mut s = String::new();
    for r in rows {
        for (board, run) in &r.k.other_boards {
            if let Err(e) = run {
                let _ = writeln!(s, "\n{} on {board}: {e}", r.m.name);
            }
        }
        for (_, run) in &r.peer {
            if let Err(e) = run {
                let _ = writeln!(s, "\n{}: {e}", r.m.name);
            }
        }
    }
    s
}

/// The speed numbers of one row for `bench.tsv`, `model, key, value` lines: per core its
/// instructions and estimated cycles (the main board's instructions are the table's
/// `m4_instructions`), the other boards' image and outputs, the peer's numbers, and the
/// published figure.
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
        s += &cmsis::tsv(r, core);
        s += &wide::tsv(r, core);
        if r.m.kind == Kind::Int8 {
            if let Some(p) = published(core, n) {
                let _ = writeln!(s, "{n}\t{k}_published_ms\t{}", p.ms);
            }
        }
    }
    s
}

#[cfg(test)]
mod tests;
