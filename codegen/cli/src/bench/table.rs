//! The benchmark's Markdown tables, the float models' and the int8 models': how each side was
//! measured, a row per model with its ratios against the targets, and the notes under it.

use super::kiln::ROUNDS;
use super::models::Kind;
use super::refs::{Refs, TFLM_MEASURED};
use super::report::{mark, opt, thousands, Row};
use super::{
    BOARD, TARGET_COMPILE_S, TARGET_VS_ORT, TARGET_VS_ORT_LARGE, TARGET_VS_TFLM, TARGET_VS_TINYGRAD,
};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The float models' table of `rows`, with what was measured above it and the notes and
/// errors below.
pub fn markdown(rows: &[Row], refs: &Refs, runs: usize, beam: usize, board_beam: bool) -> String {
    let mut s = preamble(refs, runs, beam);
    s += &table(rows, FLOAT_LATENCY, float_latency);
    s += &notes(rows, beam, board_beam);
    s += &errors(rows, refs);
    s += &super::memory::markdown(rows);
    s
}

/// The int8 models' table of `rows`, with its caption, notes and errors, then their speed on
/// the four cores ([`super::speed`]) and one model's layers ([`super::layers`]).
pub fn int8_markdown(
    rows: &[Row],
    refs: &Refs,
    runs: usize,
    beam: usize,
    board_beam: bool,
) -> String {
    let mut s = int8_preamble(refs, runs, beam);
    s += &table(rows, INT8_LATENCY, int8_latency);
    s += &int8_notes(rows, refs, beam, board_beam);
    s += &errors(rows, refs);
    s += &super::speed::markdown(rows);
    s += &super::memory::markdown(rows);
    s += &super::layers::markdown(rows);
    s
}

/// A reference's version from the script's `-` lines.
fn version(refs: &Refs, package: &str) -> String {
    refs.get("-")
        .and_then(|m| m.get(&format!("{package}_version")))
        .cloned()
        .unwrap_or_else(|| "not run".into())
}

/// How Kiln's host latency was measured.
fn kiln_host(beam: usize) -> String {
    format!(
        "its C at `{}` through the firmware executor, kernel opts {}",
        kiln_runners::host::HOST_OPT,
        if beam > 0 {
            format!("from a BEAM search of width {beam}")
        } else {
            "hand-coded".to_string()
        }
    )
}

/// What the board columns are.
const BOARD_COLUMNS: &str = "(Cortex-M4F under QEMU), instructions in the kernels per \
     inference, image flash (text + rodata) and static RAM, each against TFLM's image of the same \
     model (Kiln ÷ TFLM).";

/// How each side was measured, and the targets.
fn preamble(refs: &Refs, runs: usize, beam: usize) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Host latency: best of {runs} whole inferences, one thread, timed in {ROUNDS} rounds that \
         alternate Kiln, onnxruntime and tinygrad (Kiln: {}; onnxruntime {}: 1 intra-op thread; \
         tinygrad {}: CLANG, JIT, best of max(5, {runs}/10)). Ratios: Kiln ÷ \
         onnxruntime (target ≤ {TARGET_VS_ORT}, ≤ {TARGET_VS_ORT_LARGE} for the large networks), tinygrad ÷ Kiln (target ≥ \
         {TARGET_VS_TINYGRAD}), arena ÷ TFLM's smallest (tflite-micro {}; target ≤ \
         {TARGET_VS_TFLM}). Board: {BOARD} {BOARD_COLUMNS}\n",
        kiln_host(beam),
        version(refs, "onnxruntime"),
        version(refs, "tinygrad"),
        version(refs, "tflite-micro"),
    );
    s
}

/// How the int8 models were measured.
fn int8_preamble(refs: &Refs, runs: usize, beam: usize) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "int8: the MLPerf Tiny int8 TFLite models, each compiled by Kiln from the .tflite \
         itself and run by every side on the same seeded random int8 input. Host latency: best \
         of {runs} whole inferences, one thread (Kiln: {}; TFLM: tflite-micro {}, its reference \
         kernels through the package's Python interpreter, `invoke()` timed; LiteRT: \
         ai-edge-litert {}, its interpreter with `num_threads=1` and its default CPU kernels \
         (the XNNPACK delegate), `invoke()` timed). Ratios: Kiln ÷ TFLM and Kiln ÷ LiteRT, \
         arena ÷ TFLM's smallest (no targets are set for int8). = TFLM: Kiln's outputs on the \
         host and on the board against TFLM's on that input, ✓ where every element is equal, \
         else the largest difference in steps (LSB). Board: {BOARD} {BOARD_COLUMNS}\n",
        kiln_host(beam),
        version(refs, "tflite-micro"),
        version(refs, "ai-edge-litert"),
    );
    s
}

