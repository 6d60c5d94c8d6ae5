//! Sparse constant tensors (a tensor's `sparsity` field, the TFLite converter's sparse
//! weights), densified as the file is read.
//!
//! A sparse tensor of rank `n` with `k` blocked dims is stored over `n + k` levels: the
//! original dims (divided by their block size where blocked) and one level per block. The
//! levels are stored in `traversal_order`; each is dense (`dense_size` positions) or
//! compressed (`array_segments` delimits, for each position of the level above, its run of
//! `array_indices`). The buffer holds the values of the leaves in traversal order.

use super::error::TfliteError;
use crate::dtype::Scalar;
use crate::tensor::Tensor;
use kiln_tflite_schema::tflite::{
    DimensionMetadata, DimensionType, SparseIndexVector, SparsityParameters,
};

/// One level of the traversal.
enum Level {
    Dense(usize),
    Compressed {
        segments: Vec<usize>,
        indices: Vec<usize>,
    },
}

/// The walk over the levels: where each leaf's value goes in the dense tensor.
struct Walk<'a> {
    levels: Vec<Level>,
    /// The expanded dim each level indexes (`traversal_order`).
    order: Vec<usize>,
    /// For each of the `k` blocks: the original dim it divides and its size.
    blocks: Vec<(usize, usize)>,
    shape: &'a [usize],
    /// The coordinate of each expanded dim at the current position.
    coords: Vec<usize>,
    /// The dense offsets of the leaves, in the order their values are stored.
    leaves: Vec<usize>,
}

/// Densifies the `bytes` (the stored values) of tensor `name` of type `dtype` and `shape`.
pub(super) fn densify(
    name: &str,
    dtype: Scalar,
    shape: &[usize],
    sparsity: &SparsityParameters,
    bytes: &[u8],
) -> Result<Tensor, TfliteError> {
    let bad = |reason: String| TfliteError::Sparse {
        tensor: name.to_string(),
        reason,
    };
    let n = shape.len();
    let order = to_usizes(sparsity.traversal_order.as_deref().unwrap_or(&[]))
        .ok_or_else(|| bad("a negative dim in traversal_order".into()))?;
    let block_map = to_usizes(sparsity.block_map.as_deref().unwrap_or(&[]))
        .ok_or_else(|| bad("a negative dim in block_map".into()))?;
    let meta = sparsity.dim_metadata.as_deref().unwrap_or(&[]);
    let levels_n = n + block_map.len();
    if order.len() != levels_n || meta.len() != levels_n {
        return Err(bad(format!(
            "{} traversal dims and {} dim metadata for rank {n} with {} blocks",
            order.len(),
            meta.len(),
            block_map.len()
        )));
    }
    let mut sorted = order.clone();
    sorted.sort_unstable();
    if sorted != (0..levels_n).collect::<Vec<_>>() {
        return Err(bad(format!(
            "traversal_order {order:?} is not a permutation"
        )));
    }
    let levels = meta
        .iter()
        .enumerate()
        .map(|(l, m)| level(m).map_err(|r| bad(format!("level {l}: {r}"))))
        .collect::<Result<Vec<_>, _>>()?;
    let blocks = block_sizes(&block_map, &order, &levels, shape).map_err(bad)?;
    check_dense_sizes(&order, &levels, &blocks, shape).map_err(bad)?;
    let mut walk = Walk {
        levels,
        order,
        blocks,
        shape,
        coords: vec![0; levels_n],
        leaves: Vec::new(),
    };
    walk.visit(0, 0).map_err(bad)?;
    let size = dtype.size();
    if bytes.len() != walk.leaves.len() * size {
        return Err(bad(format!(
            "{} stored values for {} positions",
            bytes.len() / size.max(1),
            walk.leaves.len()
        )));
    }
    let numel: usize = shape.iter().product();
    let mut dense = vec![0u8; numel * size];
    for (value, &at) in bytes.chunks_exact(size).zip(&walk.leaves) {
        dense[at * size..(at + 1) * size].copy_from_slice(value);
    }
    Tensor::new(dtype, shape.to_vec(), dense).map_err(|e| bad(e.to_string()))
}

fn to_usizes(v: &[i32]) -> Option<Vec<usize>> {
    v.iter().map(|&x| usize::try_from(x).ok()).collect()
}

fn index_vector(v: &Option<SparseIndexVector>) -> Option<Vec<usize>> {
    Some(match v.as_ref()? {
        SparseIndexVector::Int32Vector(v) => to_usizes(v.values.as_deref().unwrap_or(&[]))?,
        SparseIndexVector::Uint16Vector(v) => (v.values.as_deref().unwrap_or(&[]).iter())
            .map(|&x| usize::from(x))
            .collect(),
        SparseIndexVector::Uint8Vector(v) => (v.values.as_deref().unwrap_or(&[]).iter())
            .map(|&x| usize::from(x))
            .collect(),
    })
}

