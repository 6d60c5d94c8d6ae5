//! The benchmark's report: one row per model with its ratios, the raw numbers as TSV, and the
//! table spliced into a README. The Markdown table is [`super::table`]'s, the plot
//! [`super::plot`]'s.

use super::kiln::KilnNumbers;
use super::models::BenchModel;
use super::refs::TflmImage;
use std::fmt::Write as _;
use std::time::Duration;

/// One model's row, with the ratios the targets are about.
pub struct Row<'a> {
    pub m: &'a BenchModel,
    pub k: KilnNumbers,
    pub ort_us: Option<f64>,
    pub tinygrad_us: Option<f64>,
    pub tflm: Option<(usize, &'static str)>,
    /// TFLM's image of the same model on the board, where one was measured.
    pub tflm_image: Option<TflmImage>,
}

impl Row<'_> {
    pub fn kiln_us(&self) -> f64 {
        us(self.k.host_best)
    }
    pub fn vs_ort(&self) -> Option<f64> {
        self.ort_us.map(|o| self.kiln_us() / o)
    }
    pub fn vs_tinygrad(&self) -> Option<f64> {
        self.tinygrad_us.map(|t| t / self.kiln_us())
    }
    pub fn vs_tflm(&self) -> Option<f64> {
        self.tflm.map(|(t, _)| self.k.arena as f64 / t as f64)
    }
    /// Kiln's image ÷ TFLM's, flash and RAM.
    pub fn image_vs_tflm(&self) -> Option<(f64, f64)> {
        let (b, t) = (self.k.board.as_ref()?, self.tflm_image.as_ref()?);
        Some((b.flash as f64 / t.flash as f64, b.ram as f64 / t.ram as f64))
    }
}

pub fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

pub fn opt<T>(v: Option<T>, f: impl Fn(T) -> String) -> String {
    v.map(f).unwrap_or_else(|| "—".into())
}

pub fn mark(ok: bool) -> &'static str {
    if ok {
        " ✓"
    } else {
        " ✗"
    }
}

/// Every number of every row, one `model, key, value` line each.
pub fn tsv(rows: &[Row]) -> String {
    let mut s = String::new();
    for r in rows {
        let k = &r.k;
        let n = r.m.name;
        let _ = writeln!(s, "{n}\tcompile_s\t{}", k.compile.as_secs_f64());
        let _ = writeln!(s, "{n}\tkiln_best_us\t{}", us(k.host_best));
        let _ = writeln!(s, "{n}\tkiln_median_us\t{}", us(k.host_median));
        let _ = writeln!(s, "{n}\tsteps\t{}", k.kernels);
        let _ = writeln!(s, "{n}\tarena\t{}", k.arena);
        let _ = writeln!(s, "{n}\tliveness_bound\t{}", k.bound);
        let _ = writeln!(s, "{n}\tweights\t{}", k.weights);
        if let Some(b) = &k.board {
            let _ = writeln!(s, "{n}\tm4_instructions\t{}", b.instructions);
            let _ = writeln!(s, "{n}\tflash\t{}", b.flash);
            let _ = writeln!(s, "{n}\tram\t{}", b.ram);
        }
        if let Some(o) = r.ort_us {
            let _ = writeln!(s, "{n}\tort_best_us\t{o}");
        }
        if let Some(t) = r.tinygrad_us {
            let _ = writeln!(s, "{n}\ttinygrad_best_us\t{t}");
        }
        if let Some((t, _)) = r.tflm {
            let _ = writeln!(s, "{n}\ttflm_arena\t{t}");
        }
        if let Some(t) = &r.tflm_image {
            let _ = writeln!(s, "{n}\ttflm_flash\t{}", t.flash);
            let _ = writeln!(s, "{n}\ttflm_ram\t{}", t.ram);
        }
    }
    s
}

pub const README_START: &str = "<!-- bench:start -->";
pub const README_END: &str = "<!-- bench:end -->";

/// `readme` with the text between the bench markers replaced by `table`.
pub fn splice_readme(readme: &str, table: &str) -> Option<String> {
    let start = readme.find(README_START)? + README_START.len();
    let end = start + readme[start..].find(README_END)?;
    Some(format!("{}\n{}{}", &readme[..start], table, &readme[end..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splices_the_table_between_the_markers() {
        let readme = "a\n<!-- bench:start -->\nold\n<!-- bench:end -->\nb\n";
        let out = splice_readme(readme, "new\n").unwrap();
        assert_eq!(out, "a\n<!-- bench:start -->\nnew\n<!-- bench:end -->\nb\n");
        assert_eq!(splice_readme("no markers", "x"), None);
    }

    #[test]
    fn groups_thousands() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(6224), "6,224");
        assert_eq!(thousands(52_300_000), "52,300,000");
    }
}
