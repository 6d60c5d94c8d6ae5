//! The speed table's trade of flash for cycles: each int8 model again with its dot products'
//! weights widened to int16 pairs in flash (`--wide-weights`, the target `c-dsp-wide`), on the
//! cores with packed dot products: its estimated cycles and flash against the int8 weights'
//! run, the best published result and TFLM + CMSIS-NN's image.

use super::{millions, ms, published, ratio_cell, SpeedCore, CORES};
use crate::bench::kiln::BoardNumbers;
use crate::bench::report::{mark, opt, thousands, Row};
use crate::bench::TARGET_VS_CMSIS_NN;
use std::fmt::Write as _;

/// The boards of the speed table whose kernels have packed dot products: the int8 models run
/// there once more with `--wide-weights`.
pub fn wide_boards() -> Vec<&'static str> {
    CORES
        .iter()
        .filter(|c| crate::run::target_for(c.board).is_ok_and(|t| t.packed_dot))
        .map(|c| c.board)
        .collect()
}

/// The widened run of `r` on `core` and the int8 one beside it, where both ran.
fn runs<'a>(r: &'a Row, core: &SpeedCore) -> Option<(&'a BoardNumbers, &'a BoardNumbers)> {
    Some((r.k.wide_on(core.board)?.ok()?, r.k.on(core.board)?.ok()?))
}

/// The table, its caption and the targets it meets; nothing where no widened run was made.
pub(super) fn markdown(rows: &[&Row]) -> String {
    let ran = CORES
        .iter()
        .any(|c| rows.iter().any(|r| r.k.wide_on(c.board).is_some()));
    if !ran {
        return String::new();
    }
    let mut s = CAPTION.to_string();
    s += "| core | model | est. cycles | ÷ int8 weights | Kiln/published | Kiln ÷ CMSIS-NN | \
          flash B | extra flash B | flash ÷ CMSIS-NN |\n";
    s += "|---|---|---:|---:|---:|---:|---:|---:|---:|\n";
    let mut met = Vec::new();
    for core in &CORES {
        for r in rows {
            if let Some((line, now_met)) = table_row(r, core) {
                s += &line;
                met.extend(now_met);
            }
        }
    }
    s += &match met.is_empty() {
        true => "\nNo published target is met with widened weights that is missed without.\n"
            .to_string(),
        false => format!(
            "\nPublished targets met with widened weights and missed without: {}.\n",
            met.join(", ")
        ),
    };
    s += &failures(rows);
    s
}

const CAPTION: &str = "\nWith `--wide-weights` (the target `c-dsp-wide`): the same models \
    with the int8 weights of their packed dot products stored in flash widened to int16, each four \
    in the order `SXTB16` unpacks a word of activations, so the inner loop loads a weight pair \
    ready for `SMLAD` instead of unpacking it. Est. cycles as above, ÷ int8 weights against the \
    table above, Kiln/published and Kiln ÷ CMSIS-NN as there; flash: the image's, extra flash: \
    its flash minus the image's with int8 weights, flash ÷ CMSIS-NN against the peer's image \
    (the M4 and the M33). Every output equal to TFLM's, as above, unless said below.\n\n";

/// The line of `r` on `core` and, where the published target is met only with widened
/// weights, that sentence's item.
fn table_row(r: &Row, core: &SpeedCore) -> Option<(String, Option<String>)> {
    let (wide, narrow) = runs(r, core)?;
    let cycles = wide.cycles;
    let published = published(core, r.m.name).map(|p| p.cycles(core));
    let vs_published = cycles.zip(published).map(|(c, p)| c as f64 / p);
    let peer = super::cmsis::peer_on(r, core).and_then(Result::ok);
    let vs_peer = cycles.zip(peer).map(|(c, p)| c as f64 / p.cycles as f64);
    let line = format!(
        "| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
        core.label(),
        r.m.name,
        opt(cycles, thousands),
        opt(cycles.zip(narrow.cycles), |(w, n)| format!(
            "{:.3}×",
            w as f64 / n as f64
        )),
        ratio_cell(vs_published, core),
        opt(vs_peer, |x| format!(
            "{x:.2}×{}",
            mark(x <= TARGET_VS_CMSIS_NN)
        )),
        thousands(wide.flash as u64),
        thousands(wide.flash.saturating_sub(narrow.flash) as u64),
        opt(peer, |p| format!(
            "{:.2}×",
            wide.flash as f64 / p.flash as f64
        )),
    );
    let narrow_missed = narrow
        .cycles
        .zip(published)
        .is_some_and(|(n, p)| n as f64 >= p);
    let now_met = match (core.target, vs_published, cycles) {
        (true, Some(x), Some(c)) if x < 1.0 && narrow_missed => Some(format!(
            "{} on the {} ({} cycles, {:.2} ms, for {} B more flash)",
            r.m.name,
            core.short,
            millions(c as f64),
            ms(c, core.mhz),
            thousands(wide.flash.saturating_sub(narrow.flash) as u64)
        )),
        _ => None,
    };
    Some((line, now_met))
}

/// The widened runs that failed or whose outputs differ from TFLM's, a sentence each.
fn failures(rows: &[&Row]) -> String {
    let mut s = String::new();
    for r in rows {
        for (board, run) in &r.k.wide {
            match run {
                Err(e) => {
                    let _ = writeln!(s, "\n{} on {board} with widened weights: {e}", r.m.name);
                }
                Ok(b) if b.diff.is_some_and(|d| d != 0.0) => {
                    let d = b.diff.unwrap_or_default();
                    let _ = writeln!(
                        s,
                        "\n{} on {board} with widened weights: outputs {d} steps from TFLM's.",
                        r.m.name
                    );
                }
                Ok(_) => {}
            }
        }
    }
    s
}

/// The widened run's numbers of `r` on `core` for `bench.tsv`: `<core>_wide_cycles_est` and
/// `<core>_wide_flash`.
pub(super) fn tsv(r: &Row, core: &SpeedCore) -> String {
    let mut s = String::new();
    if let Some(Ok(b)) = r.k.wide_on(core.board) {
        let (n, k) = (r.m.name, core.key);
        if let Some(c) = b.cycles {
            let _ = writeln!(s, "{n}\t{k}_wide_cycles_est\t{c}");
        }
        let _ = writeln!(s, "{n}\t{k}_wide_flash\t{}", b.flash);
    }
    s
}