fn level(m: &DimensionMetadata) -> Result<Level, String> {
    match m.format {
        DimensionType::Dense => usize::try_from(m.dense_size)
            .map(Level::Dense)
            .map_err(|_| format!("dense_size {} is negative", m.dense_size)),
        DimensionType::SparseCsr => {
            let segments = index_vector(&m.array_segments)
                .ok_or("a compressed level without valid array_segments")?;
            let indices = index_vector(&m.array_indices)
                .ok_or("a compressed level without valid array_indices")?;
            if segments.windows(2).any(|w| w[0] > w[1])
                || segments.last().is_some_and(|&s| s > indices.len())
            {
                return Err(format!(
                    "array_segments {segments:?} do not delimit {} indices",
                    indices.len()
                ));
            }
            Ok(Level::Compressed { segments, indices })
        }
    }
}

/// For each block `b` (`block_map[b]`, the original dim it divides), that dim and the block's
/// size: the `dense_size` of the level of expanded dim `n + b`, which must divide the dim.
fn block_sizes(
    block_map: &[usize],
    order: &[usize],
    levels: &[Level],
    shape: &[usize],
) -> Result<Vec<(usize, usize)>, String> {
    let n = shape.len();
    block_map
        .iter()
        .enumerate()
        .map(|(b, &dim)| {
            let l = order.iter().position(|&d| d == n + b).unwrap_or(0);
            let size = match levels[l] {
                Level::Dense(s) => s,
                Level::Compressed { .. } => return Err(format!("block {b} is not dense")),
            };
            match shape.get(dim) {
                Some(&d) if size > 0 && d % size == 0 => Ok((dim, size)),
                _ => Err(format!(
                    "block {b} of size {size} does not divide dim {dim} of {shape:?}"
                )),
            }
        })
        .collect()
}

/// Each dense level spans its expanded dim exactly: an original dim (divided by its block
/// size where blocked) or a block. That bounds the walk by the tensor's size.
fn check_dense_sizes(
    order: &[usize],
    levels: &[Level],
    blocks: &[(usize, usize)],
    shape: &[usize],
) -> Result<(), String> {
    let n = shape.len();
    for (l, (&d, level)) in order.iter().zip(levels).enumerate() {
        let Level::Dense(size) = *level else { continue };
        let want = match d.checked_sub(n) {
            Some(b) => blocks[b].1,
            None => match blocks.iter().find(|&&(dim, _)| dim == d) {
                Some(&(_, block)) => shape[d] / block,
                None => shape[d],
            },
        };
        if size != want {
            return Err(format!(
                "level {l}: dense_size {size} for a dim of {want} positions"
            ));
        }
    }
    Ok(())
}

