use super::*;
use crate::bench::kiln::{BoardNumbers, KilnNumbers, Widening};
use crate::bench::models::BenchModel;
use crate::bench::peer::PeerNumbers;

fn numbers(instructions: u64, cycles: u64) -> BoardNumbers {
    BoardNumbers {
        instructions,
        cycles: Some(cycles),
        flash: 1_000,
        ram: 300,
        diff: Some(0.0),
        ..BoardNumbers::default()
    }
}

fn row<'a>(m: &'a BenchModel, cycles: [u64; 3]) -> Row<'a> {
    Row::of_kiln(
        m,
        KilnNumbers {
            board: Some(numbers(cycles[0] / 2, cycles[0])),
            other_boards: vec![
                ("qemu-an505", Ok(numbers(cycles[1] / 2, cycles[1]))),
                ("qemu-an500", Err("no QEMU".into())),
            ],
            ..KilnNumbers::default()
        },
    )
}

#[test]
fn the_published_table_has_every_core_and_mlperf_model() {
    for core in &CORES {
        for m in ["kws_int8", "vww_int8", "ic_int8", "ad_int8"] {
            assert!(published(core, m).is_some(), "{} {m}", core.short);
        }
    }
    // The streaming wake word's busy time per window, on the M4, the M33 and the M7: 2.15 M,
    // 1.86 M and 1.19 M (the figures).
    let sww = |core: &SpeedCore| published(core, "str_ww_int8").map(|p| p.cycles(core));
    assert_eq!(sww(&CORES[0]).map(millions).as_deref(), Some("2.15 M"));
    assert_eq!(sww(&CORES[1]).map(millions).as_deref(), Some("1.86 M"));
    assert_eq!(sww(&CORES[2]).map(millions).as_deref(), Some("1.19 M"));
    // The cycle figures on the M4: 43.2 ms at 120 MHz is 5.18 M cycles.
    let kws = published(&CORES[0], "kws_int8").unwrap();
    assert_eq!(millions(kws.ms * 120.0 * 1000.0), "5.18 M");
    assert_eq!(other_boards(), ["qemu-an505", "qemu-an500", "qemu-an547"]);
    assert_eq!(CORES[2].label(), "Cortex-M7 @ 280 MHz");
    // Helium's, the figures at 480 MHz: KWS 3.47 ms, 1,665,600 cycles (the issue
    // rounds it down to 1.66 M), VWW 6.43 M, IC 4.07 M, AD 0.255 M; no str_ww.
    assert_eq!(CORES[3].label(), "Cortex-M55 @ 480 MHz");
    let m55 = |m: &str| published(&CORES[3], m).map(|p| millions(p.cycles(&CORES[3])));
    let figures = ["kws_int8", "vww_int8", "ic_int8", "ad_int8", "str_ww_int8"].map(m55);
    let want = ["1.67 M", "6.43 M", "4.07 M", "0.255 M"].map(|s| Some(s.to_string()));
    assert_eq!(figures[..4], want);
    assert_eq!(figures[4], None);
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
    assert_eq!(lines.len(), 2 + 4 * 3, "{md}");
    assert_eq!(
        lines[2],
        "| Cortex-M4 @ 120 MHz | kws_int8 | 3,550,000 | 7,100,000 | 59.17 | 43.2 | 5.18 M | \
         1.37× ✗ | — | — |"
    );
    assert!(md.contains("| ad_int8 | 200,000 | 400,000 | 3.33 | 4.05 | 0.486 M | 0.82× ✓ |"));
    assert!(md.contains(
        "| Cortex-M4 @ 120 MHz | str_ww_int8 | 500,000 | 1,000,000 | 8.33 | 17.9 | 2.15 M | 0.47× ✓ | — | — |"
    ));
    assert!(md.contains("| Cortex-M33 @ 160 MHz | kws_int8 | 1,500,000 | 3,000,000 | 18.75 | 29.0 | 4.64 M | 0.65× ✓ |"), "{md}");
    // The M7 did not run: dashes, and its error under the table.
    assert!(
        md.contains("| Cortex-M7 @ 280 MHz | kws_int8 | — | — | — | 11.3 | 3.16 M | — | — | — |"),
        "{md}"
    );
    // No peer ran: no word of it.
    assert!(!md.contains("TFLM + CMSIS-NN:"), "{md}");
    assert!(md.contains("\nkws_int8 on qemu-an500: no QEMU\n"), "{md}");
    assert!(
        md.contains(
            "Targets missed: kws_int8 on the M4: 7.10 M cycles against 5.18 M, 1.37×. \
             ad_int8 on the M33: 0.600 M cycles against 0.514 M, 1.17×.\n"
        ),
        "{md}"
    );
    assert!(md.contains("equal TFLM's on every model compared"), "{md}");
    assert!(md.contains("M4 kws, M4 vww, M4 ic: STMicroelectronics, X-CUBE-AI on NUCLEO-L4R5ZI"));
    assert!(md.contains("an estimate with a measurement"));
    let numbers = tsv_row(&rows[0]);
    assert!(
        numbers.contains("kws_int8\tm4_cycles_est\t7100000\n"),
        "{numbers}"
    );
    assert!(numbers.contains("kws_int8\tm33_instructions\t1500000\n"));
    assert!(numbers.contains("kws_int8\tm33_cycles_est\t3000000\nkws_int8\tm33_ms_est\t18.75\n"));
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

fn peer(cycles: u64, flash: usize) -> Result<PeerNumbers, String> {
    Ok(PeerNumbers {
        instructions: cycles / 2,
        cycles,
        flash,
    })
}

#[test]
fn sets_the_peer_beside_kiln_and_says_where_its_run_failed() {
    let (kws, ad) = (
        BenchModel::named("kws_int8", Kind::Int8),
        BenchModel::named("ad_int8", Kind::Int8),
    );
    let mut rows = [
        row(&kws, [7_100_000, 3_000_000, 0]),
        row(&ad, [400_000, 600_000, 0]),
    ];
    let failed =
        "TFLM + CMSIS-NN on qemu-an505 (tests/peers/tflm-cmsis-nn/an505/kws_ref_model.elf): \
                  exited with exit status: 1: peer: worst maxdiff 2";
    rows[0].peer = vec![
        ("qemu-an386", peer(10_000_000, 2_000)),
        ("qemu-an505", Err(failed.into())),
    ];
    rows[1].peer = vec![
        ("qemu-an386", peer(800_000, 4_000)),
        ("qemu-an505", peer(900_000, 4_000)),
    ];
    let md = markdown(&rows);
    assert!(
        md.contains("| TFLM + CMSIS-NN est. cycles | Kiln ÷ CMSIS-NN |\n"),
        "{md}"
    );
    assert!(md.contains("| 1.37× ✗ | 10,000,000 | 0.71× ✗ |"), "{md}");
    assert!(md.contains("| 4.64 M | 0.65× ✓ | failed | — |"), "{md}");
    assert!(md.contains("| 0.82× ✓ | 800,000 | 0.50× ✓ |"), "{md}");
    assert!(
        md.contains("| Cortex-M7 @ 280 MHz | ad_int8 | — | — | — | 1.08 | 0.302 M | — | — | — |")
    );
    assert!(md.contains("on the M4 and M33 boards"), "{md}");
    assert!(md.contains("no image for the M7"), "{md}");
    assert!(
        md.contains("met on 1 of 3 (ad_int8 on the M4): Kiln takes 0.50–0.71× CMSIS-NN's cycles."),
        "{md}"
    );
    assert!(md.contains("Kiln ÷ CMSIS-NN: kws_int8 0.50× (1,000 B against 2,000 B), ad_int8 0.25×"));
    assert!(md.contains(&format!("\nkws_int8: {failed}\n")), "{md}");
    let numbers = tsv_row(&rows[0]);
    assert!(
        numbers.contains("kws_int8\tm4_cmsis_nn_instructions\t5000000\n"),
        "{numbers}"
    );
    assert!(numbers.contains("kws_int8\tm4_cmsis_nn_cycles_est\t10000000\n"));
    assert!(numbers.contains("kws_int8\tm4_cmsis_nn_flash\t2000\n"));
    assert!(!numbers.contains("m33_cmsis_nn"), "{numbers}");
}

/// The widened operands' table: each run against the int8 run on the same core, the
/// published figure and the flash and RAM it costs; a published target it alone meets is
/// named with both.
#[test]
fn the_widened_operands_table_states_cycles_and_the_memory_they_cost() {
    let (kws, ad) = (
        BenchModel::named("kws_int8", Kind::Int8),
        BenchModel::named("ad_int8", Kind::Int8),
    );
    let wide = |cycles: u64, flash: usize, ram: usize| BoardNumbers {
        flash,
        ram,
        ..numbers(cycles / 2, cycles)
    };
    // ad: 0.5 M cycles on the M4 unwidened (over 0.486 M), 0.45 M with its weights widened,
    // 0.49 M with its activations (in 128 B more RAM).
    let mut rows = [
        row(&kws, [7_100_000, 3_000_000, 0]),
        row(&ad, [500_000, 600_000, 0]),
    ];
    rows[0].k.wide = vec![(
        Widening::Weights,
        "qemu-an386",
        Ok(wide(7_000_000, 1_800, 300)),
    )];
    rows[1].k.wide = vec![
        (
            Widening::Weights,
            "qemu-an386",
            Ok(wide(450_000, 2_000, 300)),
        ),
        (
            Widening::Activations,
            "qemu-an386",
            Ok(wide(490_000, 1_000, 428)),
        ),
        (Widening::Weights, "qemu-an505", Err("no QEMU".into())),
    ];
    assert!(markdown(&rows[..0]).is_empty());
    let md = markdown(&rows);
    assert!(
        md.contains(
            "| Cortex-M4 @ 120 MHz | ad_int8 | weights | 450,000 | 0.900× | 0.93× ✓ | — | \
             2,000 | 1,000 | 300 | 0 |"
        ),
        "{md}"
    );
    assert!(
        md.contains(
            "| Cortex-M4 @ 120 MHz | ad_int8 | activations | 490,000 | 0.980× | 1.01× ✗ | — | \
             1,000 | 0 | 428 | 128 |"
        ),
        "{md}"
    );
    assert!(
        md.contains("| Cortex-M4 @ 120 MHz | kws_int8 | weights | 7,000,000 | 0.986× | 1.35× ✗ |")
    );
    assert!(
        md.contains(
            "Published targets met widened and missed without: ad_int8 on the M4 with weights \
             widened (0.450 M cycles, 3.75 ms, for 1,000 B more flash and 0 B more RAM)."
        ),
        "{md}"
    );
    assert!(
        md.contains("\nad_int8 on qemu-an505 with weights widened: no QEMU\n"),
        "{md}"
    );
    let tsv = tsv_row(&rows[1]);
    for line in [
        "ad_int8\tm4_wide_cycles_est\t450000\n",
        "ad_int8\tm4_wide_flash\t2000\n",
        "ad_int8\tm4_i16_cycles_est\t490000\n",
        "ad_int8\tm4_i16_ram\t428\n",
    ] {
        assert!(tsv.contains(line), "{line} in {tsv}");
    }
}
