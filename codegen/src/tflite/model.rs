//! A `.tflite` flatbuffer read into Kiln's own plain representation: each subgraph's tensors
//! (type, shape, quantization, constant data) and operators in file order.

use super::error::TfliteError;
use crate::dtype::Scalar;
use crate::tensor::Tensor;
use kiln_tflite_schema::tflite::{self, BuiltinOperator, BuiltinOptions, TensorType};
use planus::ReadAsRoot;

/// The index of a tensor in its subgraph.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TensorId(pub u32);

impl std::fmt::Display for TensorId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// Affine quantization: `real = scale · (q − zero_point)`, per tensor or along `axis`.
#[derive(Clone, Debug, PartialEq)]
pub struct Quant {
    pub scale: Vec<f32>,
    pub zero_point: Vec<i64>,
    pub axis: usize,
}

impl Quant {
    /// The per-tensor scale (the first one).
    pub fn scale(&self) -> f32 {
        self.scale[0]
    }

    /// The per-tensor zero point (the first one).
    pub fn zero_point(&self) -> i32 {
        self.zero_point.first().copied().unwrap_or(0) as i32
    }
}

/// One tensor of the subgraph.
#[derive(Clone, Debug)]
pub struct TfTensor {
    pub name: String,
    pub dtype: Scalar,
    pub shape: Vec<usize>,
    pub quant: Option<Quant>,
    /// The constant contents, for a tensor with a buffer.
    pub data: Option<Tensor>,
}

/// One operator of the subgraph.
#[derive(Clone, Debug)]
pub struct TfOp {
    /// The operator's position in the subgraph.
    pub index: usize,
    pub code: BuiltinOperator,
    pub version: i32,
    /// The custom code of a `CUSTOM` op.
    pub custom: Option<String>,
    /// Input tensors; `None` for an omitted optional input (index −1).
    pub inputs: Vec<Option<TensorId>>,
    pub outputs: Vec<TensorId>,
    pub options: Option<BuiltinOptions>,
    /// A custom op's options, as the file holds them (a FlexBuffer map, for TFLM's ops).
    pub custom_options: Vec<u8>,
}

impl TfOp {
    /// The op as TFLite names it (`CONV_2D`), or the custom code of a custom op.
    pub fn name(&self) -> String {
        match &self.custom {
            Some(c) if self.code == BuiltinOperator::Custom => format!("CUSTOM:{c}"),
            _ => op_name(self.code),
        }
    }
}

/// A TFLite model: its main subgraph, and the other subgraphs (the branches and bodies of
/// `IF` and `WHILE`), each a `TfliteModel` of its own with no further `bodies`.
#[derive(Clone, Debug)]
pub struct TfliteModel {
    pub tensors: Vec<TfTensor>,
    pub ops: Vec<TfOp>,
    pub inputs: Vec<TensorId>,
    pub outputs: Vec<TensorId>,
    /// Subgraphs 1, 2, … of the file (empty in a subgraph itself).
    pub bodies: Vec<TfliteModel>,
}

impl TfliteModel {
    pub fn tensor(&self, id: TensorId) -> &TfTensor {
        &self.tensors[id.0 as usize]
    }

    /// Subgraph `index` of the file: 0 is the main one.
    pub fn subgraph(&self, index: i32) -> Option<&TfliteModel> {
        match usize::try_from(index).ok()? {
            0 => Some(self),
            i => self.bodies.get(i - 1),
        }
    }

    /// Every operator of every subgraph.
    pub fn all_ops(&self) -> impl Iterator<Item = &TfOp> {
        self.ops
            .iter()
            .chain(self.bodies.iter().flat_map(|b| &b.ops))
    }

    /// A model of one builtin operator, built in memory: its inputs are all the tensors but
    /// the last, the first `inputs` of them the model's inputs (the others constants), and the
    /// last tensor its output.
    pub fn single_op(
        code: BuiltinOperator,
        options: Option<BuiltinOptions>,
        tensors: Vec<TfTensor>,
        inputs: usize,
    ) -> TfliteModel {
        let last = TensorId(tensors.len().saturating_sub(1) as u32);
        TfliteModel {
            ops: vec![TfOp {
                index: 0,
                code,
                version: 1,
                custom: None,
                inputs: (0..last.0).map(|i| Some(TensorId(i))).collect(),
                outputs: vec![last],
                options,
                custom_options: Vec::new(),
            }],
            inputs: (0..inputs as u32).map(TensorId).collect(),
            outputs: vec![last],
            tensors,
            bodies: Vec::new(),
        }
    }
}

