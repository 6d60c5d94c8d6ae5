//! Kiln's plain view of an ONNX model: graph, values, initializers and sorted nodes.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use prost::Message;

use super::attr::Attributes;
use super::error::{OnnxError, OPSET_RANGE};
use super::proto::tensor_shape_proto::dimension::Value as DimValue;
use super::proto::type_proto::Value as TypeValue;
use super::proto::{GraphProto, ModelProto, NodeProto, OperatorSetIdProto, ValueInfoProto};
use super::sort::sort_nodes;
use super::tensor::{tensor_from_proto, ElemType, Narrow};
use crate::tensor::Tensor;

/// A loaded model.
#[derive(Clone, Debug, PartialEq)]
pub struct OnnxModel {
    pub ir_version: i64,
    /// The opset of the default (`ai.onnx`) domain.
    pub opset: i64,
    /// Producer name and version, e.g. `tf2onnx 1.17.0`.
    pub producer: String,
    pub graph: OnnxGraph,
}

#[derive(Clone, Debug, PartialEq)]
pub struct OnnxGraph {
    pub name: String,
    /// The graph's inputs, leaving out those that are initializers.
    pub inputs: Vec<ValueInfo>,
    pub outputs: Vec<ValueInfo>,
    /// Weights and constants, in file order.
    pub initializers: Vec<(String, Tensor)>,
    /// Nodes in topological order (file order where the file allows it).
    pub nodes: Vec<OnnxNode>,
    /// The values the file types with a narrow element type (inputs, initializers, outputs and
    /// `value_info`), which Kiln holds in a wider container.
    pub narrow: HashMap<String, Narrow>,
    /// The values of the enclosing graphs that a subgraph reads (its own subgraphs' too),
    /// sorted; empty for a model's graph.
    pub outer: Vec<String>,
}

