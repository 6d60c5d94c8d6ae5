//! Mapping a kernel's global or local dims onto a device's (x, y, z) size limits.

use crate::shape::Node;

/// The dims could not be mapped onto the device's sizes.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum GroupedDimsError {
    #[error("{prefix} dims {dims:?} need size axes, but the device has none")]
    NoAxes { prefix: String, dims: Vec<usize> },
    #[error(
        "{prefix} dim {dim_index} (size {size}) is larger than the device limit {limit} on axis \
         {axis} and has no factor that fits"
    )]
    TooLarge {
        prefix: String,
        dim_index: usize,
        size: usize,
        axis: usize,
        limit: usize,
    },
    #[error("{prefix} dims {dims:?} do not fit in the device limits {limits:?}")]
    DoesNotFit {
        prefix: String,
        dims: Vec<usize>,
        limits: Vec<usize>,
    },
}

/// The result of [`grouped_dims`].
#[derive(Debug, Clone, PartialEq)]
pub struct GroupedDims {
    /// One index expression per input dim.
    pub idxs: Vec<Node>,
    /// The variables of the size axes, in size-axis order (x first).
    pub loop_vars: Vec<Node>,
    /// The size of each size axis, padded with 1s to the number of limits.
    pub sizes: Vec<usize>,
}

/// Maps `dims` onto at most `max_sizes.len()` size axes named `{prefix}{n}`:
/// - with fewer dims than axes, the sizes are padded with 1s;
/// - a dim larger than its axis' limit is split by the smallest factor whose quotient fits,
///   the factor going to the next axis;
/// - with more dims than axes, dims are merged onto the left-most axis that still fits;
/// - with `reverse`, the last dim maps to the first axis (x), names still follow dim order.
///
/// `max_sizes == None` means no limit: one axis per dim.
pub fn grouped_dims(
    prefix: &str,
    off: usize,
    dims: &[usize],
    max_sizes: Option<&[usize]>,
    reverse: bool,
) -> Result<GroupedDims, GroupedDimsError> {
    let unlimited = vec![usize::MAX; dims.len()];
    let max_sizes = max_sizes.unwrap_or(&unlimited);
    if max_sizes.is_empty() {
        if !dims.is_empty() {
            return Err(GroupedDimsError::NoAxes {
                prefix: prefix.into(),
                dims: dims.to_vec(),
            });
        }
        return Ok(GroupedDims {
            idxs: vec![],
            loop_vars: vec![],
            sizes: vec![],
        });
    }
    // Each size axis holds a list of (dim index, size) parts.
    let mut axes: Vec<Axis> = dims
        .iter()
        .enumerate()
        .map(|(i, &d)| vec![(i, d)])
        .collect();
    if reverse {
        axes.reverse();
    }
    split_oversized(&mut axes, max_sizes, prefix)?;
    merge_extra(&mut axes, max_sizes, prefix, dims)?;
    let sizes: Vec<usize> = axes
        .iter()
        .map(|parts| parts.iter().map(|p| p.1).product())
        .collect();
    let n = sizes.len();
    let loop_vars: Vec<Node> = sizes
        .iter()
        .enumerate()
        .map(|(i, &s)| {
            let num = if reverse { n - 1 - (i + off) } else { i + off };
            Node::var(&format!("{prefix}{num}"), 0, s as i64 - 1)
        })
        .collect();
    let idxs = dim_indices(&axes, &loop_vars, dims.len());
    let loop_vars = loop_vars
        .into_iter()
        .filter(|v| v.as_num().is_none())
        .collect();
    let mut sizes = sizes;
    sizes.resize(max_sizes.len().max(n), 1);
    Ok(GroupedDims {
        idxs,
        loop_vars,
        sizes,
    })
}

/// One size axis: the (dim index, size) parts it holds, innermost first.
type Axis = Vec<(usize, usize)>;

/// Splits each dim larger than its axis' limit by the smallest factor whose quotient fits;
/// the factor becomes an axis of its own after it.
fn split_oversized(
    axes: &mut Vec<Axis>,
    max_sizes: &[usize],
    prefix: &str,
) -> Result<(), GroupedDimsError> {
    for a in 0..max_sizes.len().min(axes.len()) {
        let (dim_index, size) = axes[a][0];
        let limit = max_sizes[a];
        if size <= limit {
            continue;
        }
        let factor = (2..)
            .take_while(|f| f * f <= size)
            .find(|f| size % f == 0 && size / f <= limit);
        match factor {
            Some(f) => {
                axes[a] = vec![(dim_index, size / f)];
                axes.insert(a + 1, vec![(dim_index, f)]);
            }
            None => {
                return Err(GroupedDimsError::TooLarge {
                    prefix: prefix.into(),
                    dim_index,
                    size,
                    axis: a,
                    limit,
                })
            }
        }
    }
    Ok(())
}

