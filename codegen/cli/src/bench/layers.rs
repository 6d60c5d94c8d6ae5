//! Per layer, one int8 model ([`MODEL`]) on the main board: each TFLite operator's estimated
//! cycles in TFLM + CMSIS-NN's per-operator image, beside the cycles of the Kiln kernels that
//! do its work ([`assign`] says which), in a third table of the int8 section.

use super::models::BenchModel;
use super::peer;
use super::report::{opt, thousands, Row};
use super::speed::CORES;
use super::BOARD;
use anyhow::{Context, Result};
use std::fmt::Write as _;
use std::ops::Range;
use std::path::Path;

/// The model compared layer by layer.
pub const MODEL: &str = "vww_int8";

/// One operator of the model, as its .tflite has it.
#[derive(Clone, Debug, PartialEq)]
pub struct Operator {
    /// `CONV_2D`.
    pub name: String,
    pub output: Vec<usize>,
    /// Multiply-accumulates of a convolution or a dense layer.
    pub macs: Option<u64>,
}

/// What the peer measured per operator, with the operators.
#[derive(Clone, Debug, PartialEq)]
pub struct Layers {
    pub ops: Vec<Operator>,
    /// Each operator's estimated cycles on vector 0, in the same order.
    pub cycles: Vec<u64>,
}

/// The operators of the main subgraph of the .tflite at `path`, in the order TFLM runs them.
pub fn operators(path: &Path) -> Result<Vec<Operator>> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let model = kiln_codegen::tflite::load_bytes(&bytes)
        .with_context(|| format!("reading {}", path.display()))?;
    let shape = |id: Option<&kiln_codegen::tflite::TensorId>| {
        id.map(|&t| model.tensor(t).shape.clone())
            .unwrap_or_default()
    };
    let ops = model.ops.iter().map(|op| {
        let name = op.name();
        let output = shape(op.outputs.first());
        let filter = shape(op.inputs.get(1).copied().flatten().as_ref());
        let macs = macs(&name, &output, &filter);
        Operator { name, output, macs }
    });
    Ok(ops.collect())
}

/// The multiply-accumulates of operator `name` with this output and filter (weights) shape:
/// per output element, a convolution's or dense layer's filter over one output channel, a
/// depthwise convolution's window.
fn macs(name: &str, output: &[usize], filter: &[usize]) -> Option<u64> {
    let per_channel = |channels: usize| filter.iter().product::<usize>() / channels.max(1);
    let per_output = match name {
        "CONV_2D" | "FULLY_CONNECTED" => per_channel(*filter.first()?),
        "DEPTHWISE_CONV_2D" => per_channel(*filter.last()?),
        _ => return None,
    };
    Some((output.iter().product::<usize>() * per_output) as u64)
}

/// The reduce kernels Kiln makes of an operator: one for a convolution, a dense layer, a pool
/// or a mean; two for a softmax (its maximum and its sum); none for the others, whose work
/// Kiln fuses into its neighbours' kernels.
pub fn reduces(op: &str) -> usize {
    match op {
        "CONV_2D" | "DEPTHWISE_CONV_2D" | "FULLY_CONNECTED" | "TRANSPOSE_CONV"
        | "AVERAGE_POOL_2D" | "MAX_POOL_2D" | "MEAN" | "SUM" | "REDUCE_MAX" | "BATCH_MATMUL" => 1,
        "SOFTMAX" | "LOG_SOFTMAX" => 2,
        _ => 0,
    }
}

/// How the kernels are assigned, for the table's caption.
pub const MAPPING: &str = "Kiln's kernels do not map one-to-one onto TFLM's operators (a \
     padding kernel comes before a padded convolution, elementwise work is fused into the kernel \
     that produces or reads it, a softmax is two reductions and elementwise kernels), so they are \
     assigned in schedule order: an operator that reduces takes the kernels from where the \
     previous one's ended up to and including its own reduce kernels (one for a convolution, a \
     dense layer, a pool or a mean; two for a softmax: its maximum and its sum), so also the \
     padding and elementwise kernels just before them; an operator that does not reduce \
     (RESHAPE, ADD, …) has no kernel of its own (—: its work is in its neighbours'); the kernels \
     after the last reduce go to the last operator that reduces. Every kernel is counted once, \
     so each side's total is its whole inference (TFLM's: its kernels, without the \
     interpreter's loop between them).";

