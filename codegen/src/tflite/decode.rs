//! TFLM's `DECODE` (custom code `TFLM_DECODE`, `tensorflow/lite/micro/kernels/decode*.cc`):
//! each output is a constant tensor that TFLM's compression tool stored encoded, with an
//! ancillary tensor describing the encoding. Its inputs are pairs (encoded, ancillary), one pair
//! per output, all constant, so Kiln decodes them as the file is read: each output becomes a
//! constant tensor and the op goes, so that the ops reading it see a constant as they would in
//! the uncompressed model.
//!
//! The ancillary tensor starts with 16 bytes of metadata: byte 0 the encoding (0: look-up
//! table; 1, 2 and 127, Huffman, pruning and custom, are refused by name), then for a look-up
//! table its version (byte 4, 1), the index width in bits (byte 5, low 3 bits, 1 to 7) and the
//! table's stride per channel in elements (byte 6); the value tables follow, in the output's
//! type. The indices are packed most significant bit first. With per-channel quantization on
//! the first axis each channel reads its own table (the next `stride` elements); on the last
//! axis the channels take turns element by element.

use super::error::{OpError, TfliteError};
use super::model::{TensorId, TfOp, TfTensor, TfliteModel};
use crate::tensor::Tensor;

/// The custom code of TFLM's `DECODE`.
const CUSTOM_CODE: &str = "TFLM_DECODE";

/// The metadata's length, before the value tables.
const HEADER: usize = 16;

/// `model` with every `DECODE` op replaced by the constants it decodes.
pub(super) fn decode_constants(model: &mut TfliteModel) -> Result<(), TfliteError> {
    let mut kept = Vec::with_capacity(model.ops.len());
    for op in std::mem::take(&mut model.ops) {
        if op.custom.as_deref() != Some(CUSTOM_CODE) {
            kept.push(op);
            continue;
        }
        let error = |source: OpError| TfliteError::Op {
            index: op.index,
            op: op.name(),
            version: op.version,
            source,
        };
        for (k, decoded) in decode(model, &op).map_err(error)?.into_iter().enumerate() {
            model.tensors[op.outputs[k].0 as usize].data = Some(decoded);
        }
    }
    model.ops = kept;
    Ok(())
}

/// The outputs of one `DECODE` op.
fn decode(model: &TfliteModel, op: &TfOp) -> Result<Vec<Tensor>, OpError> {
    let outputs = op.outputs.len();
    if outputs == 0 || op.inputs.len() != 2 * outputs {
        return Err(OpError::Invalid(format!(
            "{} inputs for {outputs} outputs: DECODE takes an encoded tensor and its \
             ancillary tensor per output",
            op.inputs.len()
        )));
    }
    let constant = |i: usize| -> Result<&[u8], OpError> {
        let id: TensorId = op.inputs[i].ok_or(OpError::MissingInput { index: i })?;
        let t = model.tensor(id);
        match &t.data {
            Some(data) => Ok(data.bytes()),
            None => Err(OpError::NotConstant {
                index: i,
                tensor: t.name.clone(),
            }),
        }
    };
    (0..outputs)
        .map(|k| {
            decode_one(
                model.tensor(op.outputs[k]),
                constant(2 * k)?,
                constant(2 * k + 1)?,
            )
        })
        .collect()
}

/// Output `out` from its indices (`encoded`) and its metadata and tables (`ancillary`).
fn decode_one(out: &TfTensor, encoded: &[u8], ancillary: &[u8]) -> Result<Tensor, OpError> {
    let invalid = |why: String| OpError::Invalid(format!("output {:?}: {why}", out.name));
    if ancillary.len() < HEADER {
        return Err(invalid(format!(
            "the ancillary tensor holds {} bytes, under the {HEADER}-byte header",
            ancillary.len()
        )));
    }
    match ancillary[0] {
        0 => {}
        kind => {
            let name = match kind {
                1 => "Huffman",
                2 => "pruning",
                127 => "custom",
                _ => "unknown",
            };
            return Err(OpError::Unsupported(format!(
                "output {:?} is encoded with encoding {kind} ({name}); Kiln decodes look-up \
                 tables (0)",
                out.name
            )));
        }
    }
    if ancillary[4] != 1 {
        return Err(invalid(format!(
            "look-up table version {}, not 1",
            ancillary[4]
        )));
    }
    let width = usize::from(ancillary[5] & 0x07);
    if width == 0 {
        return Err(invalid("an index width of 0 bits".into()));
    }
    let stride = usize::from(ancillary[6]);
    let size = out.dtype.size();
    let count: usize = out.shape.iter().product();
    let (channels, alternate) = channels(out.quant.as_ref(), out.shape.len()).map_err(invalid)?;
    if !count.is_multiple_of(channels) {
        return Err(invalid(format!("{count} elements in {channels} channels")));
    }
    if encoded.len() * 8 < count * width {
        return Err(invalid(format!(
            "{} bytes of indices for {count} of {width} bits",
            encoded.len()
        )));
    }
    let table = &ancillary[HEADER..];
    let mut bytes = Vec::with_capacity(count * size);
    for e in 0..count {
        let channel = if alternate {
            e % channels
        } else {
            e / (count / channels)
        };
        let at = channel * stride + index(encoded, e, width);
        let value = table.get(at * size..(at + 1) * size).ok_or_else(|| {
            invalid(format!(
                "element {e} reads entry {at} of a value table of {} entries",
                table.len() / size
            ))
        })?;
        bytes.extend_from_slice(value);
    }
    Tensor::new(out.dtype, out.shape.clone(), bytes).map_err(|e| invalid(e.to_string()))
}

/// The channels the tables are per (1 without per-channel quantization), and whether they are
/// on the last axis (element by element in turn) rather than the first.
fn channels(
    quant: Option<&crate::tflite::model::Quant>,
    rank: usize,
) -> Result<(usize, bool), String> {
    let Some(q) = quant.filter(|q| q.scale.len() > 1) else {
        return Ok((1, false));
    };
    match q.axis {
        0 => Ok((q.scale.len(), false)),
        a if a + 1 == rank => Ok((q.scale.len(), true)),
        a => Err(format!(
            "per-channel tables on axis {a}: TFLM decodes axis 0 or the last"
        )),
    }
}

/// Index `e` of `width` bits in `packed`, most significant bit first.
fn index(packed: &[u8], e: usize, width: usize) -> usize {
    (e * width..(e + 1) * width).fold(0, |acc, bit| {
        let b = (packed[bit / 8] >> (7 - bit % 8)) & 1;
        (acc << 1) | usize::from(b)
    })
}
