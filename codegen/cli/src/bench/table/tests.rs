use super::*;
use crate::bench::kiln::{BoardNumbers, KilnNumbers};
use crate::bench::models::BenchModel;
use crate::bench::refs::{parse_refs, TflmImage};
use crate::bench::report::tsv;
use std::time::Duration;

/// A row of `m` whose board image is 1,000 B of flash and 300 B of RAM.
fn row<'a>(m: &'a BenchModel, image: Option<TflmImage>) -> Row<'a> {
    let k = KilnNumbers {
        board: Some(BoardNumbers {
            instructions: 1,
            cycles: None,
            flash: 1_000,
            ram: 300,
            diff: None,
            ..BoardNumbers::default()
        }),
        ..KilnNumbers::default()
    };
    Row {
        tflm_image: image,
        ..Row::of_kiln(m, k)
    }
}

#[test]
fn compares_the_image_with_tflm_and_says_where_its_numbers_come_from() {
    let (ad, kws) = (
        BenchModel::named("ad", Kind::Float),
        BenchModel::named("kws", Kind::Float),
    );
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

#[test]
fn a_float_row_has_the_onnxruntime_and_tinygrad_columns_and_their_marks() {
    let ic = BenchModel::named("ic", Kind::Float);
    let mut r = row(&ic, None);
    r.k.compile = Duration::from_millis(30);
    r.k.host_best = Duration::from_micros(100);
    (r.k.arena, r.k.bound) = (64_000, 64_000);
    (r.ort_us, r.tinygrad_us) = (Some(50.0), Some(600.0));
    r.tflm = Some((100_000, ""));
    let md = markdown(&[r], &Refs::new(), 1, 0, false);
    let lines: Vec<&str> = md.lines().filter(|l| l.starts_with('|')).collect();
    assert_eq!(
        lines[0],
        "| model | compile s | Kiln µs | onnxruntime µs | Kiln/ORT | tinygrad µs | \
         tinygrad/Kiln | arena B | liveness bound B | TFLM arena B | arena/TFLM | M4 \
         instructions | flash B | TFLM flash B | flash/TFLM | RAM B | TFLM RAM B | RAM/TFLM |"
    );
    assert_eq!(lines[1].matches("---").count(), 18);
    assert_eq!(
        lines[2],
        "| ic | 0.03 ✓ | 100.0 | 50.0 | 2.00× ✗ | 600.0 | 6.00× ✓ | 64,000 | 64,000 | \
         100,000 | 0.64× ✓ | 1 | 1,000 | — | — | 300 | — | — |"
    );
}

#[test]
fn an_int8_row_has_tflm_and_litert_and_the_difference_from_tflm() {
    let (kws, ad) = (
        BenchModel::named("kws_int8", Kind::Int8),
        BenchModel::named("ad_int8", Kind::Int8),
    );
    let int8 = |m, host_diff, board_diff| {
        let mut r = row(m, None);
        r.k.host_best = Duration::from_micros(100);
        r.k.arena = 2_000;
        r.k.host_diff = host_diff;
        r.k.board.as_mut().unwrap().diff = board_diff;
        (r.tflm_us, r.litert_us) = (Some(1_000.0), Some(50.0));
        r.tflm = Some((4_000, "*"));
        r
    };
    let rows = [
        int8(&kws, Some(0.0), Some(0.0)),
        int8(&ad, Some(0.0), Some(2.0)),
    ];
    let refs = parse_refs("kws_int8\tlitert_max_lsb_diff\t1\n-\tai-edge-litert_version\t9\n");
    let md = int8_markdown(&rows, &refs, 1, 0, false);
    let lines: Vec<&str> = md.lines().filter(|l| l.starts_with('|')).collect();
    assert!(
        lines[0].starts_with(
            "| model | compile s | Kiln µs | TFLM µs | Kiln/TFLM | LiteRT µs | Kiln/LiteRT | \
             = TFLM | arena B |"
        ),
        "{md}"
    );
    assert_eq!(lines[1].matches("---").count(), 19);
    // No target on the int8 arena: its ratio has no mark.
    assert!(
        lines[2].contains(
            "| 100.0 | 1000.0 | 0.10× | 50.0 | 2.00× | ✓ | 2,000 | 0 | 4,000* | 0.50× | 1 |"
        ),
        "{md}"
    );
    assert!(lines[3].contains("| 2.00× | 2 LSB | 2,000 |"), "{md}");
    assert!(md.contains("ai-edge-litert 9,"), "{md}");
    assert!(
        md.contains("largest difference in steps: kws_int8 1 ("),
        "{md}"
    );
    assert!(md.contains("marked * are the published"), "{md}");
    assert!(md.contains("none for kws_int8, ad_int8."), "{md}");
    let numbers = tsv(&rows);
    assert!(numbers.contains("ad_int8\ttflm_best_us\t1000\nad_int8\tlitert_best_us\t50\n"));
    assert!(numbers.contains("ad_int8\thost_diff_vs_tflm\t0\nad_int8\tboard_diff_vs_tflm\t2\n"));
}
