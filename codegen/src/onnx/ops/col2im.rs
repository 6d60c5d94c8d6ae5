//! Col2Im: sums sliding blocks (columns of the input) back into an image, as a product with a
//! known 0/1 matrix from (block offset, block position) to image position.

use super::ctx::{checked_numel, invalid, materialize, to_usize, Ctx, OpError, Value};
use super::OpBuilder;
use crate::tensor::Tensor;

pub(super) const OPS: &[(&str, OpBuilder)] = &[("Col2Im", col2im)];

type Out = Result<Vec<Value>, OpError>;

/// The blocks' geometry over the image, per spatial dim.
struct Geometry {
    image: Vec<usize>,
    block: Vec<usize>,
    dilations: Vec<usize>,
    strides: Vec<usize>,
    /// Padding: the starts of every dim, then the ends.
    pads: Vec<usize>,
    /// Block positions along each dim.
    nblocks: Vec<usize>,
}

fn col2im(ctx: &mut Ctx) -> Out {
    ctx.only_outputs(1)?;
    let x = ctx.tensor(0)?;
    let geo = geometry(ctx)?;
    let xs = x.shape().to_vec();
    let kn: usize = geo.block.iter().product();
    if geo.block.len() != geo.image.len()
        || xs.len() != 3
        || kn == 0
        || !xs[1].is_multiple_of(kn)
        || geo.strides.contains(&0)
    {
        return Err(invalid(format!(
            "input {xs:?}, image {:?} and block {:?} do not match",
            geo.image, geo.block
        )));
    }
    let nblocks = block_positions(&geo)?;
    let geo = Geometry { nblocks, ..geo };
    let l: usize = geo.nblocks.iter().product();
    let p = checked_numel(&geo.image)?;
    if xs[2] != l {
        return Err(invalid(format!(
            "input {xs:?} has {} blocks, the geometry gives {l}",
            xs[2]
        )));
    }
    checked_numel(&[kn, l, p])?;
    let w = block_matrix(&geo, kn, l, p);
    let t = Tensor::from_f64(x.dtype.scalar, vec![kn * l, p], &w)?;
    let g = &mut *ctx.graph;
    let wm = materialize(g, "col2im_matrix", &t)?;
    let c = xs[1] / kn;
    let xr = x.reshape(&[xs[0], c, kn * l])?;
    let y = g.matmul(&xr, &wm)?;
    let mut out = vec![xs[0], c];
    out.extend(&geo.image);
    Ok(vec![Value::Tensor(y.reshape(&out)?)])
}

/// The image and block shapes (inputs 1 and 2) and the dilations, strides and pads; the
/// block positions are left to [`block_positions`].
fn geometry(ctx: &mut Ctx) -> Result<Geometry, OpError> {
    let image: Vec<usize> = ctx
        .ints(1)?
        .iter()
        .map(|&v| to_usize(v, "image_shape"))
        .collect::<Result<_, _>>()?;
    let block: Vec<usize> = ctx
        .ints(2)?
        .iter()
        .map(|&v| to_usize(v, "block_shape"))
        .collect::<Result<_, _>>()?;
    let k = image.len();
    let ints = |name: &str, default: i64, n: usize| -> Result<Vec<usize>, OpError> {
        let v = ctx.attrs().ints_or(name, vec![default; n])?;
        if v.len() != n {
            return Err(invalid(format!("{name} has {} values, not {n}", v.len())));
        }
        v.iter().map(|&x| to_usize(x, name)).collect()
    };
    Ok(Geometry {
        dilations: ints("dilations", 1, k)?,
        strides: ints("strides", 1, k)?,
        pads: ints("pads", 0, 2 * k)?,
        image,
        block,
        nblocks: Vec::new(),
    })
}

/// The number of block positions along each dim of the padded image.
fn block_positions(geo: &Geometry) -> Result<Vec<usize>, OpError> {
    let k = geo.image.len();
    let mut nblocks = Vec::with_capacity(k);
    for i in 0..k {
        let span = geo.dilations[i] * (geo.block[i].saturating_sub(1)) + 1;
        let room = geo.image[i] + geo.pads[i] + geo.pads[k + i];
        if room < span {
            return Err(invalid(format!(
                "block {i} is larger than the padded image"
            )));
        }
        nblocks.push((room - span) / geo.strides[i] + 1);
    }
    Ok(nblocks)
}

/// The (kn · l, p) 0/1 matrix: 1 where block offset `ki` at block position `li` lands on image
/// position `pos`, inside the image.
fn block_matrix(geo: &Geometry, kn: usize, l: usize, p: usize) -> Vec<f64> {
    let k = geo.image.len();
    let split = |mut v: usize, dims: &[usize]| -> Vec<usize> {
        let mut out = vec![0; dims.len()];
        for a in (0..dims.len()).rev() {
            out[a] = v % dims[a];
            v /= dims[a];
        }
        out
    };
    let mut w = vec![0.0; kn * l * p];
    for ki in 0..kn {
        let kk = split(ki, &geo.block);
        for li in 0..l {
            let ll = split(li, &geo.nblocks);
            let mut pos = 0usize;
            let mut inside = true;
            for a in 0..k {
                let q =
                    (ll[a] * geo.strides[a] + kk[a] * geo.dilations[a]) as i64 - geo.pads[a] as i64;
                if q < 0 || q >= geo.image[a] as i64 {
                    inside = false;
                    break;
                }
                pos = pos * geo.image[a] + q as usize;
            }
            if inside {
                w[(ki * l + li) * p + pos] = 1.0;
            }
        }
    }
    w
}
