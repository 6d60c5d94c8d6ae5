//! Tensor-level operations built from the graph's primitives: broadcasting arithmetic, math
//! functions, reductions, matmul, convolution and pooling (as views + multiply + reduce).

use super::{Graph, GraphError, Lazy};
use crate::dtype::DType;
use crate::ops::{AluOp, BinaryOp, ReduceOp, TernaryOp, UnaryOp};
use crate::shape::View;

/// The numpy broadcast of two shapes.
pub fn broadcast_shape(
    op: &'static str,
    a: &[usize],
    b: &[usize],
) -> Result<Vec<usize>, GraphError> {
    let n = a.len().max(b.len());
    let pad = |s: &[usize]| -> Vec<usize> {
        std::iter::repeat_n(1, n - s.len())
            .chain(s.iter().copied())
            .collect()
    };
    let (pa, pb) = (pad(a), pad(b));
    pa.iter()
        .zip(&pb)
        .map(|(&x, &y)| match (x, y) {
            (x, y) if x == y => Ok(x),
            (1, y) => Ok(y),
            (x, 1) => Ok(x),
            _ => Err(GraphError::Broadcast {
                op,
                a: a.to_vec(),
                b: b.to_vec(),
            }),
        })
        .collect()
}

/// `x` broadcast to `shape` (leading 1s added, size-1 axes expanded).
pub fn broadcast_to(x: &Lazy, shape: &[usize]) -> Result<Lazy, GraphError> {
    if x.shape() == shape {
        return Ok(x.clone());
    }
    if x.shape().len() > shape.len() {
        return Err(GraphError::Broadcast {
            op: "broadcast",
            a: x.shape().to_vec(),
            b: shape.to_vec(),
        });
    }
    let mut s = vec![1; shape.len() - x.shape().len()];
    s.extend_from_slice(x.shape());
    let r = x.reshape(&s)?;
    r.expand(shape)
}

/// Normalizes a possibly negative axis.
pub fn axis(op: &'static str, a: i64, rank: usize) -> Result<usize, GraphError> {
    let r = rank as i64;
    let v = if a < 0 { a + r } else { a };
    if v < 0 || v >= r.max(1) {
        return Err(GraphError::Axis { op, axis: a, rank });
    }
    Ok(v as usize)
}

impl Graph {
    /// A binary op with numpy broadcasting.
    pub fn binary(&mut self, op: BinaryOp, a: &Lazy, b: &Lazy) -> Result<Lazy, GraphError> {
        let shape = broadcast_shape("binary op", a.shape(), b.shape())?;
        let (a, b) = (broadcast_to(a, &shape)?, broadcast_to(b, &shape)?);
        self.alu(AluOp::Binary(op), &[a, b])
    }

    pub fn unary(&mut self, op: UnaryOp, x: &Lazy) -> Result<Lazy, GraphError> {
        self.alu(AluOp::Unary(op), std::slice::from_ref(x))
    }

    /// `cond ? a : b` with broadcasting.
    pub fn where_(&mut self, cond: &Lazy, a: &Lazy, b: &Lazy) -> Result<Lazy, GraphError> {
        let s = broadcast_shape("where", cond.shape(), a.shape())?;
        let s = broadcast_shape("where", &s, b.shape())?;
        let c = broadcast_to(cond, &s)?;
        let c = if c.dtype == DType::BOOL {
            c
        } else {
            self.ne_zero(&c)?
        };
        let (a, b) = (broadcast_to(a, &s)?, broadcast_to(b, &s)?);
        self.alu(AluOp::Ternary(TernaryOp::Where), &[c, a, b])
    }

    fn ne_zero(&mut self, x: &Lazy) -> Result<Lazy, GraphError> {
        let z = self.constant(0.0, x.dtype, x.shape());
        self.alu(AluOp::Binary(BinaryOp::CmpNe), &[x.clone(), z])
    }

    /// A scalar of `x`'s type, broadcast like `x`.
    pub fn scalar_like(&mut self, x: &Lazy, v: f64) -> Lazy {
        self.constant(v, x.dtype, x.shape())
    }

