//! KISS FFT as graph ops: version 130, the one TFLM's signal library builds its `SignalRfft` and
//! `SignalIrfft` on. The mixed-radix complex transform (radix 4, 2, 3 and 5 butterflies, a
//! generic one for larger primes) and the real-signal wrapper around it, in KISS FFT's three
//! number formats.
//!
//! The fixed-point formats follow KISS FFT's arithmetic step by step, so that they equal TFLM
//! bit for bit: each radix-`p` stage first scales its inputs by `(SAMP_MAX / p)` with rounding
//! (`C_FIXDIV`), every product is rounded half up back to the stored width (`sround`), and every
//! sum is stored in the narrow type, wrapping as C's store does. Twiddle factors are computed
//! the way `kf_cexp` computes them, in double precision, and kept in flash in the stored type.

use crate::dtype::DType;
use crate::graph::tensor::broadcast_to;
use crate::graph::{Graph, GraphError, Lazy};
use crate::ops::BinaryOp;
use crate::tensor::Tensor;
use std::f64::consts::PI;

type R<T> = Result<T, GraphError>;

/// KISS FFT's number formats: `FIXED_POINT=16`, `FIXED_POINT=32`, or `float`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Format {
    Q15,
    Q31,
    Float,
}

impl Format {
    /// The type values are stored in (`kiss_fft_scalar`).
    pub(super) fn stored(self) -> DType {
        match self {
            Format::Q15 => DType::I16,
            Format::Q31 => DType::I32,
            Format::Float => DType::F32,
        }
    }

    /// The type products are computed in (`SAMPPROD`).
    fn product(self) -> DType {
        match self {
            Format::Q15 => DType::I32,
            Format::Q31 => DType::I64,
            Format::Float => DType::F32,
        }
    }

    fn frac_bits(self) -> i64 {
        match self {
            Format::Q15 => 15,
            Format::Q31 => 31,
            Format::Float => 0,
        }
    }

    fn samp_max(self) -> i64 {
        match self {
            Format::Q15 => i16::MAX.into(),
            Format::Q31 => i32::MAX.into(),
            Format::Float => 1,
        }
    }

    /// `kf_cexp(phase)`: the twiddle factor `(cos, sin)` as KISS FFT stores it.
    pub(super) fn cexp(self, phase: f64) -> (f64, f64) {
        match self {
            Format::Float => (phase.cos() as f32 as f64, phase.sin() as f32 as f64),
            _ => {
                let s = self.samp_max() as f64;
                (
                    (0.5 + s * phase.cos()).floor(),
                    (0.5 + s * phase.sin()).floor(),
                )
            }
        }
    }
}

/// A complex tensor, as two tensors of the stored type.
#[derive(Clone, Debug)]
pub(super) struct Cx {
    pub re: Lazy,
    pub im: Lazy,
}

/// `kf_factor`: the stages `(p, m)` of an `n`-point transform, outermost first (`p · m` is the
/// previous stage's `m`). Fours first, then twos, then odd factors up to `⌊√n⌋`, then the rest.
pub(super) fn factors(n: usize) -> Vec<(usize, usize)> {
    let floor_sqrt = (n as f64).sqrt().floor() as usize;
    let (mut n, mut p, mut out) = (n, 4, Vec::new());
    loop {
        while n % p != 0 {
            p = match p {
                4 => 2,
                2 => 3,
                _ => p + 2,
            };
            if p > floor_sqrt {
                p = n;
            }
        }
        n /= p;
        out.push((p, n));
        if n <= 1 {
            return out;
        }
    }
}

/// The transforms of one operator: the graph, the number format, and a name for its tables.
pub(super) struct Kiss<'g> {
    pub g: &'g mut Graph,
    pub format: Format,
    pub name: String,
    pub inverse: bool,
}

