//! The benchmark's report: one row per model with its ratios, the raw numbers as TSV, and the
//! tables spliced into `docs/benchmark.md` or an earlier report, a run's tables replacing those of the
//! kinds it measured. The Markdown tables are [`super::table`]'s, the plot [`super::plot`]'s.

use super::kiln::KilnNumbers;
use super::layers::Layers;
use super::models::BenchModel;
use super::peer::PeerRuns;
use super::refs::TflmImage;
use std::fmt::Write as _;
use std::time::Duration;

/// One model's row, with the ratios the targets are about.
pub struct Row<'a> {
    pub m: &'a BenchModel,
    pub k: KilnNumbers,
    pub ort_us: Option<f64>,
    pub tinygrad_us: Option<f64>,
    /// TFLM's reference kernels and LiteRT on an int8 model.
    pub tflm_us: Option<f64>,
    pub litert_us: Option<f64>,
    pub tflm: Option<(usize, &'static str)>,
    /// TFLM's image of the same model on the board, where one was measured.
    pub tflm_image: Option<TflmImage>,
    /// TFLM + CMSIS-NN's runs of an int8 model on the speed table's boards.
    pub peer: PeerRuns,
    /// The per-layer figures of [`super::layers::MODEL`], or why there are none.
    pub layers: Option<Result<Layers, String>>,
}

impl<'a> Row<'a> {
    /// A row of Kiln's numbers `k` on `m` alone: no reference measured.
    #[cfg(test)]
    pub fn of_kiln(m: &'a BenchModel, k: KilnNumbers) -> Row<'a> {
        Row {
            m,
            k,
            ort_us: None,
            tinygrad_us: None,
            tflm_us: None,
            litert_us: None,
            tflm: None,
            tflm_image: None,
            peer: Vec::new(),
            layers: None,
        }
    }

    pub fn kiln_us(&self) -> f64 {
        us(self.k.host_best)
    }
    /// Kiln's latency ÷ a reference's.
    pub fn kiln_over(&self, reference_us: Option<f64>) -> Option<f64> {
        reference_us.map(|o| self.kiln_us() / o)
    }
    pub fn vs_ort(&self) -> Option<f64> {
        self.kiln_over(self.ort_us)
    }
    pub fn vs_tinygrad(&self) -> Option<f64> {
        self.tinygrad_us.map(|t| t / self.kiln_us())
    }
    pub fn vs_tflm(&self) -> Option<f64> {
        self.tflm.map(|(t, _)| self.k.arena as f64 / t as f64)
    }
    /// The largest difference of Kiln's outputs, on the host and the board, from TFLM's.
    pub fn diff_vs_tflm(&self) -> Option<f64> {
        let board = self.k.board.as_ref().and_then(|b| b.diff);
        match (self.k.host_diff, board) {
            (Some(h), Some(b)) => Some(h.max(b)),
            (h, b) => h.or(b),
        }
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

/// Items as a sentence lists them: `a`, `a and b`, `a, b and c`.
pub fn listed(items: &[&str]) -> String {
    match items.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        Some((last, _)) => last.to_string(),
        None => String::new(),
    }
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
        s += &tsv_row(r);
    }
    s
}

/// One row's numbers, one `model, key, value` line each.
fn tsv_row(r: &Row) -> String {
    let mut s = String::new();
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
    let optional = [
        ("ort_best_us", r.ort_us),
        ("tinygrad_best_us", r.tinygrad_us),
        ("tflm_best_us", r.tflm_us),
        ("litert_best_us", r.litert_us),
        ("host_diff_vs_tflm", k.host_diff),
        ("board_diff_vs_tflm", k.board.as_ref().and_then(|b| b.diff)),
    ];
    for (key, v) in optional {
        if let Some(v) = v {
            let _ = writeln!(s, "{n}\t{key}\t{v}");
        }
    }
    if let Some((t, _)) = r.tflm {
        let _ = writeln!(s, "{n}\ttflm_arena\t{t}");
    }
    if let Some(t) = &r.tflm_image {
        let _ = writeln!(s, "{n}\ttflm_flash\t{}", t.flash);
        let _ = writeln!(s, "{n}\ttflm_ram\t{}", t.ram);
    }
    s += &super::speed::tsv_row(r);
    s += &super::memory::tsv_row(r);
    s += &super::layers::tsv(r);
    s
}

pub const README_START: &str = "<!-- bench:start -->";
pub const README_END: &str = "<!-- bench:end -->";

/// The line that starts the int8 table in a report (the float table is what precedes it).
pub const INT8_MARK: &str = "<!-- bench:int8 -->";

/// A report's two tables, each with its caption and notes: the float models' and the int8
/// models'.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tables {
    pub float: Option<String>,
    pub int8: Option<String>,
}