/// The float table's latency columns, after Kiln's.
const FLOAT_LATENCY: &[&str] = &["onnxruntime µs", "Kiln/ORT", "tinygrad µs", "tinygrad/Kiln"];

/// The int8 table's latency columns, after Kiln's, and its check against TFLM.
const INT8_LATENCY: &[&str] = &["TFLM µs", "Kiln/TFLM", "LiteRT µs", "Kiln/LiteRT", "= TFLM"];

/// The columns after the latencies, in both tables.
const MEMORY_COLUMNS: &[&str] = &[
    "arena B",
    "liveness bound B",
    "TFLM arena B",
    "arena/TFLM",
    "M4 instructions",
    "flash B",
    "TFLM flash B",
    "flash/TFLM",
    "RAM B",
    "TFLM RAM B",
    "RAM/TFLM",
];

/// The header and a row per model: name, compile time and Kiln's latency, the `latency`
/// columns (a row's cells from `cells`), then the memory and board columns.
fn table(rows: &[Row], latency: &[&str], cells: fn(&Row) -> Vec<String>) -> String {
    let header: Vec<&str> = ["model", "compile s", "Kiln µs"]
        .iter()
        .chain(latency)
        .chain(MEMORY_COLUMNS)
        .copied()
        .collect();
    let mut s = markdown_row(&header);
    let align: Vec<&str> = std::iter::once("---")
        .chain(std::iter::repeat_n("---:", header.len() - 1))
        .collect();
    s += &format!("|{}|\n", align.join("|"));
    for r in rows {
        let compile = r.k.compile.as_secs_f64();
        let mut row = vec![
            r.m.name.to_string(),
            format!("{compile:.2}{}", mark(compile <= TARGET_COMPILE_S)),
            format!("{:.1}", r.kiln_us()),
        ];
        row.extend(cells(r));
        row.extend(memory_cells(r));
        s += &markdown_row(&row);
    }
    s
}

/// `| a | b | … |` and a newline.
fn markdown_row<T: AsRef<str>>(cells: &[T]) -> String {
    let cells: Vec<&str> = cells.iter().map(AsRef::as_ref).collect();
    format!("| {} |\n", cells.join(" | "))
}

/// A ratio with two decimals, and with `target` (is the ratio met) its mark.
fn ratio(x: Option<f64>, target: Option<fn(f64) -> bool>) -> String {
    opt(x, |x| {
        format!("{x:.2}×{}", target.map_or("", |met| mark(met(x))))
    })
}

/// A latency in µs with one decimal.
fn micros(x: Option<f64>) -> String {
    opt(x, |x| format!("{x:.1}"))
}

/// A float row's onnxruntime and tinygrad columns.
fn float_latency(r: &Row) -> Vec<String> {
    vec![
        micros(r.ort_us),
        opt(r.vs_ort(), |x| {
            format!("{x:.2}×{}", mark(x <= r.m.target_vs_ort()))
        }),
        micros(r.tinygrad_us),
        ratio(r.vs_tinygrad(), Some(|x| x >= TARGET_VS_TINYGRAD)),
    ]
}

/// An int8 row's TFLM and LiteRT columns, and how far Kiln's outputs are from TFLM's.
fn int8_latency(r: &Row) -> Vec<String> {
    vec![
        micros(r.tflm_us),
        ratio(r.kiln_over(r.tflm_us), None),
        micros(r.litert_us),
        ratio(r.kiln_over(r.litert_us), None),
        opt(r.diff_vs_tflm(), |d| match d {
            0.0 => "✓".to_string(),
            d => format!("{d} LSB"),
        }),
    ]
}

/// The arena, the board's numbers and TFLM's beside them. The arena target is the float
/// models'.
fn memory_cells(r: &Row) -> Vec<String> {
    let k = &r.k;
    let arena_target: Option<fn(f64) -> bool> = match r.m.kind {
        Kind::Float => Some(|x| x <= TARGET_VS_TFLM),
        Kind::Int8 => None,
    };
    vec![
        thousands(k.arena as u64),
        thousands(k.bound as u64),
        opt(r.tflm, |(t, src)| format!("{}{src}", thousands(t as u64))),
        ratio(r.vs_tflm(), arena_target),
        opt(k.board.as_ref(), |b| thousands(b.instructions)),
        opt(k.board.as_ref(), |b| thousands(b.flash as u64)),
        opt(r.tflm_image.as_ref(), |t| thousands(t.flash as u64)),
        opt(r.image_vs_tflm(), |(f, _)| format!("{f:.2}×")),
        opt(k.board.as_ref(), |b| thousands(b.ram as u64)),
        opt(r.tflm_image.as_ref(), |t| thousands(t.ram as u64)),
        opt(r.image_vs_tflm(), |(_, m)| format!("{m:.2}×")),
    ]
}