    pub fn add_scalar(&mut self, x: &Lazy, v: f64) -> Result<Lazy, GraphError> {
        let c = self.scalar_like(x, v);
        self.alu(AluOp::Binary(BinaryOp::Add), &[x.clone(), c])
    }

    pub fn mul_scalar(&mut self, x: &Lazy, v: f64) -> Result<Lazy, GraphError> {
        let c = self.scalar_like(x, v);
        self.alu(AluOp::Binary(BinaryOp::Mul), &[x.clone(), c])
    }

    pub fn max_scalar(&mut self, x: &Lazy, v: f64) -> Result<Lazy, GraphError> {
        let c = self.scalar_like(x, v);
        self.alu(AluOp::Binary(BinaryOp::Max), &[x.clone(), c])
    }

    /// The smaller of `a` and `b`, with broadcasting: `−max(−a, −b)` for floats; a comparison
    /// for integers, where negating the type's minimum would wrap.
    pub fn min(&mut self, a: &Lazy, b: &Lazy) -> Result<Lazy, GraphError> {
        if !a.dtype.is_float() {
            let less = self.binary(BinaryOp::CmpLt, a, b)?;
            return self.where_(&less, a, b);
        }
        let (na, nb) = (self.neg(a)?, self.neg(b)?);
        let m = self.binary(BinaryOp::Max, &na, &nb)?;
        self.neg(&m)
    }

    pub fn neg(&mut self, x: &Lazy) -> Result<Lazy, GraphError> {
        self.unary(UnaryOp::Neg, x)
    }

    pub fn relu(&mut self, x: &Lazy) -> Result<Lazy, GraphError> {
        self.max_scalar(x, 0.0)
    }

    /// `min(max(x, lo), hi)`, either bound optional.
    pub fn clip(&mut self, x: &Lazy, lo: Option<f64>, hi: Option<f64>) -> Result<Lazy, GraphError> {
        let mut y = x.clone();
        if let Some(lo) = lo {
            y = self.max_scalar(&y, lo)?;
        }
        if let Some(hi) = hi {
            let c = self.scalar_like(&y, hi);
            y = self.min(&y, &c)?;
        }
        Ok(y)
    }

    pub fn exp(&mut self, x: &Lazy) -> Result<Lazy, GraphError> {
        let s = self.mul_scalar(x, std::f64::consts::LOG2_E)?;
        self.unary(UnaryOp::Exp2, &s)
    }

    pub fn log(&mut self, x: &Lazy) -> Result<Lazy, GraphError> {
        let l = self.unary(UnaryOp::Log2, x)?;
        self.mul_scalar(&l, std::f64::consts::LN_2)
    }

    pub fn sigmoid(&mut self, x: &Lazy) -> Result<Lazy, GraphError> {
        let n = self.neg(x)?;
        let e = self.exp(&n)?;
        let d = self.add_scalar(&e, 1.0)?;
        self.unary(UnaryOp::Recip, &d)
    }

    pub fn tanh(&mut self, x: &Lazy) -> Result<Lazy, GraphError> {
        let x2 = self.mul_scalar(x, 2.0)?;
        let s = self.sigmoid(&x2)?;
        let s2 = self.mul_scalar(&s, 2.0)?;
        self.add_scalar(&s2, -1.0)
    }

    /// Reduces over `axes` (kept as size 1).
    pub fn reduce_axes(
        &mut self,
        op: ReduceOp,
        x: &Lazy,
        axes: &[usize],
    ) -> Result<Lazy, GraphError> {
        self.reduce(op, x, axes)
    }

    pub fn mean(&mut self, x: &Lazy, axes: &[usize]) -> Result<Lazy, GraphError> {
        let n: usize = axes.iter().map(|&a| x.shape()[a]).product();
        let s = self.reduce(ReduceOp::Sum, x, axes)?;
        self.mul_scalar(&s, 1.0 / n.max(1) as f64)
    }

