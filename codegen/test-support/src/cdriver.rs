//! Compiles many rendered kernels into one host program with the system C compiler, runs it
//! on their inputs and returns their outputs.

use kiln_codegen::dtype::DType;
use kiln_codegen::render::{Linkage, Program};
use std::fmt::Write;
use std::path::Path;
use std::process::Command;

/// One kernel call: its program and the contents of each parameter buffer, in `data0`,
/// `data1`, … order (the outputs' initial contents included).
pub struct Call {
    pub program: Program,
    pub buffers: Vec<(DType, Vec<f64>)>,
}

fn encode(dtype: DType, v: &[f64], out: &mut Vec<u8>) {
    for &x in v {
        if dtype.is_int() {
            out.extend_from_slice(&(x as i32).to_le_bytes());
        } else {
            out.extend_from_slice(&(x as f32).to_le_bytes());
        }
    }
}

fn decode(dtype: DType, b: &[u8]) -> Vec<f64> {
    b.chunks_exact(4)
        .map(|c| {
            let a = [c[0], c[1], c[2], c[3]];
            if dtype.is_int() {
                i32::from_le_bytes(a) as f64
            } else {
                f32::from_le_bytes(a) as f64
            }
        })
        .collect()
}

/// Runs every call; returns, per call, the final contents of its first buffer (`data0`).
pub fn run_batch(dir: &Path, calls: &[Call]) -> Vec<Vec<f64>> {
    let mut src = String::from("#include <stdio.h>\n#include <stdlib.h>\n");
    let mut main = String::from(
        "static void* rd(FILE* f, size_t n) { void* p = calloc(n ? n : 1, 1); \
         if (fread(p, 1, n, f) != n) exit(3); return p; }\n\
         int main(int argc, char** argv) {\n  FILE* fi = fopen(argv[1], \"rb\");\n  \
         FILE* fo = fopen(argv[2], \"wb\");\n  if (!fi || !fo) return 2;\n",
    );
    let mut input = Vec::new();
    for (i, c) in calls.iter().enumerate() {
        let name = format!("k_{i}");
        src.push_str(&c.program.source.with_name(&name, Linkage::External));
        let _ = writeln!(main, "  {{");
        let mut args = Vec::new();
        for (j, (dt, data)) in c.buffers.iter().enumerate() {
            let _ = writeln!(main, "    void* b{j} = rd(fi, {});", data.len() * 4);
            args.push(format!("b{j}"));
            encode(*dt, data, &mut input);
            let _ = dt;
        }
        let _ = writeln!(main, "    {name}({});", args.join(", "));
        let _ = writeln!(main, "    fwrite(b0, 1, {}, fo);", c.buffers[0].1.len() * 4);
        for a in &args {
            let _ = writeln!(main, "    free({a});");
        }
        let _ = writeln!(main, "  }}");
    }
    main.push_str("  fclose(fo);\n  return 0;\n}\n");
    src.push_str(&main);
    std::fs::create_dir_all(dir).expect("temp dir");
    let (c_path, bin, inp, outp) = (
        dir.join("k.c"),
        dir.join("k"),
        dir.join("in.bin"),
        dir.join("out.bin"),
    );
    std::fs::write(&c_path, &src).expect("write C");
    std::fs::write(&inp, &input).expect("write input");
    let cc = Command::new("cc")
        .args([
            "-O1",
            "-std=gnu11",
            "-fno-math-errno",
            "-Wall",
            "-Werror",
            "-Wno-unused-variable",
            "-o",
        ])
        .arg(&bin)
        .arg(&c_path)
        .arg("-lm")
        .output()
        .expect("run the system C compiler `cc`");
    assert!(
        cc.status.success(),
        "C compile failed:\n{}\nsource: {}",
        String::from_utf8_lossy(&cc.stderr),
        c_path.display()
    );
    let run = Command::new(&bin)
        .arg(&inp)
        .arg(&outp)
        .output()
        .expect("run the kernels");
    assert!(
        run.status.success(),
        "kernel program failed: {:?}",
        run.status
    );
    let out = std::fs::read(&outp).expect("read output");
    let mut pos = 0;
    calls
        .iter()
        .map(|c| {
            let n = c.buffers[0].1.len() * 4;
            let v = decode(c.buffers[0].0, &out[pos..pos + n]);
            pos += n;
            v
        })
        .collect()
}
