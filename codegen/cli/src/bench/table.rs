//! The benchmark's Markdown table: how each side was measured, a row per model with its
//! ratios against the targets, and the notes under it.

use super::refs::{Refs, TFLM_MEASURED};
use super::report::{mark, opt, thousands, Row};
use super::{BOARD, TARGET_COMPILE_S, TARGET_VS_ORT, TARGET_VS_TFLM, TARGET_VS_TINYGRAD};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The table of `rows`, with what was measured above it and the notes and errors below.
pub fn markdown(rows: &[Row], refs: &Refs, runs: usize, beam: usize, board_beam: bool) -> String {
    let mut s = preamble(refs, runs, beam);
    s += &table(rows);
    s += &notes(rows, beam, board_beam);
    s += &errors(rows, refs);
    s
}

/// How each side was measured, and the targets.
fn preamble(refs: &Refs, runs: usize, beam: usize) -> String {
    let mut s = String::new();
    let v = |k: &str| {
        refs.get("-")
            .and_then(|m| m.get(k))
            .cloned()
            .unwrap_or_else(|| "not run".into())
    };
    let _ = writeln!(
        s,
        "Host latency: best of {runs} whole inferences, one thread (Kiln: its C at `{}` through \
         the firmware executor, kernel opts {}; onnxruntime {}: 1 intra-op thread; tinygrad {}: CLANG, JIT, best of \
         max(5, {runs}/10)). Ratios: Kiln ÷ onnxruntime (target ≤ {TARGET_VS_ORT}), tinygrad ÷ \
         Kiln (target ≥ {TARGET_VS_TINYGRAD}), arena ÷ TFLM's smallest (tflite-micro {}; target \
         ≤ {TARGET_VS_TFLM}). Board: {BOARD} (Cortex-M4F under QEMU), instructions in the \
         kernels per inference, image flash (text + rodata) and static RAM, each against TFLM's \
         image of the same model (Kiln ÷ TFLM).\n",
        kiln_runners::host::HOST_OPT,
        if beam > 0 {
            format!("from a BEAM search of width {beam}")
        } else {
            "hand-coded".to_string()
        },
        v("onnxruntime_version"),
        v("tinygrad_version"),
        v("tflite-micro_version"),
    );
    s
}

/// The header and a row per model.
fn table(rows: &[Row]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "| model | compile s | Kiln µs | onnxruntime µs | Kiln/ORT | tinygrad µs | tinygrad/Kiln \
         | arena B | liveness bound B | TFLM arena B | arena/TFLM | M4 instructions | flash B \
         | TFLM flash B | flash/TFLM | RAM B | TFLM RAM B | RAM/TFLM |"
    );
    let _ = writeln!(
        s,
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for r in rows {
        s += &table_row(r);
    }
    s
}

/// One model's line of the table.
fn table_row(r: &Row) -> String {
    let mut s = String::new();
    let k = &r.k;
    let compile = k.compile.as_secs_f64();
    let _ = writeln!(
            s,
            "| {} | {:.2}{} | {:.1} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.m.name,
            compile,
            mark(compile <= TARGET_COMPILE_S),
            r.kiln_us(),
            opt(r.ort_us, |x| format!("{x:.1}")),
            opt(r.vs_ort(), |x| format!(
                "{x:.2}×{}",
                mark(x <= TARGET_VS_ORT)
            )),
            opt(r.tinygrad_us, |x| format!("{x:.1}")),
            opt(r.vs_tinygrad(), |x| format!(
                "{x:.2}×{}",
                mark(x >= TARGET_VS_TINYGRAD)
            )),
            thousands(k.arena as u64),
            thousands(k.bound as u64),
            opt(r.tflm, |(t, src)| format!("{}{src}", thousands(t as u64))),
            opt(r.vs_tflm(), |x| format!(
                "{x:.2}×{}",
                mark(x <= TARGET_VS_TFLM)
            )),
            opt(k.board.as_ref(), |b| thousands(b.instructions)),
            opt(k.board.as_ref(), |b| thousands(b.flash as u64)),
            opt(r.tflm_image.as_ref(), |t| thousands(t.flash as u64)),
            opt(r.image_vs_tflm(), |(f, _)| format!("{f:.2}×")),
            opt(k.board.as_ref(), |b| thousands(b.ram as u64)),
            opt(r.tflm_image.as_ref(), |t| thousands(t.ram as u64)),
            opt(r.image_vs_tflm(), |(_, m)| format!("{m:.2}×")),
        );
    s
}

/// The notes under the table: where the published arenas, the models and the images come
/// from, and which opts the board ran.
fn notes(rows: &[Row], beam: usize, board_beam: bool) -> String {
    let mut s = String::new();
    if rows
        .iter()
        .any(|r| r.tflm.is_some_and(|(_, src)| !src.is_empty()))
    {
        let _ = writeln!(
            s,
            "\nTFLM arenas marked * are the published measurements (the Python package could \
             not be run here)."
        );
    }
    let _ = writeln!(
        s,
        "\nkws and str_ww have no float TFLite model that TFLM runs. resnet_block is \
         `tests/models/residual.onnx` (conv-BN-ReLU-conv-BN + skip, pools). The host runs its \
         kernels over float vectors of 8 lanes (16 where the CPU has AVX-512 and the search \
         chose them); the board, which has none, runs plain C kernels \
         with {}.",
        if board_beam && beam > 0 {
            format!("opts from a BEAM search of width {beam} by the board's instructions")
        } else {
            "the hand-coded opts".to_string()
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
mod tests {
    use super::*;
    use crate::bench::kiln::{BoardNumbers, KilnNumbers};
    use crate::bench::models::BenchModel;
    use crate::bench::refs::TflmImage;
    use crate::bench::report::tsv;
    use std::path::PathBuf;

    #[test]
    fn compares_the_image_with_tflm_and_says_where_its_numbers_come_from() {
        let m = |name| BenchModel {
            name,
            onnx: PathBuf::new(),
            tflite: None,
            published_tflm: None,
        };
        let (ad, kws) = (m("ad"), m("kws"));
        let row = |m, image: Option<TflmImage>| Row {
            m,
            k: KilnNumbers {
                board: Some(BoardNumbers {
                    instructions: 1,
                    flash: 1_000,
                    ram: 300,
                }),
                ..KilnNumbers::default()
            },
            ort_us: None,
            tinygrad_us: None,
            tflm: None,
            tflm_image: image,
        };
        let image = TflmImage {
            flash: 2_000,
            ram: 1_200,
            source: "measured".into(),
        };
        let rows = [row(&ad, Some(image)), row(&kws, None)];
        assert_eq!(rows[0].image_vs_tflm(), Some((0.5, 0.25)));
        assert_eq!(rows[1].image_vs_tflm(), None);
        let md = markdown(&rows, &Refs::new(), 1, 0, false);
        assert!(
            md.contains("| 1,000 | 2,000 | 0.50× | 300 | 1,200 | 0.25× |"),
            "{md}"
        );
        assert!(md.contains("| 1,000 | — | — | 300 | — | — |"), "{md}");
        let note = tflm_image_note(&rows);
        assert!(
            note.contains(&format!("ad: {TFLM_MEASURED}; none for kws.")),
            "{note}"
        );
        assert!(tsv(&rows).contains("ad\ttflm_flash\t2000\nad\ttflm_ram\t1200\n"));
    }
}
