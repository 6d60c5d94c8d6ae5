//! `kiln explain`: a kernel as AST → UOps → source.

use anyhow::{bail, Context, Result};
use kiln_codegen::dtype::DType;
use kiln_codegen::kernel::{Kernel, KernelBuffer, Opt, OptOp};
use kiln_codegen::ops::{AluOp, BinaryOp, ReduceOp};
use kiln_codegen::render::{to_program, Program};
use kiln_codegen::schedule::ast::LazyOp;
use kiln_codegen::shape::ShapeTracker;
use kiln_codegen::target::Target;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// Built-in example kernel: `matvec` (y = W·x + b, relu), `softmax-max` (row max) or
    /// `conv` (a 3×3 convolution of an 8×8 image with zero padding, 2 → 8 channels).
    #[arg(long, default_value = "matvec")]
    example: String,
    /// Target: `c` (loops only), `host` (loops, reduces over this CPU's float vectors; the
    /// example's weights are constants only this kernel reads) or `threaded` (a GPU-like device
    /// with local memory).
    #[arg(long, default_value = "c")]
    target: String,
    /// Optimizations to apply, each `OP:AXIS:AMOUNT` (e.g. `upcast:0:4`, `unroll:0:4`,
    /// `local:0:8`, `group:0:16`, `padto:1:8`), or `interior` (no axis or amount).
    #[arg(long = "opt")]
    opts: Vec<String>,
}

fn example(name: &str) -> Result<Vec<LazyOp>> {
    let f = DType::F32;
    Ok(match name {
        "matvec" => {
            let (m, k) = (16, 64);
            let w = LazyOp::load(1, f, ShapeTracker::from_shape(&[m, k]));
            let x = LazyOp::load(2, f, ShapeTracker::from_shape(&[1, k]).expand(&[m, k])?);
            let mul = LazyOp::alu(AluOp::Binary(BinaryOp::Mul), vec![w, x]);
            let sum = LazyOp::reduce(ReduceOp::Sum, vec![1], mul);
            let b = LazyOp::load(3, f, ShapeTracker::from_shape(&[m, 1]));
            let add = LazyOp::alu(AluOp::Binary(BinaryOp::Add), vec![sum, b]);
            let zero = LazyOp::constant(
                kiln_codegen::ops::ConstValue::zero(f),
                f,
                ShapeTracker::from_shape(&[1, 1]).expand(&[m, 1])?,
            );
            let relu = LazyOp::alu(AluOp::Binary(BinaryOp::Max), vec![add, zero]);
            vec![LazyOp::store(0, ShapeTracker::from_shape(&[m, 1]), relu)]
        }
        "softmax-max" => {
            let x = LazyOp::load(1, f, ShapeTracker::from_shape(&[8, 10]));
            let m = LazyOp::reduce(ReduceOp::Max, vec![1], x);
            vec![LazyOp::store(0, ShapeTracker::from_shape(&[8, 1]), m)]
        }
        "conv" => kiln_codegen::kernel::examples::conv2d(2, 8, [8, 8], 3, 1, Target::c()).ast,
        other => bail!("unknown example `{other}` (try `matvec`, `softmax-max` or `conv`)"),
    })
}

/// Parses `OP:AXIS:AMOUNT`.
pub fn parse_opt(s: &str) -> Result<Opt> {
    let parts: Vec<&str> = s.split(':').collect();
    let op = match parts[0].to_ascii_lowercase().as_str() {
        "upcast" => OptOp::Upcast,
        "unroll" => OptOp::Unroll,
        "dot" => OptOp::Dot,
        "local" => OptOp::Local,
        "group" => OptOp::Group,
        "grouptop" => OptOp::GroupTop,
        "padto" => OptOp::PadTo,
        "nolocals" => {
            return Ok(Opt {
                op: OptOp::NoLocals,
                axis: None,
                amt: 0,
            })
        }
        "interior" => return Ok(Opt::interior()),
        other => bail!("unknown opt `{other}` in `{s}`"),
    };
    if parts.len() != 3 {
        bail!("opt `{s}` must be OP:AXIS:AMOUNT");
    }
    let axis = parts[1].parse().with_context(|| format!("axis of `{s}`"))?;
    let amt = parts[2]
        .parse()
        .with_context(|| format!("amount of `{s}`"))?;
    Ok(Opt::new(op, axis, amt))
}

/// The example kernel `example` for the target named `target`, with `opts` applied, and its
/// program.
fn explained(example_name: &str, target: &str, opts: &[String]) -> Result<(Kernel, Program)> {
    let t = match target {
        "c" => Target::c(),
        "host" => Target::host(),
        "threaded" => Target::threaded(vec![65535, 65535, 65535], vec![256, 256, 64]),
        other => bail!("unknown target `{other}` (try `c`, `host` or `threaded`)"),
    };
    let mut k = Kernel::new(example(example_name)?, t)?;
    if target == "host" {
        // The example's contiguous loads are its weights: free to be laid out for the lanes.
        k.free_layout = k
            .bufs
            .iter()
            .enumerate()
            .filter(|(i, b)| *i > 0 && matches!(b, KernelBuffer::Mem(_)) && k.sts[*i].contiguous())
            .map(|(i, _)| (i, k.sts[i].size()))
            .collect();
    }
    for o in opts {
        k.apply_opt(parse_opt(o)?)?;
    }
    let k = k.laid_out().0;
    let p = to_program(&k)?;
    Ok((k, p))
}

pub fn run(a: Args) -> Result<ExitCode> {
    let (k, p) = explained(&a.example, &a.target, &a.opts)?;
    println!("== AST\n{}", p.ast);
    println!(
        "== kernel {}: full shape {:?}, first_reduce {}, local_dims {}, group_for_reduces {}, upcasted {}",
        p.name,
        k.full_shape(),
        k.first_reduce(),
        k.local_dims,
        k.group_for_reduces,
        k.upcasted
    );
    println!("== UOps\n{}", p.uops.listing());
    println!(
        "== source ({} FLOPs, {} bytes moved)\n{}",
        p.flops, p.mem_bytes, p.src
    );
    if let (Some(g), Some(l)) = (&p.global_size, &p.local_size) {
        println!("global size {g:?}, local size {l:?}");
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_target_shows_the_matvec_over_vector_lanes() {
        let (k, p) = explained("matvec", "host", &["upcast:0:8".into()]).unwrap();
        assert!(k.vector_axis().is_some());
        assert!(p.src.contains("float8 acc0"), "{}", p.src);
        assert!(
            p.src.contains("*((float8*)(data1+"),
            "W as vectors: {}",
            p.src
        );
        let (_, plain) = explained("matvec", "c", &["upcast:0:8".into()]).unwrap();
        assert!(!plain.src.contains("float8"));
        assert!(explained("matvec", "tpu", &[]).is_err());
    }
}