impl Kiss<'_> {
    fn fixed(&self) -> bool {
        self.format != Format::Float
    }

    fn add(&mut self, a: &Lazy, b: &Lazy) -> R<Lazy> {
        self.g.binary(BinaryOp::Add, a, b)
    }

    fn sub(&mut self, a: &Lazy, b: &Lazy) -> R<Lazy> {
        self.g.binary(BinaryOp::Sub, a, b)
    }

    pub(super) fn cadd(&mut self, a: &Cx, b: &Cx) -> R<Cx> {
        Ok(Cx {
            re: self.add(&a.re, &b.re)?,
            im: self.add(&a.im, &b.im)?,
        })
    }

    pub(super) fn csub(&mut self, a: &Cx, b: &Cx) -> R<Cx> {
        Ok(Cx {
            re: self.sub(&a.re, &b.re)?,
            im: self.sub(&a.im, &b.im)?,
        })
    }

    pub(super) fn neg(&mut self, x: &Lazy) -> R<Lazy> {
        self.g.neg(x)
    }

    fn widen(&mut self, x: &Lazy) -> Lazy {
        let t = self.format.product();
        if x.dtype == t {
            x.clone()
        } else {
            self.g.cast(x, t)
        }
    }

    /// `sround`: a product back to the stored type, rounded half up.
    fn sround(&mut self, x: &Lazy) -> R<Lazy> {
        if !self.fixed() {
            return Ok(x.clone());
        }
        let f = self.format.frac_bits();
        let y = self.g.int_scalar(BinaryOp::Add, x, 1 << (f - 1))?;
        let y = self.g.int_scalar(BinaryOp::Shr, &y, f)?;
        Ok(self.g.cast(&y, self.format.stored()))
    }

    /// `S_MUL(x, s)` by a constant `s` of the stored format.
    fn scale(&mut self, x: &Lazy, s: f64) -> R<Lazy> {
        let w = self.widen(x);
        let c = self.g.constant(s, self.format.product(), w.shape());
        let p = self.g.binary(BinaryOp::Mul, &w, &c)?;
        self.sround(&p)
    }

    fn cscale(&mut self, x: &Cx, s: f64) -> R<Cx> {
        Ok(Cx {
            re: self.scale(&x.re, s)?,
            im: self.scale(&x.im, s)?,
        })
    }

    /// `C_FIXDIV(x, p)`: the fixed-point formats divide by `p` as a rounded product with
    /// `SAMP_MAX / p`; float leaves `x` as it is.
    pub(super) fn fixdiv(&mut self, x: &Cx, p: usize) -> R<Cx> {
        if !self.fixed() {
            return Ok(x.clone());
        }
        self.cscale(x, (self.format.samp_max() / p as i64) as f64)
    }

    /// `C_MUL(a, w)`.
    pub(super) fn cmul(&mut self, a: &Cx, w: &Cx) -> R<Cx> {
        let (ar, ai) = (self.widen(&a.re), self.widen(&a.im));
        let (wr, wi) = (self.widen(&w.re), self.widen(&w.im));
        let g = &mut *self.g;
        let rr = g.binary(BinaryOp::Mul, &ar, &wr)?;
        let ii = g.binary(BinaryOp::Mul, &ai, &wi)?;
        let ri = g.binary(BinaryOp::Mul, &ar, &wi)?;
        let ir = g.binary(BinaryOp::Mul, &ai, &wr)?;
        let re = g.binary(BinaryOp::Sub, &rr, &ii)?;
        let im = g.binary(BinaryOp::Add, &ri, &ir)?;
        Ok(Cx {
            re: self.sround(&re)?,
            im: self.sround(&im)?,
        })
    }

    /// `HALF_OF(a ± b)`: the sum in C's `int` (float: in float), halved, stored.
    pub(super) fn half(&mut self, a: &Lazy, b: &Lazy, op: BinaryOp) -> R<Lazy> {
        if !self.fixed() {
            let s = self.g.binary(op, a, b)?;
            return self.g.mul_scalar(&s, 0.5);
        }
        let (a, b) = (self.g.cast(a, DType::I32), self.g.cast(b, DType::I32));
        let s = self.g.binary(op, &a, &b)?;
        let h = self.g.int_scalar(BinaryOp::Shr, &s, 1)?;
        Ok(self.g.cast(&h, self.format.stored()))
    }

    /// `kf_cexp(±2π k / n)` for each `k` of each row of `ks`, as complex constants along the
    /// last axis of `to`, one per row.
    fn twiddles(&mut self, n: usize, ks: &[Vec<usize>], to: &[usize]) -> R<Vec<Cx>> {
        let sign = if self.inverse { 1.0 } else { -1.0 };
        let rows: Vec<Vec<(f64, f64)>> = ks
            .iter()
            .map(|row| {
                row.iter()
                    .map(|&k| self.format.cexp(sign * (2.0 * PI * k as f64) / n as f64))
                    .collect()
            })
            .collect();
        self.table(&rows, to)
    }

    /// Rows of complex constants, each along the last axis of `to`: one table in flash, in the
    /// stored type, `(re, im)` interleaved.
    pub(super) fn table(&mut self, rows: &[Vec<(f64, f64)>], to: &[usize]) -> R<Vec<Cx>> {
        let width = rows.first().map_or(0, Vec::len);
        let values: Vec<f64> = rows.iter().flatten().flat_map(|w| [w.0, w.1]).collect();
        let shape = vec![rows.len(), width, 2];
        let t = Tensor::from_f64(self.format.stored().scalar, shape, &values)
            .expect("one value per element");
        let w = self.g.weight(&format!("{}/twiddles", self.name), t);
        let mut lead = vec![1; to.len()];
        if let Some(last) = lead.last_mut() {
            *last = width;
        }
        let pick = |r: usize, j: usize| -> R<Lazy> {
            let x = w.shrink(&[(r, r + 1), (0, width), (j, j + 1)])?;
            broadcast_to(&x.reshape(&lead)?, to)
        };
        (0..rows.len())
            .map(|r| {
                Ok(Cx {
                    re: pick(r, 0)?,
                    im: pick(r, 1)?,
                })
            })
            .collect()
    }

    /// The `n`-point complex transform of `x` (shape `[batch, n]`), unscaled in float, scaled by
    /// `1/n` through the stages' `C_FIXDIV` in fixed point, as `kiss_fft` computes it.
    pub(super) fn transform(&mut self, x: &Cx) -> R<Cx> {
        let (b, n) = (x.re.shape()[0], x.re.shape()[1]);
        let stages = factors(n);
        // Decimation in time: the input in the order of its digits reversed, then the
        // butterflies from the innermost stage outwards.
        let mut digits = vec![b];
        digits.extend(stages.iter().rev().map(|&(p, _)| p));
        let mut order = vec![0];
        order.extend((1..digits.len()).rev());
        let reorder =
            |v: &Lazy| -> R<Lazy> { v.reshape(&digits)?.permute(&order)?.reshape(&[b, n]) };
        let mut y = Cx {
            re: reorder(&x.re)?,
            im: reorder(&x.im)?,
        };
        for (i, &(p, m)) in stages.iter().enumerate().rev() {
            let fstride: usize = stages[..i].iter().map(|&(p, _)| p).product();
            y = self.stage(&y, n, p, m, fstride)?;
        }
        Ok(y)
    }

    /// One stage: `fstride` blocks of `p` sub-transforms of `m` points, combined.
    fn stage(&mut self, y: &Cx, n: usize, p: usize, m: usize, fstride: usize) -> R<Cx> {
        let b = y.re.shape()[0];
        let blocks = [b, fstride, p, m];
        let part = |v: &Lazy, k: usize| -> R<Lazy> {
            v.reshape(&blocks)?
                .shrink(&[(0, b), (0, fstride), (k, k + 1), (0, m)])?
                .reshape(&[b, fstride, m])
        };
        let mut parts = Vec::with_capacity(p);
        for k in 0..p {
            let x = Cx {
                re: part(&y.re, k)?,
                im: part(&y.im, k)?,
            };
            parts.push(self.fixdiv(&x, p)?);
        }
        let at = Stage { n, m, fstride };
        let out = match p {
            2 => self.bfly2(&parts, at)?,
            3 => self.bfly3(&parts, at)?,
            4 => self.bfly4(&parts, at)?,
            5 => self.bfly5(&parts, at)?,
            _ => self.bfly_generic(&parts, at)?,
        };
        let (re, im): (Vec<Lazy>, Vec<Lazy>) = out.into_iter().map(|c| (c.re, c.im)).unzip();
        Ok(Cx {
            re: stack(self.g, re, [b, fstride, m])?.reshape(&[b, n])?,
            im: stack(self.g, im, [b, fstride, m])?.reshape(&[b, n])?,
        })
    }

    /// The stage's twiddles for parts `1 .. p`: `w[k · u · fstride]` for each position `u`.
    fn stage_twiddles(&mut self, at: Stage, p: usize, to: &[usize]) -> R<Vec<Cx>> {
        let ks: Vec<Vec<usize>> = (1..p)
            .map(|k| (0..at.m).map(|u| (k * u * at.fstride) % at.n).collect())
            .collect();
        self.twiddles(at.n, &ks, to)
    }

    /// `w[j]` as a constant, for the radix-3 and radix-5 butterflies.
    fn twiddle(&mut self, n: usize, j: usize) -> (f64, f64) {
        let sign = if self.inverse { 1.0 } else { -1.0 };
        self.format.cexp(sign * (2.0 * PI * j as f64) / n as f64)
    }

    /// The parts after the first, each times its twiddles.
    fn rotated(&mut self, f: &[Cx], at: Stage) -> R<Vec<Cx>> {
        let shape = f[0].re.shape().to_vec();
        let w = self.stage_twiddles(at, f.len(), &shape)?;
        f[1..]
            .iter()
            .zip(&w)
            .map(|(x, w)| self.cmul(x, w))
            .collect()
    }

    fn bfly2(&mut self, f: &[Cx], at: Stage) -> R<Vec<Cx>> {
        let t = self.rotated(f, at)?.remove(0);
        Ok(vec![self.cadd(&f[0], &t)?, self.csub(&f[0], &t)?])
    }

    fn bfly4(&mut self, f: &[Cx], at: Stage) -> R<Vec<Cx>> {
        let s = self.rotated(f, at)?;
        let s5 = self.csub(&f[0], &s[1])?;
        let f0 = self.cadd(&f[0], &s[1])?;
        let s3 = self.cadd(&s[0], &s[2])?;
        let s4 = self.csub(&s[0], &s[2])?;
        let f2 = self.csub(&f0, &s3)?;
        let f0 = self.cadd(&f0, &s3)?;
        // Forward: s5 ∓ i·s4 (f1 = s5 − i·s4, f3 = s5 + i·s4); inverse the other way round.
        let minus = Cx {
            re: self.add(&s5.re, &s4.im)?,
            im: self.sub(&s5.im, &s4.re)?,
        };
        let plus = Cx {
            re: self.sub(&s5.re, &s4.im)?,
            im: self.add(&s5.im, &s4.re)?,
        };
        let (f1, f3) = if self.inverse {
            (plus, minus)
        } else {
            (minus, plus)
        };
        Ok(vec![f0, f1, f2, f3])
    }

    fn bfly3(&mut self, f: &[Cx], at: Stage) -> R<Vec<Cx>> {
        let epi3 = self.twiddle(at.n, at.fstride * at.m).1;
        let s = self.rotated(f, at)?;
        let s3 = self.cadd(&s[0], &s[1])?;
        let s0 = self.csub(&s[0], &s[1])?;
        let half = |k: &mut Self, x: &Lazy| -> R<Lazy> {
            if k.fixed() {
                k.g.int_scalar(BinaryOp::Shr, x, 1)
            } else {
                k.g.mul_scalar(x, 0.5)
            }
        };
        let h = Cx {
            re: half(self, &s3.re)?,
            im: half(self, &s3.im)?,
        };
        let f1 = self.csub(&f[0], &h)?;
        let s0 = self.cscale(&s0, epi3)?;
        let f0 = self.cadd(&f[0], &s3)?;
        let f2 = Cx {
            re: self.add(&f1.re, &s0.im)?,
            im: self.sub(&f1.im, &s0.re)?,
        };
        let f1 = Cx {
            re: self.sub(&f1.re, &s0.im)?,
            im: self.add(&f1.im, &s0.re)?,
        };
        Ok(vec![f0, f1, f2])
    }

    fn bfly5(&mut self, f: &[Cx], at: Stage) -> R<Vec<Cx>> {
        let ya = self.twiddle(at.n, at.fstride * at.m);
        let yb = self.twiddle(at.n, 2 * at.fstride * at.m);
        let s = self.rotated(f, at)?;
        let s7 = self.cadd(&s[0], &s[3])?;
        let s10 = self.csub(&s[0], &s[3])?;
        let s8 = self.cadd(&s[1], &s[2])?;
        let s9 = self.csub(&s[1], &s[2])?;
        let sum = self.cadd(&s7, &s8)?;
        let f0 = self.cadd(&f[0], &sum)?;
        // s5, s6 (f1, f4) with (ya, yb); s11, s12 (f2, f3) with (yb, ya).
        let pair = |k: &mut Self, y1: (f64, f64), y2: (f64, f64), sign: f64| -> R<(Cx, Cx)> {
            let a = k.cscale(&s7, y1.0)?;
            let b = k.cscale(&s8, y2.0)?;
            let ab = k.cadd(&a, &b)?;
            let c5 = k.cadd(&f[0], &ab)?;
            let (p, q) = (k.scale(&s10.im, y1.1)?, k.scale(&s9.im, y2.1)?);
            let (r, t) = (k.scale(&s10.re, y1.1)?, k.scale(&s9.re, y2.1)?);
            let c6 = if sign > 0.0 {
                let re = k.add(&p, &q)?;
                let n = k.neg(&r)?;
                let im = k.sub(&n, &t)?;
                Cx { re, im }
            } else {
                let n = k.neg(&p)?;
                let re = k.add(&n, &q)?;
                let im = k.sub(&r, &t)?;
                Cx { re, im }
            };
            Ok((c5, c6))
        };
        let (s5, s6) = pair(self, ya, yb, 1.0)?;
        let (s11, s12) = pair(self, yb, ya, -1.0)?;
        let f1 = self.csub(&s5, &s6)?;
        let f4 = self.cadd(&s5, &s6)?;
        let f2 = self.cadd(&s11, &s12)?;
        let f3 = self.csub(&s11, &s12)?;
        Ok(vec![f0, f1, f2, f3, f4])
    }

    /// Any other radix: output `q1` is `f[0] + Σ_q f[q] · w[q · fstride · (u + q1 · m) mod n]`.
    fn bfly_generic(&mut self, f: &[Cx], at: Stage) -> R<Vec<Cx>> {
        let p = f.len();
        let shape = f[0].re.shape().to_vec();
        let ks: Vec<Vec<usize>> = (0..p)
            .flat_map(|q1| {
                (1..p).map(move |q| {
                    (0..at.m)
                        .map(|u| (q * at.fstride * (u + q1 * at.m)) % at.n)
                        .collect()
                })
            })
            .collect();
        let w = self.twiddles(at.n, &ks, &shape)?;
        let mut out = Vec::with_capacity(p);
        for q1 in 0..p {
            let mut acc = f[0].clone();
            for (q, x) in f.iter().enumerate().skip(1) {
                let t = self.cmul(x, &w[q1 * (p - 1) + q - 1])?;
                acc = self.cadd(&acc, &t)?;
            }
            out.push(acc);
        }
        Ok(out)
    }
}

