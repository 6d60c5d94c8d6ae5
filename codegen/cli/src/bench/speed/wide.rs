//! The speed table's trades of memory for cycles: each int8 model again with its dot products'
//! operands widened to int16 ([`Widening`]): the weights in flash (`--wide-weights`, the
//! target `c-dsp-wide`), the activations in the arena (`--wide-activations`, `c-dsp-i16`), or
//! both (`c-dsp-wide-i16`), on the cores with packed dot products: its estimated cycles, flash
//! and RAM against the int8 run's, the best published result and TFLM + CMSIS-NN's image.

use super::{millions, ms, published, ratio_cell, SpeedCore, CORES};
use crate::bench::kiln::{BoardNumbers, Widening};
use crate::bench::report::{mark, opt, thousands, Row};
use crate::bench::TARGET_VS_CMSIS_NN;
use std::fmt::Write as _;

/// The boards of the speed table whose kernels have packed dot products: the int8 models run
/// there once more per [`Widening`].
pub fn wide_boards() -> Vec<&'static str> {
    CORES
        .iter()
        .filter(|c| crate::run::target_for(c.board).is_ok_and(|t| t.with_wide_weights().is_some()))
        .map(|c| c.board)
        .collect()
}

/// The run of `r` on `core` widened by `w`, and the int8 one beside it, where both ran.
fn runs<'a>(
    r: &'a Row,
    w: Widening,
    core: &SpeedCore,
) -> Option<(&'a BoardNumbers, &'a BoardNumbers)> {
    Some((r.k.wide_on(w, core.board)?.ok()?, r.k.on(core.board)?.ok()?))
}

/// The table, its caption and the targets it meets; nothing where no widened run was made.
pub(super) fn markdown(rows: &[&Row]) -> String {
    if rows.iter().all(|r| r.k.wide.is_empty()) {
        return String::new();
    }
    let mut s = CAPTION.to_string();
    s += "| core | model | widened | est. cycles | ÷ int8 | Kiln/published | Kiln ÷ CMSIS-NN | \
          flash B | extra flash B | RAM B | extra RAM B |\n";
    s += "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n";
    let mut met = Vec::new();
    for core in &CORES {
        for r in rows {
            for w in Widening::ALL {
                if let Some((line, now_met)) = table_row(r, w, core) {
                    s += &line;
                    met.extend(now_met);
                }
            }
        }
    }
    s += &match met.is_empty() {
        true => "\nNo published target is met widened that is missed without.\n".to_string(),
        false => format!(
            "\nPublished targets met widened and missed without: {}.\n",
            met.join("; ")
        ),
    };
    s += &failures(rows);
    s
}

const CAPTION: &str = "\nWidened operands: the same models with the int8 operands of their \
    packed dot products stored widened to int16, so the inner loop loads pairs ready for `SMLAD` \
    instead of unpacking words with `SXTB16`: the weights in flash (`--wide-weights`, the target \
    `c-dsp-wide`: each four in the order `SXTB16` unpacks a word of activations), the \
    activations that the dot products read in the arena (`--wide-activations`, `c-dsp-i16`: \
    each written widened once by the kernel that computes it; the weights beside them stored \
    with each four in that order, as many bytes), or both (`c-dsp-wide-i16`: nothing unpacked). \
    Est. cycles as above, ÷ int8 against the table above, Kiln/published and Kiln ÷ CMSIS-NN as \
    there; flash and RAM: the image's (RAM: the arena, the stack and the runtime's statics), \
    extra: over the image's without widening. Every output equal to TFLM's, as above, unless \
    said below.\n\n";

/// The line of `r` widened by `w` on `core` and, where the published target is met only
/// widened, that sentence's item.
fn table_row(r: &Row, w: Widening, core: &SpeedCore) -> Option<(String, Option<String>)> {
    let (wide, narrow) = runs(r, w, core)?;
    let cycles = wide.cycles;
    let published = published(core, r.m.name).map(|p| p.cycles(core));
    let vs_published = cycles.zip(published).map(|(c, p)| c as f64 / p);
    let peer = super::cmsis::peer_on(r, core).and_then(Result::ok);
    let vs_peer = cycles.zip(peer).map(|(c, p)| c as f64 / p.cycles as f64);
    let extra = |a: usize, b: usize| thousands(a.saturating_sub(b) as u64);
    let line = format!(
        "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
        core.label(),
        r.m.name,
        w.label(),
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
        extra(wide.flash, narrow.flash),
        thousands(wide.ram as u64),
        extra(wide.ram, narrow.ram),
    );
    let narrow_missed = narrow
        .cycles
        .zip(published)
        .is_some_and(|(n, p)| n as f64 >= p);
    let now_met = match (core.target, vs_published, cycles) {
        (true, Some(x), Some(c)) if x < 1.0 && narrow_missed => Some(format!(
            "{} on the {} with {} widened ({} cycles, {:.2} ms, for {} B more flash and {} B \
             more RAM)",
            r.m.name,
            core.short,
            w.label(),
            millions(c as f64),
            ms(c, core.mhz),
            extra(wide.flash, narrow.flash),
            extra(wide.ram, narrow.ram),
        )),
        _ => None,
    };
    Some((line, now_met))
}

/// The widened runs that failed or whose outputs differ from TFLM's, a sentence each.
fn failures(rows: &[&Row]) -> String {
    let mut s = String::new();
    for r in rows {
        for (w, board, run) in &r.k.wide {
            let what = format!("{} on {board} with {} widened", r.m.name, w.label());
            match run {
                Err(e) => {
                    let _ = writeln!(s, "\n{what}: {e}");
                }
                Ok(b) if b.diff.is_some_and(|d| d != 0.0) => {
                    let d = b.diff.unwrap_or_default();
                    let _ = writeln!(s, "\n{what}: outputs {d} steps from TFLM's.");
                }
                Ok(_) => {}
            }
        }
    }
    s
}

/// The widened runs' numbers of `r` on `core` for `bench.tsv`: `<core>_<key>_cycles_est`,
/// `<core>_<key>_flash` and `<core>_<key>_ram` for each widening's
/// [`key`](Widening::key) (`wide`, `i16`, `wide_i16`).
pub(super) fn tsv(r: &Row, core: &SpeedCore) -> String {
    let mut s = String::new();
    for w in Widening::ALL {
        if let Some(Ok(b)) = r.k.wide_on(w, core.board) {
            let (n, k, x) = (r.m.name, core.key, w.key());
            if let Some(c) = b.cycles {
                let _ = writeln!(s, "{n}\t{k}_{x}_cycles_est\t{c}");
            }
            let _ = writeln!(s, "{n}\t{k}_{x}_flash\t{}", b.flash);
            let _ = writeln!(s, "{n}\t{k}_{x}_ram\t{}", b.ram);
        }
    }
    s
}
