//! The best published MLPerf Tiny results the speed table holds Kiln's estimate against, who
//! published them, and what the estimate is.

use super::SpeedCore;

/// One published MLPerf Tiny latency: a model on a core class at its clock.
pub struct Published {
    /// [`SpeedCore::short`](super::SpeedCore::short).
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
/// The streaming wake word's figures: its busy time per window, not one inference.
const ST_SWW: &str = "STMicroelectronics, X-CUBE-AI 10.2 on NUCLEO-L4R5ZI-P (M4), \
     NUCLEO-U575ZI-Q (M33) and NUCLEO-H7A3ZI-Q (M7), v1.3: the busy time per 32 ms window of \
     audio (duty cycle × period: 0.55914 × 31.989 ms, 0.36267 × 32.069 ms and 0.13262 × 32.055 \
     ms), which also computes the window's features on the board, where Kiln's figure is the \
     model alone";

/// Helium's best: TFLM with CMSIS-NN's Helium kernels on a Cortex-M85.
const RENESAS_RA8D1: &str = "Renesas, TFLM with CMSIS-NN's Helium kernels on EK-RA8D1 \
     (Cortex-M85 @ 480 MHz), v1.2";

/// The best published MLPerf Tiny closed-division latency per core class (at the clock of
/// [`CORES`](super::CORES)) and model, in ms. Source: [`PUBLISHED_SOURCE`].
pub const PUBLISHED: [Published; 19] = [
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
    pub_ms("M4", "str_ww_int8", 17.886, Some(ST_SWW)),
    pub_ms("M33", "str_ww_int8", 11.631, Some(ST_SWW)),
    pub_ms("M7", "str_ww_int8", 4.251, Some(ST_SWW)),
    pub_ms("M55", "kws_int8", 3.47, Some(RENESAS_RA8D1)),
    pub_ms("M55", "vww_int8", 13.39, Some(RENESAS_RA8D1)),
    pub_ms("M55", "ic_int8", 8.48, Some(RENESAS_RA8D1)),
    pub_ms("M55", "ad_int8", 0.531, Some(RENESAS_RA8D1)),
];

impl Published {
    /// Its latency in cycles at `core`'s clock.
    pub fn cycles(&self, core: &SpeedCore) -> f64 {
        self.ms * core.mhz * 1000.0
    }
}

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
pub(super) const ESTIMATE: &str = "The cycles are an estimate, not a measurement: the QEMU plugin \
     (`boards/qemu-plugin/insn.c`) classifies every Thumb-2 instruction the kernels execute and \
     gives it the core's published timing, the Cortex-M4 TRM's table 3-1 (with its load/store \
     pipelining: neighbouring single loads and stores take 1 cycle instead of 2; a taken branch's \
     pipeline refill P = 1; divisions at their worst case, 12). The Cortex-M33 has no table of its \
     own and gets the M4's. The Cortex-M7 has none either: its instructions issue in order, up to \
     two a cycle, by the pairing rules and latencies of `boards/qemu-plugin/dual_issue.c` (from \
     ARM's description of the pipeline and published timings of the core; not two multiplies, \
     two stores or two shifts together, a DSP instruction only first, a load's result a cycle \
     late), without the branch predictor. The Cortex-M55 gets the M4's figures for its scalar \
     instructions and, for Helium's, two beats of four a cycle (2 cycles an instruction, 1 where \
     a vector load or store and vector arithmetic overlap), without the loop cache that makes a \
     low-overhead loop's LE free; its published figures are a Cortex-M85's. It leaves out \
     flash wait states, bus contention and \
     caches. The published figures are measured on real boards, from their flash at their clock, \
     so each ratio compares an estimate with a measurement.";

/// The published latency of `model` on `core`, where there is one.
pub fn published(core: &SpeedCore, model: &str) -> Option<&'static Published> {
    PUBLISHED
        .iter()
        .find(|p| p.core == core.short && p.model == model)
}

/// A published latency as the results give it: one decimal from 10 ms, else two.
pub(super) fn published_ms(ms: f64) -> String {
    match ms < 10.0 {
        true => format!("{ms:.2}"),
        false => format!("{ms:.1}"),
    }
}

/// Who the published figures are from, and the M4's earlier results.
pub(super) fn published_note() -> String {
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