/// The parts (each `[b, fstride, m]`) side by side as `[b, fstride, parts, m]`.
fn stack(g: &mut Graph, parts: Vec<Lazy>, [b, fstride, m]: [usize; 3]) -> R<Lazy> {
    let parts: Vec<Lazy> = parts
        .iter()
        .map(|x| x.reshape(&[b, fstride, 1, m]))
        .collect::<R<_>>()?;
    g.concat(&parts, 2)
}

/// Where a stage stands in its transform.
#[derive(Clone, Copy)]
struct Stage {
    n: usize,
    m: usize,
    fstride: usize,
}

#[cfg(test)]
mod tests {
    use super::{factors, Cx, Format, Kiss};
    use crate::dtype::{DType, Scalar};
    use crate::graph::eval::evaluate;
    use crate::graph::Graph;
    use crate::tensor::Tensor;

    #[test]
    fn factors_follow_kiss_fft() {
        assert_eq!(factors(256), vec![(4, 64), (4, 16), (4, 4), (4, 1)]);
        assert_eq!(factors(128), vec![(4, 32), (4, 8), (4, 2), (2, 1)]);
        assert_eq!(factors(24), vec![(4, 6), (2, 3), (3, 1)]);
        assert_eq!(factors(20), vec![(4, 5), (5, 1)]);
        assert_eq!(factors(14), vec![(2, 7), (7, 1)]);
        assert_eq!(factors(1), vec![(1, 1)]);
    }

