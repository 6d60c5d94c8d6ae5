//! The memory table: each model compiled once more with `--memory min` for the M4 board and run
//! there, beside its default run: the arena of both schedules, the liveness bound the default
//! one sits at, the operations of both (their overhead) and the estimated cycles of both, with
//! the arena targets of the int8 models.

use super::kiln::BoardNumbers;
use super::report::{mark, opt, thousands, Row};
use std::fmt::Write as _;

/// The arena each int8 model is to fit with `--memory min`, in bytes.
pub const ARENA_TARGETS: [(&str, usize); 4] = [
    ("kws_int8", 8_000),
    ("vww_int8", 25_000),
    ("ic_int8", 20_000),
    ("str_ww_int8", 5_000),
];

fn target_of(model: &str) -> Option<usize> {
    (ARENA_TARGETS.iter()).find_map(|&(m, t)| (m == model).then_some(t))
}

/// The default run and the `--memory min` run of `r` on the M4 board, where both ran.
fn runs<'a>(r: &'a Row) -> Option<(&'a BoardNumbers, &'a BoardNumbers)> {
    let speed = r.k.board.as_ref()?;
    let min = r.k.min.as_ref()?.as_ref().ok()?;
    Some((speed, min))
}

/// The table, its caption and the runs that failed; nothing where no row ran with
/// `--memory min`.
pub fn markdown(rows: &[Row]) -> String {
    if rows.iter().all(|r| r.k.min.is_none()) {
        return String::new();
    }
    let mut s = CAPTION.to_string();
    s += "| model | arena B | liveness bound B | arena B, min | min ÷ default | target B | \
          ops ÷ default | est. cycles | est. cycles, min | ÷ default | outputs, min |\n";
    s += "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n";
    for r in rows {
        if let Some((speed, min)) = runs(r) {
            s += &table_row(r, speed, min);
        }
    }
    for r in rows {
        if let Some(Err(e)) = &r.k.min {
            let _ = writeln!(s, "\n{} with `--memory min` did not run: {e}", r.m.name);
        }
    }
    s
}

const CAPTION: &str = "\nMemory: each model compiled again with `--memory min` for the \
    emulated Cortex-M4 (qemu-an386, the kernels of `c-dsp`) and run there on the same input. \
    The arena of the default schedule sits at the liveness bound (one layer's whole input and \
    output); with `--memory min` kernels write their output over a dying input, shifted so \
    that every byte is read before it is written over, a padding with the depthwise \
    convolution after it runs a channel at a time, and runs of layers run a band of rows at a \
    time, their halo recomputed. Ops: the schedule's operations (MACs count two), against the \
    default's. Est. cycles as in the speed table. Outputs: the largest \
    difference from TFLM's on the board (int8: in LSB), ✓ where equal.\n\n";

/// One model's line.
fn table_row(r: &Row, speed: &BoardNumbers, min: &BoardNumbers) -> String {
    let ratio = |a: u64, b: u64| (b > 0).then(|| a as f64 / b as f64);
    let target = target_of(r.m.name);
    let met = target.map(|t| mark(min.arena <= t)).unwrap_or_default();
    format!(
        "| {} | {} | {} | {}{met} | {} | {} | {} | {} | {} | {} | {} |\n",
        r.m.name,
        thousands(speed.arena as u64),
        thousands(r.k.bound as u64),
        thousands(min.arena as u64),
        opt(ratio(min.arena as u64, speed.arena as u64), |x| format!(
            "{x:.2}×"
        )),
        opt(target, |t| thousands(t as u64)),
        opt(ratio(min.flops, speed.flops), |x| format!("{x:.2}×")),
        opt(speed.cycles, thousands),
        opt(min.cycles, thousands),
        opt(speed.cycles.zip(min.cycles), |(a, b)| format!(
            "{:.3}×",
            b as f64 / a as f64
        )),
        opt(min.diff, |d| match d {
            0.0 => "✓".to_string(),
            d => format!("{d}"),
        }),
    )
}

/// The `--memory min` run's numbers of `r`, one `model, key, value` line each.
pub fn tsv_row(r: &Row) -> String {
    let mut s = String::new();
    let n = r.m.name;
    if let Some(Ok(b)) = &r.k.min {
        let _ = writeln!(s, "{n}\tmin_arena\t{}", b.arena);
        let _ = writeln!(s, "{n}\tmin_flops\t{}", b.flops);
        let _ = writeln!(s, "{n}\tmin_ram\t{}", b.ram);
        if let Some(c) = b.cycles {
            let _ = writeln!(s, "{n}\tm4_cycles_est_min\t{c}");
        }
        if let Some(d) = b.diff {
            let _ = writeln!(s, "{n}\tmin_diff_vs_reference\t{d}");
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::kiln::KilnNumbers;
    use crate::bench::models::{BenchModel, Kind};

    fn numbers(arena: usize, flops: u64, cycles: u64) -> BoardNumbers {
        BoardNumbers {
            arena,
            flops,
            cycles: Some(cycles),
            diff: Some(0.0),
            ..BoardNumbers::default()
        }
    }

    #[test]
    fn the_memory_table_states_both_arenas_their_ops_and_cycles_against_the_targets() {
        let (kws, ad) = (
            BenchModel::named("kws_int8", Kind::Int8),
            BenchModel::named("ad_int8", Kind::Int8),
        );
        let row = |m, speed, min| {
            Row::of_kiln(
                m,
                KilnNumbers {
                    bound: 20_096,
                    board: Some(speed),
                    min: Some(min),
                    ..KilnNumbers::default()
                },
            )
        };
        let rows = [
            row(
                &kws,
                numbers(20_096, 1_000, 6_500_000),
                Ok(numbers(8_320, 1_000, 6_600_000)),
            ),
            row(&ad, numbers(768, 10, 500), Err("no QEMU".into())),
        ];
        assert!(markdown(&rows[..0]).is_empty());
        let md = markdown(&rows);
        assert!(
            md.contains(
                "| kws_int8 | 20,096 | 20,096 | 8,320 ✗ | 0.41× | 8,000 | 1.00× | 6,500,000 | \
                 6,600,000 | 1.015× | ✓ |"
            ),
            "{md}"
        );
        assert!(
            md.contains("ad_int8 with `--memory min` did not run: no QEMU"),
            "{md}"
        );
        let tsv = tsv_row(&rows[0]);
        assert!(tsv.contains("kws_int8\tmin_arena\t8320\n"), "{tsv}");
        assert!(
            tsv.contains("kws_int8\tm4_cycles_est_min\t6600000\n"),
            "{tsv}"
        );
    }
}