    /// Softmax over `ax`: `exp(x - max) / sum(exp(x - max))`.
    pub fn softmax(&mut self, x: &Lazy, ax: usize) -> Result<Lazy, GraphError> {
        let m = self.reduce(ReduceOp::Max, x, &[ax])?;
        let d = self.binary(BinaryOp::Sub, x, &m)?;
        let e = self.exp(&d)?;
        let s = self.reduce(ReduceOp::Sum, &e, &[ax])?;
        let r = self.unary(UnaryOp::Recip, &s)?;
        self.binary(BinaryOp::Mul, &e, &r)
    }

    /// Matrix product with numpy semantics (1-D operands promoted, batch dims broadcast).
    pub fn matmul(&mut self, a: &Lazy, b: &Lazy) -> Result<Lazy, GraphError> {
        self.matmul_in(a, b, None)
    }

    /// [`Graph::matmul`] with the products and the sum in `acc` (each operand cast to it where
    /// it is read, so that narrow weights stay narrow in flash).
    pub fn matmul_in(
        &mut self,
        a: &Lazy,
        b: &Lazy,
        acc: Option<DType>,
    ) -> Result<Lazy, GraphError> {
        let (a1, b1) = (a.shape().len() == 1, b.shape().len() == 1);
        let a2 = if a1 {
            a.reshape(&[1, a.shape()[0]])?
        } else {
            a.clone()
        };
        let b2 = if b1 {
            b.reshape(&[b.shape()[0], 1])?
        } else {
            b.clone()
        };
        let (ra, rb) = (a2.shape().len(), b2.shape().len());
        let (n, k) = (a2.shape()[ra - 2], a2.shape()[ra - 1]);
        let (k2, m) = (b2.shape()[rb - 2], b2.shape()[rb - 1]);
        if k != k2 {
            return Err(GraphError::Broadcast {
                op: "matmul",
                a: a.shape().to_vec(),
                b: b.shape().to_vec(),
            });
        }
        let batch = broadcast_shape("matmul", &a2.shape()[..ra - 2], &b2.shape()[..rb - 2])?;
        let nb = batch.len();
        let mut sa = batch.clone();
        sa.extend([n, 1, k]);
        let mut sb = batch.clone();
        sb.extend([1, m, k]);
        let mut full = batch.clone();
        full.extend([n, m, k]);
        let mut ax = a2.shape()[..ra - 2].to_vec();
        ax.extend([n, 1, k]);
        let av = broadcast_to(&a2.reshape(&ax)?, &sa)?.expand(&full)?;
        let mut perm: Vec<usize> = (0..rb - 2).collect();
        perm.extend([rb - 1, rb - 2]);
        let bt = b2.permute(&perm)?;
        let mut bx = b2.shape()[..rb - 2].to_vec();
        bx.extend([1, m, k]);
        let bv = broadcast_to(&bt.reshape(&bx)?, &sb)?.expand(&full)?;
        let (av, bv) = self.widen(av, bv, acc);
        let p = self.alu(AluOp::Binary(BinaryOp::Mul), &[av, bv])?;
        let s = self.reduce(ReduceOp::Sum, &p, &[nb + 2])?;
        let mut out = batch;
        if !a1 {
            out.push(n);
        }
        if !b1 {
            out.push(m);
        }
        s.reshape(&out)
    }