/// Each operator's range of `kernels` (their names, in schedule order; a reduce kernel's starts
/// with `r`) by [`MAPPING`]; an error where Kiln's reduce kernels are not those the operators
/// ask for.
pub fn assign(ops: &[Operator], kernels: &[&str]) -> Result<Vec<Range<usize>>, String> {
    let have = kernels.iter().filter(|k| is_reduce(k)).count();
    let want: usize = ops.iter().map(|o| reduces(&o.name)).sum();
    if have != want {
        return Err(format!(
            "Kiln's {have} reduce kernels are not the {want} that the operators' reductions ask \
             for, so its kernels cannot be assigned to them"
        ));
    }
    let (mut next, mut last) = (0, None);
    let mut spans = Vec::with_capacity(ops.len());
    for (i, op) in ops.iter().enumerate() {
        let start = next;
        for _ in 0..reduces(&op.name) {
            next += 1 + kernels[next..]
                .iter()
                .position(|k| is_reduce(k))
                .expect("counted");
            last = Some(i);
        }
        spans.push(start..next);
    }
    if let Some(i) = last {
        spans[i].end = kernels.len();
    }
    Ok(spans)
}

/// Whether the kernel named `kernel` reduces (its name starts with its kind: `r`).
fn is_reduce(kernel: &str) -> bool {
    kernel.starts_with('r')
}

/// The per-layer figures of `m` when it is [`MODEL`]: its operators and the peer's
/// per-operator image run on the main board; the error as text where that fails.
pub fn measure(m: &BenchModel) -> Option<Result<Layers, String>> {
    let tflite = m.tflite.as_ref().filter(|_| m.name == MODEL)?;
    let folder = CORES[0].peer?;
    let elf = peer::image(folder, tflite, "-perop");
    eprintln!("TFLM + CMSIS-NN per operator: {} on {BOARD}", m.name);
    let measured = operators(tflite).and_then(|ops| {
        let cycles = peer::per_operator(BOARD, &elf, ops.len())?;
        Ok(Layers { ops, cycles })
    });
    let context = || {
        format!(
            "TFLM + CMSIS-NN per operator on {BOARD} ({})",
            peer::shown(&elf)
        )
    };
    Some(measured.with_context(context).map_err(|e| format!("{e:#}")))
}

/// The per-layer table of [`MODEL`] among `rows`, with its caption; nothing where it did not
/// run, the reason where its figures cannot be set side by side.
pub fn markdown(rows: &[Row]) -> String {
    let Some((r, measured)) = rows.iter().find_map(|r| Some((r, r.layers.as_ref()?))) else {
        return String::new();
    };
    let mut s = caption(r);
    let (kernels, names) = board_kernels(r);
    let layers = match measured {
        Ok(layers) if !kernels.is_empty() => layers,
        Ok(_) => return s + &format!("Kiln's kernels did not run on {BOARD}.\n"),
        Err(e) => return s + e + "\n",
    };
    let spans = match assign(&layers.ops, &names) {
        Ok(spans) => spans,
        Err(e) => return s + &e + "\n",
    };
    s +=
        "| # | TFLM operator | output shape | MACs | CMSIS-NN cycles | Kiln kernels | Kiln cycles \
          | Kiln ÷ CMSIS-NN |\n|---:|---|---|---:|---:|---|---:|---:|\n";
    for (i, ((op, &peer), span)) in layers
        .ops
        .iter()
        .zip(&layers.cycles)
        .zip(&spans)
        .enumerate()
    {
        let kiln = Some(cycles_of(kernels, span)).filter(|_| !span.is_empty());
        let steps = kernels_cell(span, &names);
        let _ = writeln!(
            s,
            "| {i} | {} | {} | {} | {} | {steps} | {} | {} |",
            op.name,
            dims(&op.output),
            opt(op.macs, thousands),
            thousands(peer),
            opt(kiln, thousands),
            opt(kiln, |k| format!("{:.2}×", k as f64 / peer as f64)),
        );
    }
    let (peer, kiln) = (
        layers.cycles.iter().sum::<u64>(),
        cycles_of(kernels, &(0..kernels.len())),
    );
    let macs: u64 = layers.ops.iter().filter_map(|o| o.macs).sum();
    let _ = writeln!(
        s,
        "| | total | | {} | {} | {} kernels | {} | {:.2}× |",
        thousands(macs),
        thousands(peer),
        kernels.len(),
        thousands(kiln),
        kiln as f64 / peer as f64
    );
    s + &by_type(layers, &spans, kernels)
}

/// Kiln's kernels in `r`'s run on the main board, (name, estimated cycles) per step, and
/// their names.
fn board_kernels<'r>(r: &'r Row) -> (&'r [(String, u64)], Vec<&'r str>) {
    let kernels = r.k.board.as_ref().map(|b| &b.steps[..]).unwrap_or_default();
    (kernels, kernels.iter().map(|(n, _)| n.as_str()).collect())
}