impl Tables {
    /// The tables of a report [`Tables::text`] wrote (one without [`INT8_MARK`] is all float).
    pub fn parse(text: &str) -> Tables {
        let part = |t: &str| Some(t.trim().to_string()).filter(|t| !t.is_empty());
        match text.split_once(INT8_MARK) {
            Some((float, int8)) => Tables {
                float: part(float),
                int8: part(int8),
            },
            None => Tables {
                float: part(text),
                int8: None,
            },
        }
    }

    /// These tables, each one missing taken from `old`.
    pub fn or(self, old: Tables) -> Tables {
        Tables {
            float: self.float.or(old.float),
            int8: self.int8.or(old.int8),
        }
    }

    /// The report: the float table, then [`INT8_MARK`] and the int8 table.
    pub fn text(&self) -> String {
        let mut parts = Vec::new();
        parts.extend(self.float.as_deref().map(|f| f.trim().to_string()));
        parts.extend(
            self.int8
                .as_ref()
                .map(|i| format!("{INT8_MARK}\n\n{}", i.trim())),
        );
        parts.join("\n\n") + "\n"
    }
}

/// `readme` with the tables between the bench markers replaced by `tables`' (a table that
/// `tables` lacks is kept).
pub fn splice_readme(readme: &str, tables: Tables) -> Option<String> {
    let start = readme.find(README_START)? + README_START.len();
    let end = start + readme[start..].find(README_END)?;
    let merged = tables.or(Tables::parse(&readme[start..end]));
    Some(format!(
        "{}\n{}{}",
        &readme[..start],
        merged.text(),
        &readme[end..]
    ))
}

/// The `model, key, value` lines of `new`, after those of `old` whose model `keep` keeps.
pub fn merge_tsv(old: &str, new: &str, keep: impl Fn(&str) -> bool) -> String {
    let mut s: String = old
        .lines()
        .filter(|l| keep(l.split('\t').next().unwrap_or_default()))
        .map(|l| format!("{l}\n"))
        .collect();
    s += new;
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tables(float: Option<&str>, int8: Option<&str>) -> Tables {
        Tables {
            float: float.map(Into::into),
            int8: int8.map(Into::into),
        }
    }

    #[test]
    fn splices_the_table_between_the_markers() {
        let readme = "a\n<!-- bench:start -->\nold\n<!-- bench:end -->\nb\n";
        let out = splice_readme(readme, tables(Some("new\n"), None)).unwrap();
        assert_eq!(out, "a\n<!-- bench:start -->\nnew\n<!-- bench:end -->\nb\n");
        assert_eq!(splice_readme("no markers", Tables::default()), None);
    }

    #[test]
    fn keeps_the_table_of_a_kind_not_run() {
        // A README with only a float table gets the int8 one after it, the float one kept.
        let readme = "a\n<!-- bench:start -->\nold float\n\nnotes\n<!-- bench:end -->\nb\n";
        let both = splice_readme(readme, tables(None, Some("int8\n"))).unwrap();
        assert_eq!(
            both,
            "a\n<!-- bench:start -->\nold float\n\nnotes\n\n<!-- bench:int8 -->\n\nint8\n\
             <!-- bench:end -->\nb\n"
        );
        // Then a float run keeps the int8 table, and the text round-trips.
        let again = splice_readme(&both, tables(Some("new float"), None)).unwrap();
        assert!(again.contains("\nnew float\n\n<!-- bench:int8 -->\n\nint8\n<!--"));
        let section = &again[again.find("new float").unwrap()..again.find(README_END).unwrap()];
        assert_eq!(Tables::parse(section).text(), section);
        assert_eq!(
            Tables::parse(section),
            tables(Some("new float"), Some("int8"))
        );
    }

    #[test]
    fn merges_the_numbers_of_the_models_kept() {
        let old = "kws\tarena\t1\nkws_int8\tarena\t2\n";
        let merged = merge_tsv(old, "kws_int8\tarena\t3\n", |m| m == "kws");
        assert_eq!(merged, "kws\tarena\t1\nkws_int8\tarena\t3\n");
    }

    #[test]
    fn groups_thousands() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(6224), "6,224");
        assert_eq!(thousands(52_300_000), "52,300,000");
    }
}