/// With more axes than limits: merges each extra axis onto the left-most axis that still fits.
fn merge_extra(
    axes: &mut Vec<Axis>,
    max_sizes: &[usize],
    prefix: &str,
    dims: &[usize],
) -> Result<(), GroupedDimsError> {
    let mut cur = 0;
    while axes.len() > max_sizes.len() {
        let here: usize = axes[cur].iter().map(|p| p.1).product();
        if here.saturating_mul(axes[cur + 1][0].1) <= max_sizes[cur] {
            let next = axes.remove(cur + 1);
            axes[cur].extend(next);
        } else if cur + 1 < max_sizes.len() {
            cur += 1;
        } else {
            return Err(GroupedDimsError::DoesNotFit {
                prefix: prefix.into(),
                dims: dims.to_vec(),
                limits: max_sizes.to_vec(),
            });
        }
    }
    Ok(())
}

/// Each of the `n` dims' index: its parts on the axes, from their variables in `loop_vars`.
fn dim_indices(axes: &[Axis], loop_vars: &[Node], n: usize) -> Vec<Node> {
    let mut idxs = vec![Node::num(0); n];
    for (a, var) in loop_vars.iter().enumerate() {
        let mut v = var.clone();
        for &(dim_index, size) in &axes[a] {
            let scale = idxs[dim_index].max() + 1;
            idxs[dim_index] = idxs[dim_index].add(&v.mod_i(size as i64).mul_i(scale));
            v = v.div_i(size as i64);
        }
    }
    idxs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(g: &GroupedDims) -> Vec<String> {
        g.loop_vars.iter().map(|v| v.render()).collect()
    }

    #[test]
    fn fewer_dims_than_sizes_pads_with_ones() {
        let g = grouped_dims("gidx", 0, &[2, 3], Some(&[16, 16, 16]), false).unwrap();
        assert_eq!(g.sizes, vec![2, 3, 1]);
        assert_eq!(names(&g), vec!["gidx0", "gidx1"]);
        assert_eq!(g.idxs[0].render(), "gidx0");
    }

    #[test]
    fn more_dims_than_sizes_collapse_left() {
        let g = grouped_dims("gidx", 0, &[2, 3, 4, 5], Some(&[16, 16, 16]), false).unwrap();
        assert_eq!(g.sizes, vec![6, 4, 5]);
        // dims 0 and 1 share axis 0: idx0 = gidx0 % 2, idx1 = gidx0 // 2 (within 0..3).
        let env = |v: i64| move |n: &str| if n == "gidx0" { v } else { 0 };
        for v in 0..6 {
            assert_eq!(g.idxs[0].eval(&env(v)), v % 2);
            assert_eq!(g.idxs[1].eval(&env(v)), v / 2);
        }
    }

    #[test]
    fn too_large_prime_dim_is_an_error() {
        let e = grouped_dims("gidx", 0, &[17], Some(&[16, 16, 16]), false).unwrap_err();
        assert!(matches!(
            e,
            GroupedDimsError::TooLarge {
                size: 17,
                limit: 16,
                ..
            }
        ));
        assert!(e.to_string().contains("17") && e.to_string().contains("16"));
    }

    #[test]
    fn factorable_dim_splits_across_axes() {
        let g = grouped_dims("gidx", 0, &[64], Some(&[16, 16, 16]), false).unwrap();
        assert_eq!(g.sizes, vec![16, 4, 1]);
        let mut seen = std::collections::HashSet::new();
        for a in 0..16 {
            for b in 0..4 {
                let env = |n: &str| if n == "gidx0" { a } else { b };
                seen.insert(g.idxs[0].eval(&env));
            }
        }
        assert_eq!(seen.len(), 64);
        assert!(seen.iter().all(|&i| (0..64).contains(&i)));
    }

    #[test]
    fn reverse_maps_last_dim_to_x_keeping_names() {
        let g = grouped_dims("gidx", 0, &[2, 3, 4], Some(&[16, 16, 16]), true).unwrap();
        assert_eq!(g.sizes, vec![4, 3, 2]);
        assert_eq!(names(&g), vec!["gidx2", "gidx1", "gidx0"]);
        assert_eq!(g.idxs[2].render(), "gidx2");
    }

    #[test]
    fn nothing_fits_is_an_error() {
        let e = grouped_dims("lidx", 0, &[8, 8, 8, 8], Some(&[8, 8, 8]), false).unwrap_err();
        assert!(matches!(e, GroupedDimsError::DoesNotFit { .. }));
        let e = grouped_dims("lidx", 0, &[2], Some(&[]), false).unwrap_err();
        assert!(matches!(e, GroupedDimsError::NoAxes { .. }));
    }

    #[test]
    fn unlimited_gives_one_axis_per_dim() {
        let g = grouped_dims("gidx", 0, &[5, 7, 9, 11], None, false).unwrap();
        assert_eq!(g.sizes, vec![5, 7, 9, 11]);
        assert_eq!(g.loop_vars.len(), 4);
    }
}