/// The estimated cycles of the kernels of `span`.
fn cycles_of(kernels: &[(String, u64)], span: &Range<usize>) -> u64 {
    kernels[span.clone()].iter().map(|(_, c)| c).sum()
}

/// What the table is.
fn caption(r: &Row) -> String {
    let elf = (r.m.tflite.as_deref())
        .zip(CORES[0].peer)
        .map(|(t, folder)| format!(" (`{}`)", peer::shown(&peer::image(folder, t, "-perop"))))
        .unwrap_or_default();
    format!(
        "\nPer layer, {} on {BOARD} ({}): each TFLite operator's estimated cycles in TFLM + \
         CMSIS-NN's per-operator image{elf}, which brackets each operator's kernel instead of \
         the whole `Invoke()` (vector 0), beside the estimated cycles of the Kiln kernels of the \
         run above that do its work (the steps `kiln run --board {BOARD}` lists); output shapes \
         and the convolutions' and dense layers' multiply-accumulates from the .tflite. {MAPPING}\n\n",
        r.m.name,
        CORES[0].label(),
    )
}

/// `0–1 `E_97_97_3` `r_6_48_8_3_9_4_2``: the steps of `span` and their kernels' names.
fn kernels_cell(span: &Range<usize>, names: &[&str]) -> String {
    let steps = match span.len() {
        0 => return "—".to_string(),
        1 => span.start.to_string(),
        _ => format!("{}–{}", span.start, span.end - 1),
    };
    let names: Vec<String> = names[span.clone()]
        .iter()
        .map(|n| format!("`{n}`"))
        .collect();
    format!("{steps} {}", names.join(" "))
}

/// `48×48×8`: a shape without its leading batch of 1.
fn dims(shape: &[usize]) -> String {
    let shape = match shape {
        [1, rest @ ..] if !rest.is_empty() => rest,
        all => all,
    };
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    dims.join("×")
}

/// Each operator type's cycles on both sides, in the order the types first come.
fn by_type(layers: &Layers, spans: &[Range<usize>], kernels: &[(String, u64)]) -> String {
    // Per type: operators, CMSIS-NN's cycles, Kiln's kernels and their cycles.
    let mut types: Vec<(&str, usize, u64, usize, u64)> = Vec::new();
    for ((op, &peer), span) in layers.ops.iter().zip(&layers.cycles).zip(spans) {
        let kiln = cycles_of(kernels, span);
        match types.iter_mut().find(|t| t.0 == op.name) {
            Some(t) => {
                (t.1, t.2) = (t.1 + 1, t.2 + peer);
                (t.3, t.4) = (t.3 + span.len(), t.4 + kiln);
            }
            None => types.push((&op.name, 1, peer, span.len(), kiln)),
        }
    }
    let parts: Vec<String> = (types.iter())
        .map(|&(name, n, peer, kernels, kiln)| match kernels {
            0 => format!("{name} ×{n}: fused against {}", thousands(peer)),
            _ => format!(
                "{name} ×{n}: {} against {} ({:.2}×)",
                thousands(kiln),
                thousands(peer),
                kiln as f64 / peer as f64
            ),
        })
        .collect();
    format!(
        "\nBy operator type, Kiln's cycles against CMSIS-NN's: {}.\n",
        parts.join("; ")
    )
}

/// The per-layer numbers of `r` for `bench.tsv`: per operator `m4_op_NN_cmsis_nn_cycles` and,
/// where Kiln's kernels could be assigned, `m4_op_NN_kiln_cycles` (0 for an operator fused
/// into its neighbours).
pub fn tsv(r: &Row) -> String {
    let mut s = String::new();
    let Some(Ok(layers)) = &r.layers else {
        return s;
    };
    let (kernels, names) = board_kernels(r);
    let spans = assign(&layers.ops, &names)
        .ok()
        .filter(|_| !kernels.is_empty());
    let (n, k) = (r.m.name, CORES[0].key);
    for (i, &peer) in layers.cycles.iter().enumerate() {
        let _ = writeln!(s, "{n}\t{k}_op_{i:02}_cmsis_nn_cycles\t{peer}");
        if let Some(span) = spans.as_ref().map(|s| &s[i]) {
            let kiln = cycles_of(kernels, span);
            let _ = writeln!(s, "{n}\t{k}_op_{i:02}_kiln_cycles\t{kiln}");
        }
    }
    s
}

#[cfg(test)]
mod tests;