    /// The float transform of two frames against a naive DFT (`exp(∓2πi jk / n)`), at lengths
    /// that take every butterfly (the generic one at 7, 11 and 49).
    #[test]
    fn float_transforms_equal_a_dft() {
        for n in [1, 2, 3, 4, 5, 8, 12, 20, 24, 7, 14, 49, 66] {
            for inverse in [false, true] {
                let x: Vec<f64> = (0..4 * n)
                    .map(|i| ((i * 37 + 11) % 23) as f64 / 7.0 - 1.5)
                    .collect();
                let (re, im) = (&x[..2 * n], &x[2 * n..]);
                let mut g = Graph::new();
                let xr = g.input("re", DType::F32, &[2, n]);
                let xi = g.input("im", DType::F32, &[2, n]);
                let mut k = Kiss {
                    g: &mut g,
                    format: Format::Float,
                    name: "fft".into(),
                    inverse,
                };
                let y = k.transform(&Cx { re: xr, im: xi }).expect("a transform");
                let ins = [
                    Tensor::from_f64(Scalar::F32, vec![2, n], re).unwrap(),
                    Tensor::from_f64(Scalar::F32, vec![2, n], im).unwrap(),
                ];
                let out = evaluate(&g, &[y.re, y.im], &ins).expect("evaluates");
                let (got_re, got_im) = (out[0].to_f64(), out[1].to_f64());
                let sign = if inverse { 1.0 } else { -1.0 };
                for f in 0..2 {
                    for j in 0..n {
                        let (mut sr, mut si) = (0.0, 0.0);
                        for t in 0..n {
                            let a = sign * 2.0 * std::f64::consts::PI * (j * t) as f64 / n as f64;
                            let (xr, xi) = (re[f * n + t], im[f * n + t]);
                            sr += xr * a.cos() - xi * a.sin();
                            si += xr * a.sin() + xi * a.cos();
                        }
                        let (gr, gi) = (got_re[f * n + j], got_im[f * n + j]);
                        let tol = 1e-4 * (1.0 + n as f64);
                        assert!(
                            (gr - sr).abs() < tol && (gi - si).abs() < tol,
                            "n {n} inverse {inverse} frame {f} bin {j}: ({gr}, {gi}), want ({sr}, {si})"
                        );
                    }
                }
            }
        }
    }
}
