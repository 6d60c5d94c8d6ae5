//! The benchmark's plot: the three ratios per model, each against its target line, as SVG.

use super::report::Row;
use super::{TARGET_VS_ORT, TARGET_VS_TFLM, TARGET_VS_TINYGRAD};
use std::fmt::Write as _;

/// A panel's plot area: width and height.
const PANEL_W: f64 = 320.0;
const PANEL_H: f64 = 260.0;
/// The margins: above the plot areas (their titles), below (the model names), left of each.
const TOP: f64 = 40.0;
const BOTTOM: f64 = 60.0;
const LEFT: f64 = 40.0;

/// One panel: a ratio per model, and the target it is held against.
struct Panel {
    title: &'static str,
    target: f64,
    /// The target is a floor (else a ceiling).
    higher_better: bool,
    values: Vec<Option<f64>>,
    /// Each row's own target, where it is not the panel's line (the large networks').
    row_targets: Vec<f64>,
}

impl Panel {
    fn meets_target(&self, row: usize, v: f64) -> bool {
        let target = self.row_targets.get(row).copied().unwrap_or(self.target);
        if self.higher_better {
            v >= target
        } else {
            v <= target
        }
    }
}

fn panels(rows: &[Row]) -> [Panel; 3] {
    [
        Panel {
            title: "Kiln ÷ onnxruntime latency (≤ 1; large ≤ 1.5)",
            target: TARGET_VS_ORT,
            higher_better: false,
            values: rows.iter().map(|r| r.vs_ort()).collect(),
            row_targets: rows.iter().map(|r| r.m.target_vs_ort()).collect(),
        },
        Panel {
            title: "tinygrad ÷ Kiln latency (≥ 5)",
            target: TARGET_VS_TINYGRAD,
            higher_better: true,
            values: rows.iter().map(|r| r.vs_tinygrad()).collect(),
            row_targets: vec![],
        },
        Panel {
            title: "Kiln arena ÷ TFLM arena (≤ 0.8)",
            target: TARGET_VS_TFLM,
            higher_better: false,
            values: rows.iter().map(|r| r.vs_tflm()).collect(),
            row_targets: vec![],
        },
    ]
}

/// A plot of the three ratios per model, each against its target line, as SVG.
pub fn svg(rows: &[Row]) -> String {
    let panels = panels(rows);
    let width = panels.len() as f64 * (PANEL_W + LEFT) + 20.0;
    let height = PANEL_H + TOP + BOTTOM;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" \
         font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>"
    );
    for (p, panel) in panels.iter().enumerate() {
        draw_panel(&mut s, LEFT + p as f64 * (PANEL_W + LEFT), panel, rows);
    }
    s.push_str("</svg>\n");
    s
}

/// One panel at `x0`: its title and axes, a bar per model, and the target line.
fn draw_panel(s: &mut String, x0: f64, panel: &Panel, rows: &[Row]) {
    let max = panel
        .values
        .iter()
        .flatten()
        .fold(panel.target, |a, &b| a.max(b))
        .max(1e-9)
        * 1.15;
    let y = |v: f64| TOP + PANEL_H - v / max * PANEL_H;
    draw_axes(s, x0, panel.title, max);
    let slot = PANEL_W / rows.len().max(1) as f64;
    for (i, (r, v)) in rows.iter().zip(&panel.values).enumerate() {
        let cx = x0 + slot * (i as f64 + 0.5);
        if let Some(v) = *v {
            let color = if panel.meets_target(i, v) {
                "#3a7d44"
            } else {
                "#c0504d"
            };
            let _ = writeln!(
                s,
                "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{color}\"/>\
                 <text x=\"{cx}\" y=\"{}\" text-anchor=\"middle\">{v:.2}</text>",
                cx - slot * 0.35,
                y(v),
                slot * 0.7,
                TOP + PANEL_H - y(v),
                y(v) - 3.0
            );
        }
        let _ = writeln!(
            s,
            "<text x=\"{cx}\" y=\"{}\" text-anchor=\"end\" transform=\"rotate(-35 {cx} {})\">{}</text>",
            TOP + PANEL_H + 14.0,
            TOP + PANEL_H + 14.0,
            r.m.name
        );
    }
    let _ = writeln!(
        s,
        "<line x1=\"{x0}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#333\" stroke-dasharray=\"5,4\"/>",
        y(panel.target),
        x0 + PANEL_W,
        y(panel.target)
    );
}

/// A panel's title, its x and y axes, and the y axis's labels: `max` at the top, 0 below.
fn draw_axes(s: &mut String, x0: f64, title: &str, max: f64) {
    let (top, ph, pw) = (TOP, PANEL_H, PANEL_W);
    let _ = writeln!(
        s,
        "<text x=\"{}\" y=\"20\" text-anchor=\"middle\" font-size=\"13\">{title}</text>",
        x0 + pw / 2.0
    );
    let _ = writeln!(
        s,
        "<line x1=\"{x0}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/>",
        top + ph,
        x0 + pw,
        top + ph
    );
    let _ = writeln!(
        s,
        "<line x1=\"{x0}\" y1=\"{top}\" x2=\"{x0}\" y2=\"{}\" stroke=\"black\"/>",
        top + ph
    );
    let _ = writeln!(s, "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{max:.2}</text><text x=\"{}\" y=\"{}\" text-anchor=\"end\">0</text>", x0 - 4.0, top + 4.0, x0 - 4.0, top + ph);
}