    /// Sliding windows over the last `k.len()` axes: `(..., *out, *k)`, where window `o`
    /// reads input `o * stride + k * dilation`. Pads first with `pads` (begin, end) as zeros.
    pub fn pool(
        &mut self,
        x: &Lazy,
        k: &[usize],
        stride: &[usize],
        dilation: &[usize],
        pads: &[(usize, usize)],
    ) -> Result<Lazy, GraphError> {
        let nsp = k.len();
        let rank = x.shape().len();
        let lead = rank - nsp;
        let mut arg = vec![(0, 0); lead];
        arg.extend_from_slice(pads);
        let xp = if pads.iter().any(|&(a, b)| a > 0 || b > 0) {
            x.pad(&arg)?
        } else {
            x.clone()
        };
        let shape = xp.shape().to_vec();
        let mut flat = vec![1i64; rank];
        for i in (0..rank.saturating_sub(1)).rev() {
            flat[i] = flat[i + 1] * shape[i + 1] as i64;
        }
        let mut out_shape = shape[..lead].to_vec();
        let mut strides = flat[..lead].to_vec();
        let mut outs = Vec::with_capacity(nsp);
        for i in 0..nsp {
            let span = dilation[i] * (k[i] - 1) + 1;
            if shape[lead + i] < span {
                return Err(GraphError::Invalid {
                    op: "pool",
                    reason: format!(
                        "window {span} is larger than the padded input {} on spatial axis {i}",
                        shape[lead + i]
                    ),
                });
            }
            outs.push((shape[lead + i] - span) / stride[i] + 1);
        }
        out_shape.extend(&outs);
        out_shape.extend(k);
        strides.extend((0..nsp).map(|i| flat[lead + i] * stride[i] as i64));
        strides.extend((0..nsp).map(|i| flat[lead + i] * dilation[i] as i64));
        let mut st = xp.st.clone();
        st.views
            .push(View::new(&out_shape, Some(&strides), 0, None));
        Ok(Lazy {
            st: st.simplify(),
            ..xp
        })
    }

    /// Both operands cast to `acc` where they are read (none: as they are).
    fn widen(&mut self, a: Lazy, b: Lazy, acc: Option<DType>) -> (Lazy, Lazy) {
        match acc {
            Some(t) => (self.cast(&a, t), self.cast(&b, t)),
            None => (a, b),
        }
    }

    /// N-d convolution: `x` (N, C, *spatial), `w` (O, C/groups, *k), optional bias (O).
    #[allow(clippy::too_many_arguments)]
    pub fn conv(
        &mut self,
        x: &Lazy,
        w: &Lazy,
        bias: Option<&Lazy>,
        stride: &[usize],
        dilation: &[usize],
        pads: &[(usize, usize)],
        groups: usize,
    ) -> Result<Lazy, GraphError> {
        self.conv_in(x, w, bias, stride, dilation, pads, groups, None)
    }

    /// [`Graph::conv`] with the products and the sum in `acc` (see [`Graph::matmul_in`]).
    #[allow(clippy::too_many_arguments)]
    pub fn conv_in(
        &mut self,
        x: &Lazy,
        w: &Lazy,
        bias: Option<&Lazy>,
        stride: &[usize],
        dilation: &[usize],
        pads: &[(usize, usize)],
        groups: usize,
        acc: Option<DType>,
    ) -> Result<Lazy, GraphError> {
        let (xs, ws) = (x.shape().to_vec(), w.shape().to_vec());
        let nsp = ws.len() - 2;
        let (n, cin, cout, cg) = (xs[0], xs[1], ws[0], ws[1]);
        if groups == 0 || cin != cg * groups || cout % groups != 0 || xs.len() != ws.len() {
            return Err(GraphError::Invalid {
                op: "conv",
                reason: format!("input {xs:?}, weight {ws:?} and groups {groups} do not match"),
            });
        }
        let k = &ws[2..];
        let p = self.pool(x, k, stride, dilation, pads)?;
        let o: Vec<usize> = p.shape()[2..2 + nsp].to_vec();
        let og = cout / groups;
        let mut s1 = vec![n, groups, cg, 1];
        s1.extend(&o);
        s1.extend(k);
        let mut s2 = vec![n, groups, cg, og];
        s2.extend(&o);
        s2.extend(k);
        let mut perm = vec![0, 1, 3];
        perm.extend(4..4 + nsp);
        perm.push(2);
        perm.extend(4 + nsp..4 + 2 * nsp);
        let xv = p.reshape(&s1)?.expand(&s2)?.permute(&perm)?;
        let mut wshape = vec![1, groups, og];
        wshape.extend(std::iter::repeat_n(1, nsp));
        wshape.push(cg);
        wshape.extend(k);
        let full = xv.shape().to_vec();
        let wv = w.reshape(&wshape)?.expand(&full)?;
        let (xv, wv) = self.widen(xv, wv, acc);
        let prod = self.alu(AluOp::Binary(BinaryOp::Mul), &[xv, wv])?;
        let axes: Vec<usize> = (3 + nsp..full.len()).collect();
        let s = self.reduce(ReduceOp::Sum, &prod, &axes)?;
        let mut out = vec![n, cout];
        out.extend(&o);
        let y = s.reshape(&out)?;
        match bias {
            Some(b) => {
                let mut bs = vec![1, cout];
                bs.extend(std::iter::repeat_n(1, nsp));
                let b = b.reshape(&bs)?;
                self.binary(BinaryOp::Add, &y, &b)
            }
            None => Ok(y),
        }
    }