/// A graph input or output. An output whose file gives no shape has no dims.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValueInfo {
    pub name: String,
    pub elem: ElemType,
    pub dims: Vec<Dim>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Dim {
    Fixed(usize),
    /// A symbolic dimension (`dim_param`), or an unknown one.
    Free(Option<String>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct OnnxNode {
    /// The node's name; `<op_type>_<index in file>` when the file leaves it empty.
    pub name: String,
    pub op_type: String,
    /// `""` for the default domain.
    pub domain: String,
    /// Value names; `""` marks an omitted optional input.
    pub inputs: Vec<String>,
    pub outputs: Vec<String>,
    pub attrs: Attributes,
}

impl OnnxNode {
    /// Every value the node reads: its inputs, and what its subgraphs read from around them.
    pub fn reads(&self) -> Vec<String> {
        let inputs = self.inputs.iter().filter(|v| !v.is_empty()).cloned();
        let implicit = self.attrs.subgraphs().flat_map(|g| g.outer.iter().cloned());
        inputs.chain(implicit).collect()
    }
}

/// Loads the model in file `path`.
pub fn load(path: &Path) -> Result<OnnxModel, OnnxError> {
    let bytes = std::fs::read(path).map_err(|source| OnnxError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    load_bytes(&bytes)
}

/// Loads a model from the bytes of an `.onnx` file.
pub fn load_bytes(bytes: &[u8]) -> Result<OnnxModel, OnnxError> {
    if bytes.is_empty() {
        let reason = "the input is empty".to_string();
        return Err(OnnxError::NotOnnx { reason });
    }
    let proto = ModelProto::decode(bytes).map_err(OnnxError::Undecodable)?;
    read_model(proto)
}

fn read_model(proto: ModelProto) -> Result<OnnxModel, OnnxError> {
    let graph = proto.graph.ok_or(OnnxError::NoGraph)?;
    let opset = default_opset(&proto.opset_import)?;
    let producer = [proto.producer_name, proto.producer_version]
        .into_iter()
        .flatten()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    Ok(OnnxModel {
        ir_version: proto.ir_version.unwrap_or_default(),
        opset,
        producer,
        graph: read_graph(graph)?,
    })
}

fn default_opset(imports: &[OperatorSetIdProto]) -> Result<i64, OnnxError> {
    let default = imports
        .iter()
        .find(|o| matches!(o.domain.as_deref(), None | Some("" | "ai.onnx")))
        .ok_or(OnnxError::NoDefaultOpset)?;
    let opset = default.version.unwrap_or_default();
    if !OPSET_RANGE.contains(&opset) {
        return Err(OnnxError::UnsupportedOpset { opset });
    }
    Ok(opset)
}

fn read_graph(g: GraphProto) -> Result<OnnxGraph, OnnxError> {
    read_any_graph(g, false)
}

/// A subgraph: its inputs need no shapes (they come from the values that feed them), and its
/// nodes may read values of the graphs around it.
pub(crate) fn read_subgraph(g: GraphProto) -> Result<OnnxGraph, OnnxError> {
    read_any_graph(g, true)
}

fn read_any_graph(g: GraphProto, subgraph: bool) -> Result<OnnxGraph, OnnxError> {
    let mut narrow = declared_narrow(&g);
    let initializers = g
        .initializer
        .into_iter()
        .enumerate()
        .map(|(i, t)| {
            let name = t.name.clone().unwrap_or_default();
            Ok((name, tensor_from_proto(t, &format!("initializer {i}"))?))
        })
        .collect::<Result<Vec<_>, OnnxError>>()?;
    let init_names: HashSet<&str> = initializers.iter().map(|(n, _)| n.as_str()).collect();
    let inputs = g
        .input
        .into_iter()
        .filter(|v| !init_names.contains(v.name.as_deref().unwrap_or_default()))
        .map(|v| read_value_info(v, !subgraph, subgraph))
        .collect::<Result<Vec<_>, _>>()?;
    let outputs = g
        .output
        .into_iter()
        .map(|v| read_value_info(v, false, subgraph))
        .collect::<Result<Vec<_>, _>>()?;
    let nodes = g
        .node
        .into_iter()
        .enumerate()
        .map(|(i, n)| read_node(i, n))
        .collect::<Result<Vec<_>, _>>()?;
    let own: HashSet<&str> = (inputs.iter().map(|v| v.name.as_str()))
        .chain(init_names.iter().copied())
        .chain(
            nodes
                .iter()
                .flat_map(|n| n.outputs.iter().map(String::as_str)),
        )
        .collect();
    let mut outer: Vec<String> = match subgraph {
        true => (nodes.iter().flat_map(|n| n.reads()))
            .chain(outputs.iter().map(|o| o.name.clone()))
            .filter(|v| !v.is_empty() && !own.contains(v.as_str()))
            .collect(),
        false => Vec::new(),
    };
    outer.sort();
    outer.dedup();
    let defined = (inputs.iter().map(|v| v.name.as_str()))
        .chain(init_names)
        .chain(outer.iter().map(String::as_str));
    let nodes = sort_nodes(nodes, defined)?;
    narrow.retain(|name, _| !name.is_empty());
    Ok(OnnxGraph {
        name: g.name.unwrap_or_default(),
        inputs,
        outputs,
        initializers,
        nodes,
        narrow,
        outer,
    })
}

/// The values `g` types with a narrow element type, by name.
fn declared_narrow(g: &GraphProto) -> HashMap<String, Narrow> {
    let typed = g.input.iter().chain(&g.output).chain(&g.value_info);
    let from_info = typed.filter_map(|v| {
        let elem = match v.r#type.as_ref()?.value.as_ref()? {
            TypeValue::TensorType(t) => t.elem_type?,
            _ => return None,
        };
        Some((v.name.clone()?, Narrow::from_code(elem)?))
    });
    let from_init = g
        .initializer
        .iter()
        .filter_map(|t| Some((t.name.clone()?, Narrow::from_code(t.data_type?)?)));
    from_info.chain(from_init).collect()
}

/// A value's name, element type and dims. A subgraph's values may leave out their type (`untyped`):
/// the values that feed them give it.
fn read_value_info(
    v: ValueInfoProto,
    needs_shape: bool,
    untyped: bool,
) -> Result<ValueInfo, OnnxError> {
    let name = v.name.unwrap_or_default();
    let unsupported = |what| OnnxError::UnsupportedValueType {
        value: name.clone(),
        what,
    };
    let tensor = match v.r#type.and_then(|t| t.value) {
        Some(TypeValue::TensorType(t)) => t,
        Some(TypeValue::SequenceType(_)) => return Err(unsupported("a sequence")),
        Some(TypeValue::MapType(_)) => return Err(unsupported("a map")),
        Some(TypeValue::OptionalType(_)) => return Err(unsupported("an optional")),
        Some(TypeValue::SparseTensorType(_)) => return Err(unsupported("a sparse tensor")),
        None if untyped => {
            return Ok(ValueInfo {
                name,
                elem: ElemType::from_code(0),
                dims: Vec::new(),
            })
        }
        None => return Err(unsupported("no tensor type given")),
    };
    let dims = match tensor.shape {
        Some(shape) => shape.dim.into_iter().map(|d| read_dim(d.value)).collect(),
        None if needs_shape => return Err(unsupported("no shape given")),
        None => Vec::new(),
    };
    Ok(ValueInfo {
        elem: ElemType::from_code(tensor.elem_type.unwrap_or_default()),
        name,
        dims,
    })
}

fn read_dim(value: Option<DimValue>) -> Dim {
    match value {
        Some(DimValue::DimValue(v)) => usize::try_from(v).map_or(Dim::Free(None), Dim::Fixed),
        Some(DimValue::DimParam(p)) if !p.is_empty() => Dim::Free(Some(p)),
        _ => Dim::Free(None),
    }
}

fn read_node(index: usize, n: NodeProto) -> Result<OnnxNode, OnnxError> {
    let op_type = n.op_type.unwrap_or_default();
    let name = match n.name {
        Some(name) if !name.is_empty() => name,
        _ => format!("{op_type}_{index}"),
    };
    let attrs = Attributes::from_protos(&name, &op_type, n.attribute)?;
    Ok(OnnxNode {
        name,
        op_type,
        domain: n.domain.unwrap_or_default(),
        inputs: n.input,
        outputs: n.output,
        attrs,
    })
}