/// The note on the published TFLM arenas, where a row has one.
fn published_note(rows: &[Row]) -> String {
    if rows
        .iter()
        .any(|r| r.tflm.is_some_and(|(_, src)| !src.is_empty()))
    {
        "\nTFLM arenas marked * are the published measurements (the Python package could not be \
         run here).\n"
            .to_string()
    } else {
        String::new()
    }
}

/// Which opts the board's plain C kernels ran.
fn board_opts(beam: usize, board_beam: bool) -> String {
    if board_beam && beam > 0 {
        format!("opts from a BEAM search of width {beam} by the board's estimated cycles")
    } else {
        "the hand-coded opts".to_string()
    }
}

/// The notes under the table: where the published arenas, the models and the images come
/// from, and which opts the board ran.
fn notes(rows: &[Row], beam: usize, board_beam: bool) -> String {
    let mut s = published_note(rows);
    let _ = writeln!(
        s,
        "\nkws and str_ww have no float TFLite model that TFLM runs. resnet_block is \
         `tests/models/residual.onnx` (conv-BN-ReLU-conv-BN + skip, pools). The host runs its \
         kernels over float vectors of 8 lanes (16 where the CPU has AVX-512 and the search \
         chose them); the board, which has none, runs plain C kernels with {}.",
        board_opts(beam, board_beam)
    );
    if rows.iter().any(|r| r.m.large) {
        let _ = writeln!(
            s,
            "\nresnet50 and mobilenet are ImageNet-size networks, 224×224, with the layouts of \
             ResNet-50 v1.5 and MobileNet v1 and seeded random weights (`scripts/make_large_models.py`, \
             generated on first use into `target/bench-models/`): every side times them over \
             a twentieth of the runs (at least 5), Kiln with the hand-coded opts, and no \
             board holds them."
        );
    }
    let _ = writeln!(s, "\n{}", tflm_image_note(rows));
    s
}

/// The board's kernel target, where it is not plain C: ` (on the board for its kernel target,
/// `c-dsp`: packed int8 dot products)`.
fn board_target() -> String {
    let Ok(t) = crate::run::target_for(BOARD) else {
        return String::new();
    };
    match t.packed_dot {
        true => format!(
            " (on the board for its kernel target, `{}`: packed int8 dot products with SMLAD)",
            t.name
        ),
        false => String::new(),
    }
}

/// The notes under the int8 table: the published arenas, the board's opts, LiteRT's outputs
/// against TFLM's, and TFLM's images.
fn int8_notes(rows: &[Row], refs: &Refs, beam: usize, board_beam: bool) -> String {
    let mut s = published_note(rows);
    let litert: Vec<String> = rows
        .iter()
        .filter_map(|r| {
            let d = super::refs::num(refs, r.m.name, "litert_max_lsb_diff")?;
            Some(format!("{} {d}", r.m.name))
        })
        .collect();
    let _ = writeln!(
        s,
        "\nThe int8 kernels are integer C on the host and the board alike{}; the board runs them \
         with {}.{}",
        board_target(),
        board_opts(beam, board_beam),
        if litert.is_empty() {
            String::new()
        } else {
            format!(
                " LiteRT's outputs against TFLM's, largest difference in steps: {} (its \
                 optimized kernels round differently).",
                litert.join(", ")
            )
        }
    );
    let _ = writeln!(s, "\n{}", tflm_image_note(rows));
    s
}

/// The board's and the references' errors, one paragraph each.
fn errors(rows: &[Row], refs: &Refs) -> String {
    let mut s = String::new();
    for r in rows {
        if let Some(e) = &r.k.board_error {
            let _ = writeln!(s, "\n{} on {BOARD}: {e}", r.m.name);
        }
        if let Some(errs) = refs.get(r.m.name) {
            for (key, val) in errs.iter().filter(|(k, _)| k.ends_with("_error")) {
                let _ = writeln!(s, "\n{} {key}: {val}", r.m.name);
            }
        }
    }
    s
}

/// The note under the table on where TFLM's image numbers come from, per source.
fn tflm_image_note(rows: &[Row]) -> String {
    let mut by_source: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    let mut without = Vec::new();
    for r in rows {
        match &r.tflm_image {
            Some(t) => by_source.entry(&t.source).or_default().push(r.m.name),
            None => without.push(r.m.name),
        }
    }
    let mut parts: Vec<String> = by_source
        .iter()
        .map(|(src, models)| {
            let what = if *src == "measured" {
                TFLM_MEASURED
            } else {
                src
            };
            format!("{}: {what}", models.join(", "))
        })
        .collect();
    if !without.is_empty() {
        parts.push(format!("none for {}", without.join(", ")));
    }
    format!(
        "TFLM's image on {BOARD} (flash and RAM counted as Kiln's; `scripts/tflm_sizes.tsv`) — {}.",
        parts.join("; ")
    )
}

#[cfg(test)]
mod tests;