    /// A convolution in the channels-last layout, with the products and the sum in `acc` (see
    /// [`Graph::matmul_in`]): `x` (N, C, *spatial) as [`Graph::conv`] takes it (a view of an
    /// NHWC tensor, say), `w` (O, *k, C/groups), unpadded, no bias; the result is (N, *out, O).
    /// The input channels are the innermost reduce axis (contiguous in both operands when `x`
    /// is stored channels-last), and each output pixel's channels are stored side by side.
    #[allow(clippy::too_many_arguments)]
    pub fn conv_channels_last_in(
        &mut self,
        x: &Lazy,
        w: &Lazy,
        stride: &[usize],
        dilation: &[usize],
        groups: usize,
        acc: Option<DType>,
    ) -> Result<Lazy, GraphError> {
        let (xs, ws) = (x.shape().to_vec(), w.shape().to_vec());
        let nsp = ws.len().saturating_sub(2);
        let (n, cin, cout, cg) = (xs[0], xs[1], ws[0], ws[nsp + 1]);
        if groups == 0 || cin != cg * groups || cout % groups != 0 || xs.len() != ws.len() {
            return Err(GraphError::Invalid {
                op: "conv",
                reason: format!(
                    "channels-last input {xs:?}, weight {ws:?} and groups {groups} do not match"
                ),
            });
        }
        let k = &ws[1..1 + nsp];
        let p = self.pool(x, k, stride, dilation, &[(0, 0); 8][..nsp])?;
        let o: Vec<usize> = p.shape()[2..2 + nsp].to_vec();
        let og = cout / groups;
        // (N, G, C/G, *out, *k) → (N, *out, G, 1, *k, C/G), expanded over the group's outputs.
        let mut split = vec![n, groups, cg];
        split.extend(&o);
        split.extend(k);
        let mut perm = vec![0];
        perm.extend(3..3 + nsp);
        perm.push(1);
        perm.extend(3 + nsp..3 + 2 * nsp);
        perm.push(2);
        let mut s1 = vec![n];
        s1.extend(&o);
        s1.extend([groups, 1]);
        s1.extend(k);
        s1.push(cg);
        let mut full = s1.clone();
        full[nsp + 2] = og;
        let xv = p
            .reshape(&split)?
            .permute(&perm)?
            .reshape(&s1)?
            .expand(&full)?;
        let mut wshape = vec![1];
        wshape.extend(std::iter::repeat_n(1, nsp));
        wshape.extend([groups, og]);
        wshape.extend(k);
        wshape.push(cg);
        let wv = w.reshape(&wshape)?.expand(&full)?;
        let (xv, wv) = self.widen(xv, wv, acc);
        let prod = self.alu(AluOp::Binary(BinaryOp::Mul), &[xv, wv])?;
        let axes: Vec<usize> = (nsp + 3..full.len()).collect();
        let s = self.reduce(ReduceOp::Sum, &prod, &axes)?;
        let mut out = vec![n];
        out.extend(&o);
        out.push(cout);
        s.reshape(&out)
    }

    /// Pads with `value` instead of zeros.
    pub fn pad_value(
        &mut self,
        x: &Lazy,
        arg: &[(usize, usize)],
        value: f64,
    ) -> Result<Lazy, GraphError> {
        let p = x.pad(arg)?;
        if value == 0.0 {
            return Ok(p);
        }
        let ones = self.constant(1.0, DType::BOOL, x.shape()).pad(arg)?;
        let fill = self.scalar_like(&p, value);
        self.where_(&ones, &p, &fill)
    }
}