impl Walk<'_> {
    /// Visits level `l` below position `pos` of the level above.
    fn visit(&mut self, l: usize, pos: usize) -> Result<(), String> {
        if l == self.levels.len() {
            let at = self.dense_offset()?;
            let numel: usize = self.shape.iter().product();
            if self.leaves.len() == numel {
                return Err(format!(
                    "more stored positions than the {numel} of the tensor"
                ));
            }
            self.leaves.push(at);
            return Ok(());
        }
        let dim = self.order[l];
        match &self.levels[l] {
            Level::Dense(size) => {
                let size = *size;
                for i in 0..size {
                    self.coords[dim] = i;
                    self.visit(l + 1, pos * size + i)?;
                }
            }
            Level::Compressed { segments, .. } => {
                let (lo, hi) = match (segments.get(pos), segments.get(pos + 1)) {
                    (Some(&lo), Some(&hi)) => (lo, hi),
                    _ => {
                        return Err(format!(
                            "level {l}: position {pos} has no segment in array_segments"
                        ))
                    }
                };
                for j in lo..hi {
                    let Level::Compressed { indices, .. } = &self.levels[l] else {
                        unreachable!("the level was compressed above")
                    };
                    self.coords[dim] = indices[j];
                    self.visit(l + 1, j)?;
                }
            }
        }
        Ok(())
    }

    /// The dense row-major offset of the current coordinates, checked against the shape.
    fn dense_offset(&self) -> Result<usize, String> {
        let n = self.shape.len();
        let mut at = 0;
        for (i, &d) in self.shape.iter().enumerate() {
            let mut c = self.coords[i];
            if let Some(b) = self.blocks.iter().position(|&(dim, _)| dim == i) {
                c = c * self.blocks[b].1 + self.coords[n + b];
            }
            if c >= d {
                return Err(format!("index {c} is out of range for dim {i} of size {d}"));
            }
            at = at * d + c;
        }
        Ok(at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_tflite_schema::tflite::Int32Vector;
    use proptest::prelude::*;

    fn csr(segments: &[i32], indices: &[i32]) -> DimensionMetadata {
        let v = |x: &[i32]| {
            Some(SparseIndexVector::Int32Vector(Box::new(Int32Vector {
                values: Some(x.to_vec()),
            })))
        };
        DimensionMetadata {
            format: DimensionType::SparseCsr,
            dense_size: 0,
            array_segments: v(segments),
            array_indices: v(indices),
        }
    }

    fn dense(size: i32) -> DimensionMetadata {
        DimensionMetadata {
            format: DimensionType::Dense,
            dense_size: size,
            ..Default::default()
        }
    }

    fn f32s(t: &Tensor) -> Vec<f32> {
        t.to_f32().unwrap()
    }

    fn bytes(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn a_csr_matrix_densifies() {
        // [[1, 0, 2], [0, 0, 0], [0, 3, 0]] in CSR: rows dense, columns compressed.
        let sp = SparsityParameters {
            traversal_order: Some(vec![0, 1]),
            block_map: None,
            dim_metadata: Some(vec![dense(3), csr(&[0, 2, 2, 3], &[0, 2, 1])]),
        };
        let t = densify("w", Scalar::F32, &[3, 3], &sp, &bytes(&[1.0, 2.0, 3.0])).unwrap();
        assert_eq!(f32s(&t), vec![1.0, 0.0, 2.0, 0.0, 0.0, 0.0, 0.0, 3.0, 0.0]);
    }

    #[test]
    fn blocks_of_a_matrix_densify() {
        // A 2×4 matrix in 1×2 blocks: block columns compressed, only block column 1 of row 0
        // and block column 0 of row 1 stored.
        let sp = SparsityParameters {
            traversal_order: Some(vec![0, 1, 2]),
            block_map: Some(vec![1]),
            dim_metadata: Some(vec![dense(2), csr(&[0, 1, 2], &[1, 0]), dense(2)]),
        };
        let t = densify(
            "w",
            Scalar::F32,
            &[2, 4],
            &sp,
            &bytes(&[1.0, 2.0, 3.0, 4.0]),
        )
        .unwrap();
        assert_eq!(f32s(&t), vec![0.0, 0.0, 1.0, 2.0, 3.0, 4.0, 0.0, 0.0]);
    }

    fn level_strategy() -> impl Strategy<Value = DimensionMetadata> {
        let small = proptest::collection::vec(-2i32..9, 0..8);
        prop_oneof![
            (-1i32..5).prop_map(dense),
            (small.clone(), small).prop_map(|(s, i)| csr(&s, &i)),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Any sparsity description, however inconsistent: a tensor or an error, never a panic.
        #[test]
        fn any_description_densifies_or_is_an_error(
            shape in proptest::collection::vec(1usize..5, 1..4),
            order in proptest::collection::vec(-1i32..6, 0..6),
            blocks in proptest::collection::vec(-1i32..4, 0..3),
            levels in proptest::collection::vec(level_strategy(), 0..6),
            values in proptest::collection::vec(any::<u8>(), 0..64),
        ) {
            let sp = SparsityParameters {
                traversal_order: Some(order),
                block_map: Some(blocks),
                dim_metadata: Some(levels),
            };
            let _ = densify("w", Scalar::I8, &shape, &sp, &values);
        }
    }

    #[test]
    fn indices_outside_the_tensor_are_errors() {
        let sp = SparsityParameters {
            traversal_order: Some(vec![0, 1]),
            block_map: None,
            dim_metadata: Some(vec![dense(2), csr(&[0, 1, 2], &[0, 5])]),
        };
        let e = densify("w", Scalar::F32, &[2, 3], &sp, &bytes(&[1.0, 2.0])).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("\"w\"") && msg.contains("index 5"), "{msg}");
        let short = densify("w", Scalar::F32, &[2, 3], &sp, &bytes(&[1.0])).unwrap_err();
        assert!(short.to_string().contains("\"w\""), "{short}");
        let bad_segments = SparsityParameters {
            dim_metadata: Some(vec![dense(2), csr(&[0, 3, 1], &[0, 1])]),
            ..sp
        };
        let e = densify("w", Scalar::F32, &[2, 3], &bad_segments, &[]).unwrap_err();
        assert!(e.to_string().contains("array_segments"), "{e}");
    }
}
