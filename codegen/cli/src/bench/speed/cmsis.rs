//! The speed table's peer columns: TFLM with CMSIS-NN's optimized kernels on the same emulated
//! board, under the same QEMU command line and plugin ([`crate::bench::peer`]), its estimated
//! cycles, Kiln's ÷ its against [`TARGET_VS_CMSIS_NN`], and its flash in a note.

use super::{SpeedCore, CORES};
use crate::bench::peer::{PeerNumbers, DIR};
use crate::bench::report::{listed, mark, opt, thousands, Row};
use crate::bench::{BOARD, TARGET_VS_CMSIS_NN};
use std::fmt::Write as _;

/// What the peer is and how it ran.
const PEER: &str = "TensorFlow Lite Micro with CMSIS-NN's optimized kernels (tflite-micro \
     90b983c2, CMSIS-NN 4ab83cc3; TFLM's release flags, arm-none-eabi-gcc 12.2.1)";

/// The peer's numbers for `r` on `core`'s board: none where it has no image for that board or
/// did not run.
pub(super) fn peer_on<'a>(
    r: &'a Row,
    core: &SpeedCore,
) -> Option<Result<&'a PeerNumbers, &'a str>> {
    let (_, run) = r.peer.iter().find(|(b, _)| *b == core.board)?;
    Some(run.as_ref().map_err(String::as_str))
}

/// Kiln's estimated cycles ÷ the peer's on `core`, where both ran.
fn ratio(r: &Row, core: &SpeedCore) -> Option<f64> {
    let kiln = r.k.on(core.board)?.ok()?.cycles?;
    let peer = peer_on(r, core)?.ok()?;
    Some(kiln as f64 / peer.cycles as f64)
}

/// The two cells of `r` on `core`: the peer's cycles (`failed` where its run failed) and
/// Kiln ÷ the peer's, ✓ where at most [`TARGET_VS_CMSIS_NN`].
pub(super) fn cells(r: &Row, core: &SpeedCore) -> [String; 2] {
    let cycles = match peer_on(r, core) {
        None => "—".to_string(),
        Some(Err(_)) => "failed".to_string(),
        Some(Ok(p)) => thousands(p.cycles),
    };
    let ratio = opt(ratio(r, core), |x| {
        format!("{x:.2}×{}", mark(x <= TARGET_VS_CMSIS_NN))
    });
    [cycles, ratio]
}

/// What the columns are, where the target stands, and the images' flash.
pub(super) fn note(rows: &[&Row]) -> String {
    let ran: Vec<&SpeedCore> = (CORES.iter())
        .filter(|c| rows.iter().any(|r| peer_on(r, c).is_some()))
        .collect();
    if ran.is_empty() {
        return String::new();
    }
    let names: Vec<&str> = ran.iter().map(|c| c.short).collect();
    let without: Vec<&str> = (CORES.iter())
        .filter(|c| c.peer.is_none())
        .map(|c| c.short)
        .collect();
    let mut s = format!(
        "\nTFLM + CMSIS-NN: {PEER}, each model's image (`{DIR}/`) run on the {} boards under the \
         same QEMU command line and plugin as Kiln's kernels: the estimated cycles of its first \
         `Invoke()` (the interpreter with its kernels, where Kiln's figure is its kernels), in a \
         run whose outputs on all five of TFLM's reference vectors equal TFLM's reference \
         (the image's own check; a run that fails it is `failed`); no image for the {}. Kiln ÷ \
         CMSIS-NN: target ≤ {TARGET_VS_CMSIS_NN}× on every model, ✓ where met, ✗ where missed",
        listed(&names),
        listed(&without),
    );
    s += &standing(rows, &ran);
    s += &flash_note(rows);
    s.push('\n');
    s
}

/// `; met on 1 of 8 (…): Kiln takes A–B× CMSIS-NN's cycles.` over the rows compared.
fn standing(rows: &[&Row], cores: &[&SpeedCore]) -> String {
    let mut met = Vec::new();
    let mut ratios = Vec::new();
    for core in cores {
        for r in rows {
            if let Some(x) = ratio(r, core) {
                ratios.push(x);
                if x <= TARGET_VS_CMSIS_NN {
                    met.push(format!("{} on the {}", r.m.name, core.short));
                }
            }
        }
    }
    let (Some(lo), Some(hi)) = (
        ratios.iter().copied().reduce(f64::min),
        ratios.iter().copied().reduce(f64::max),
    ) else {
        return ".".to_string();
    };
    let met = match met.is_empty() {
        true => format!("met on none of {}", ratios.len()),
        false => format!(
            "met on {} of {} ({})",
            met.len(),
            ratios.len(),
            met.join(", ")
        ),
    };
    format!("; {met}: Kiln takes {lo:.2}–{hi:.2}× CMSIS-NN's cycles.")
}

/// The images' flash against Kiln's on the main board, where both were measured.
fn flash_note(rows: &[&Row]) -> String {
    let core = &CORES[0];
    let list: Vec<String> = (rows.iter())
        .filter_map(|r| {
            let kiln = r.k.on(core.board)?.ok()?.flash;
            let peer = peer_on(r, core)?.ok()?.flash;
            Some(format!(
                "{} {:.2}× ({} B against {} B)",
                r.m.name,
                kiln as f64 / peer as f64,
                thousands(kiln as u64),
                thousands(peer as u64)
            ))
        })
        .collect();
    if list.is_empty() {
        return String::new();
    }
    format!(
        " Flash on {BOARD} (text + rodata, counted as Kiln's, the images' reference vectors left \
         out), Kiln ÷ CMSIS-NN: {}.",
        list.join(", ")
    )
}

/// The peer's numbers of `r` on `core` for `bench.tsv`: `<core>_cmsis_nn_instructions`,
/// `_cycles_est` and `_flash`.
pub(super) fn tsv(r: &Row, core: &SpeedCore) -> String {
    let mut s = String::new();
    if let Some(Ok(p)) = peer_on(r, core) {
        let (n, k) = (r.m.name, core.key);
        let _ = writeln!(s, "{n}\t{k}_cmsis_nn_instructions\t{}", p.instructions);
        let _ = writeln!(s, "{n}\t{k}_cmsis_nn_cycles_est\t{}", p.cycles);
        let _ = writeln!(s, "{n}\t{k}_cmsis_nn_flash\t{}", p.flash);
    }
    s
}