/// The op name in TFLite's spelling (`CONV_2D`).
pub fn op_name(code: BuiltinOperator) -> String {
    kiln_tflite_schema::builtin_name(code).to_string()
}

/// Reads a `.tflite` file's bytes.
pub fn load_bytes(bytes: &[u8]) -> Result<TfliteModel, TfliteError> {
    if !kiln_tflite_schema::is_tflite(bytes) {
        return Err(TfliteError::NotTflite);
    }
    let root = tflite::ModelRef::read_as_root(bytes).map_err(TfliteError::Malformed)?;
    let model = tflite::Model::try_from(root).map_err(TfliteError::Malformed)?;
    let buffers = model.buffers.unwrap_or_default();
    let codes = model.operator_codes.unwrap_or_default();
    let mut subgraphs = model
        .subgraphs
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(i, g)| read_subgraph(i, g, &codes, &buffers, bytes));
    let mut main = subgraphs.next().ok_or(TfliteError::NoSubgraph)??;
    main.bodies = subgraphs.collect::<Result<_, _>>()?;
    super::decode::decode_constants(&mut main)?;
    for body in &mut main.bodies {
        super::decode::decode_constants(body)?;
    }
    Ok(main)
}

/// Subgraph `sub` of the file, with no `bodies`.
fn read_subgraph(
    sub: usize,
    graph: tflite::SubGraph,
    codes: &[tflite::OperatorCode],
    buffers: &[tflite::Buffer],
    bytes: &[u8],
) -> Result<TfliteModel, TfliteError> {
    let raw_tensors = graph.tensors.unwrap_or_default();
    let n = raw_tensors.len();
    let mut tensors = Vec::with_capacity(n);
    for (i, t) in raw_tensors.into_iter().enumerate() {
        tensors.push(read_tensor(i, t, buffers, bytes)?);
    }
    let id = |what: &str, v: i32| -> Result<TensorId, TfliteError> {
        usize::try_from(v)
            .ok()
            .filter(|&v| v < n)
            .map(|v| TensorId(v as u32))
            .ok_or_else(|| TfliteError::TensorIndex {
                what: what.to_string(),
                index: v,
                count: n,
            })
    };
    let mut ops = Vec::new();
    for (index, op) in graph.operators.unwrap_or_default().into_iter().enumerate() {
        let code = codes
            .get(op.opcode_index as usize)
            .ok_or(TfliteError::OpcodeIndex {
                op: index,
                index: op.opcode_index,
                count: codes.len(),
            })?;
        // Files older than schema 3a only fill the deprecated 8-bit code.
        let raw = (code.builtin_code as i32).max(i32::from(code.deprecated_builtin_code));
        let builtin = BuiltinOperator::try_from(raw).map_err(|_| TfliteError::UnknownOp {
            op: index,
            code: raw,
        })?;
        let what = match sub {
            0 => format!("operator {index} ({})", op_name(builtin)),
            _ => format!("subgraph {sub}, operator {index} ({})", op_name(builtin)),
        };
        let inputs = op
            .inputs
            .unwrap_or_default()
            .into_iter()
            .map(|v| {
                if v < 0 {
                    Ok(None)
                } else {
                    id(&what, v).map(Some)
                }
            })
            .collect::<Result<_, _>>()?;
        let outputs = op
            .outputs
            .unwrap_or_default()
            .into_iter()
            .map(|v| id(&what, v))
            .collect::<Result<_, _>>()?;
        ops.push(TfOp {
            index,
            code: builtin,
            version: code.version,
            custom: code.custom_code.clone(),
            inputs,
            outputs,
            options: op.builtin_options,
            custom_options: op.custom_options.unwrap_or_default(),
        });
    }
    let inputs = graph.inputs.unwrap_or_default();
    let outputs = graph.outputs.unwrap_or_default();
    Ok(TfliteModel {
        inputs: inputs
            .into_iter()
            .map(|v| id("the subgraph's inputs", v))
            .collect::<Result<_, _>>()?,
        outputs: outputs
            .into_iter()
            .map(|v| id("the subgraph's outputs", v))
            .collect::<Result<_, _>>()?,
        tensors,
        ops,
        bodies: Vec::new(),
    })
}

/// Most elements a tensor may have (2^32: far past any microcontroller's or edge GPU's memory,
/// and within every index type Kiln computes in).
const MAX_ELEMENTS: usize = 1 << 32;

/// The type Kiln holds a tensor of type `t` in: its own, or for packed int4 (two values a
/// byte, the low nibble first) the `i8` the values are unpacked into.
fn scalar_of(t: TensorType) -> Option<Scalar> {
    Some(match t {
        TensorType::Int4 => Scalar::I8,
        TensorType::Float32 => Scalar::F32,
        TensorType::Float16 => Scalar::F16,
        TensorType::Float64 => Scalar::F64,
        TensorType::Int8 => Scalar::I8,
        TensorType::Uint8 => Scalar::U8,
        TensorType::Int16 => Scalar::I16,
        TensorType::Uint16 => Scalar::U16,
        TensorType::Int32 => Scalar::I32,
        TensorType::Uint32 => Scalar::U32,
        TensorType::Int64 => Scalar::I64,
        TensorType::Uint64 => Scalar::U64,
        TensorType::Bool => Scalar::Bool,
        // A resource handle: which variable, a compile-time int32 (as TFLM holds it).
        TensorType::Resource => Scalar::I32,
        _ => return None,
    })
}

fn read_tensor(
    index: usize,
    t: tflite::Tensor,
    buffers: &[tflite::Buffer],
    file: &[u8],
) -> Result<TfTensor, TfliteError> {
    let name = t.name.unwrap_or_else(|| format!("tensor{index}"));
    let dtype = scalar_of(t.type_).ok_or_else(|| TfliteError::TensorType {
        tensor: name.clone(),
        ty: format!("{:?}", t.type_).to_uppercase(),
    })?;
    let mut shape = Vec::new();
    for d in t.shape.unwrap_or_default() {
        shape.push(usize::try_from(d).map_err(|_| TfliteError::Dim {
            tensor: name.clone(),
            dim: d,
        })?);
    }
    let elements = shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
    if elements.is_none_or(|n| n > MAX_ELEMENTS) {
        return Err(TfliteError::TensorSize {
            tensor: name,
            shape,
            limit: MAX_ELEMENTS,
        });
    }
    let quant = t.quantization.and_then(|q| {
        let scale = q.scale.filter(|s| !s.is_empty())?;
        Some(Quant {
            zero_point: q.zero_point.unwrap_or_else(|| vec![0; scale.len()]),
            scale,
            axis: usize::try_from(q.quantized_dimension).unwrap_or(0),
        })
    });
    let data = match buffers.get(t.buffer as usize) {
        _ if t.buffer == 0 => None,
        None => {
            return Err(TfliteError::BufferIndex {
                tensor: name,
                index: t.buffer,
                count: buffers.len(),
            })
        }
        Some(b) => {
            let bytes: &[u8] = match (&b.data, b.offset) {
                (Some(d), _) => d,
                (None, 0) => &[],
                (None, off) => {
                    file.get(off as usize..(off + b.size) as usize)
                        .ok_or_else(|| TfliteError::BufferRange {
                            tensor: name.clone(),
                            offset: off,
                            size: b.size,
                            file: file.len(),
                        })?
                }
            };
            if bytes.is_empty() {
                None
            } else if let Some(sparsity) = &t.sparsity {
                Some(super::sparse::densify(
                    &name, dtype, &shape, sparsity, bytes,
                )?)
            } else if t.type_ == TensorType::Int4 {
                Some(unpack_int4(&name, &shape, bytes)?)
            } else {
                let want = shape.iter().product::<usize>() * dtype.size();
                if bytes.len() != want {
                    return Err(TfliteError::BufferSize {
                        tensor: name,
                        want,
                        got: bytes.len(),
                    });
                }
                Some(
                    Tensor::new(dtype, shape.clone(), bytes.to_vec())
                        .expect("the size was checked"),
                )
            }
        }
    };
    if t.type_ == TensorType::Int4 && data.is_none() {
        return Err(TfliteError::TensorType {
            tensor: name,
            ty: "INT4 computed at run time (int4 is read for constant weights)".into(),
        });
    }
    Ok(TfTensor {
        name,
        dtype,
        shape,
        quant,
        data,
    })
}

/// Packed int4 values (two a byte, the low nibble first, as TFLM's `kTfLiteInt4` weights)
/// unpacked into `i8`, sign-extended.
fn unpack_int4(name: &str, shape: &[usize], bytes: &[u8]) -> Result<Tensor, TfliteError> {
    let n: usize = shape.iter().product();
    let want = n.div_ceil(2);
    if bytes.len() != want {
        return Err(TfliteError::BufferSize {
            tensor: name.to_string(),
            want,
            got: bytes.len(),
        });
    }
    let nibble = |b: u8| (((b << 4) as i8) >> 4) as u8;
    let values: Vec<u8> = bytes
        .iter()
        .flat_map(|&b| [nibble(b), nibble(b >> 4)])
        .take(n)
        .collect();
    Ok(Tensor::new(Scalar::I8, shape.to_vec(), values).expect("one byte per value"))
}
