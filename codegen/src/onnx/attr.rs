//! Node attributes, read out of `AttributeProto` into plain values with typed getters.

use super::error::{AttrProblem, OnnxError};
use super::model::OnnxGraph;
use super::proto::attribute_proto::AttributeType;
use super::proto::AttributeProto;
use super::tensor::tensor_from_proto;
use crate::dtype::Scalar;
use crate::tensor::Tensor;

/// The attributes that can hold a `Constant` node's value (exactly one is set).
const CONSTANT_ATTRS: [&str; 8] = [
    "value",
    "value_float",
    "value_floats",
    "value_int",
    "value_ints",
    "value_string",
    "value_strings",
    "sparse_value",
];

/// One attribute's value.
#[derive(Clone, Debug, PartialEq)]
pub enum AttrValue {
    Int(i64),
    Float(f32),
    String(String),
    Ints(Vec<i64>),
    Floats(Vec<f32>),
    Strings(Vec<String>),
    Tensor(Tensor),
    /// A subgraph (`If` branches, `Loop` and `Scan` bodies), or why it could not be read.
    Graph(std::sync::Arc<Result<OnnxGraph, String>>),
    /// A kind Kiln does not read (lists of tensors or graphs, sparse tensors, type protos).
    Other(&'static str),
}

impl AttrValue {
    /// The kind's name, as errors show it.
    pub fn kind(&self) -> &'static str {
        match self {
            AttrValue::Int(_) => "int",
            AttrValue::Float(_) => "float",
            AttrValue::String(_) => "string",
            AttrValue::Ints(_) => "ints",
            AttrValue::Floats(_) => "floats",
            AttrValue::Strings(_) => "strings",
            AttrValue::Tensor(_) => "tensor",
            AttrValue::Graph(_) => "graph",
            AttrValue::Other(kind) => kind,
        }
    }
}

/// A node's attributes in file order, with getters whose errors name the node, op and attribute.
#[derive(Clone, Debug, PartialEq)]
pub struct Attributes {
    node: String,
    op: String,
    list: Vec<(String, AttrValue)>,
}

macro_rules! getter {
    ($(#[$doc:meta])* $name:ident, $name_or:ident, $variant:ident, $kind:literal, $ty:ty) => {
        $(#[$doc])*
        pub fn $name(&self, name: &str) -> Result<$ty, OnnxError> {
            match self.get(name) {
                Some(AttrValue::$variant(v)) => Ok(v.clone()),
                Some(other) => Err(self.wrong_kind(name, $kind, other)),
                None => Err(self.error(name, AttrProblem::Missing)),
            }
        }

        /// Like the getter without `_or`, with `default` when the attribute is absent.
        pub fn $name_or(&self, name: &str, default: $ty) -> Result<$ty, OnnxError> {
            match self.get(name) {
                None => Ok(default),
                Some(_) => self.$name(name),
            }
        }
    };
}

impl Attributes {
    /// No attributes, for a node Kiln makes itself; `node` and `op` name it in errors.
    pub(crate) fn none(node: &str, op: &str) -> Attributes {
        Attributes {
            node: node.to_string(),
            op: op.to_string(),
            list: Vec::new(),
        }
    }

    /// Reads a node's attributes; `node` and `op` name it in later errors.
    pub(crate) fn from_protos(
        node: &str,
        op: &str,
        protos: Vec<AttributeProto>,
    ) -> Result<Attributes, OnnxError> {
        let mut attrs = Attributes {
            node: node.to_string(),
            op: op.to_string(),
            list: Vec::with_capacity(protos.len()),
        };
        for proto in protos {
            let name = proto.name.clone().unwrap_or_default();
            let value = attrs.read_value(&name, proto)?;
            attrs.list.push((name, value));
        }
        Ok(attrs)
    }

    pub fn get(&self, name: &str) -> Option<&AttrValue> {
        self.list.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    /// The attributes in file order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &AttrValue)> {
        self.list.iter().map(|(n, v)| (n.as_str(), v))
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    getter!(int, int_or, Int, "int", i64);
    getter!(float, float_or, Float, "float", f32);
    getter!(string, string_or, String, "string", String);
    getter!(ints, ints_or, Ints, "ints", Vec<i64>);
    getter!(floats, floats_or, Floats, "floats", Vec<f32>);
    getter!(strings, strings_or, Strings, "strings", Vec<String>);

    pub fn tensor(&self, name: &str) -> Result<&Tensor, OnnxError> {
        match self.get(name) {
            Some(AttrValue::Tensor(t)) => Ok(t),
            Some(other) => Err(self.wrong_kind(name, "tensor", other)),
            None => Err(self.error(name, AttrProblem::Missing)),
        }
    }

    /// A subgraph attribute.
    pub fn graph(&self, name: &str) -> Result<&OnnxGraph, OnnxError> {
        match self.get(name) {
            Some(AttrValue::Graph(g)) => match g.as_ref() {
                Ok(g) => Ok(g),
                Err(why) => Err(self.error(name, AttrProblem::Invalid(why.clone()))),
            },
            Some(other) => Err(self.wrong_kind(name, "graph", other)),
            None => Err(self.error(name, AttrProblem::Missing)),
        }
    }

    /// The value of a `Constant` node, from whichever `value*` attribute it has.
    pub fn constant(&self) -> Result<Tensor, OnnxError> {
        let found = self
            .list
            .iter()
            .find(|(n, _)| CONSTANT_ATTRS.contains(&n.as_str()));
        let Some((name, value)) = found else {
            return Err(self.error("value", AttrProblem::Missing));
        };
        let ints = |dims: Vec<usize>, v: &[i64]| Tensor::from_i64(Scalar::I64, dims, v);
        let made = match (name.as_str(), value) {
            ("value", AttrValue::Tensor(t)) => return Ok(t.clone()),
            ("value_float", AttrValue::Float(v)) => Tensor::from_f32(vec![], &[*v]),
            ("value_floats", AttrValue::Floats(v)) => Tensor::from_f32(vec![v.len()], v),
            ("value_int", AttrValue::Int(v)) => ints(vec![], &[*v]),
            ("value_ints", AttrValue::Ints(v)) => ints(vec![v.len()], v),
            ("value_string" | "value_strings", _) => {
                return Err(self.error(name, AttrProblem::Unsupported("string constants")))
            }
            ("sparse_value", _) => {
                return Err(self.error(name, AttrProblem::Unsupported("sparse constants")))
            }
            (_, other) => {
                let problem = AttrProblem::Invalid(format!("unexpected {}", other.kind()));
                return Err(self.error(name, problem));
            }
        };
        made.map_err(|e| self.error(name, AttrProblem::Invalid(e.to_string())))
    }

    fn error(&self, attr: &str, problem: AttrProblem) -> OnnxError {
        OnnxError::Attribute {
            node: self.node.clone(),
            op: self.op.clone(),
            attr: attr.to_string(),
            problem,
        }
    }

    fn wrong_kind(&self, attr: &str, expected: &'static str, found: &AttrValue) -> OnnxError {
        let found = found.kind();
        self.error(attr, AttrProblem::WrongKind { expected, found })
    }

    fn read_value(&self, name: &str, a: AttributeProto) -> Result<AttrValue, OnnxError> {
        let text = |s: Vec<u8>| String::from_utf8_lossy(&s).into_owned();
        let kind = match a.r#type.filter(|&t| t != 0) {
            Some(code) => AttributeType::try_from(code).map_err(|_| {
                self.error(name, AttrProblem::Invalid(format!("unknown type {code}")))
            })?,
            None => infer_kind(&a),
        };
        Ok(match kind {
            AttributeType::Int => AttrValue::Int(a.i.unwrap_or_default()),
            AttributeType::Float => AttrValue::Float(a.f.unwrap_or_default()),
            AttributeType::String => AttrValue::String(text(a.s.unwrap_or_default())),
            AttributeType::Ints => AttrValue::Ints(a.ints),
            AttributeType::Floats => AttrValue::Floats(a.floats),
            AttributeType::Strings => AttrValue::Strings(a.strings.into_iter().map(text).collect()),
            AttributeType::Tensor => {
                let proto = a.t.ok_or_else(|| self.error(name, AttrProblem::Missing))?;
                let label = format!("{}.{name}", self.node);
                AttrValue::Tensor(tensor_from_proto(proto, &label)?)
            }
            AttributeType::Graph => {
                let proto = a.g.ok_or_else(|| self.error(name, AttrProblem::Missing))?;
                let read = super::model::read_subgraph(proto).map_err(|e| e.to_string());
                AttrValue::Graph(std::sync::Arc::new(read))
            }
            AttributeType::Tensors => AttrValue::Other("tensors"),
            AttributeType::Graphs => AttrValue::Other("graphs"),
            AttributeType::SparseTensor => AttrValue::Other("sparse tensor"),
            AttributeType::SparseTensors => AttrValue::Other("sparse tensors"),
            AttributeType::TypeProto => AttrValue::Other("type proto"),
            AttributeType::TypeProtos => AttrValue::Other("type protos"),
            AttributeType::Undefined => AttrValue::Other("undefined"),
        })
    }
}

/// The kind of an attribute written without its `type` field (files older than IR version 2).
fn infer_kind(a: &AttributeProto) -> AttributeType {
    if a.i.is_some() {
        AttributeType::Int
    } else if a.f.is_some() {
        AttributeType::Float
    } else if a.s.is_some() {
        AttributeType::String
    } else if a.t.is_some() {
        AttributeType::Tensor
    } else if a.g.is_some() {
        AttributeType::Graph
    } else if !a.ints.is_empty() {
        AttributeType::Ints
    } else if !a.floats.is_empty() {
        AttributeType::Floats
    } else if !a.strings.is_empty() {
        AttributeType::Strings
    } else {
        AttributeType::Undefined
    }
}

impl Attributes {
    /// The subgraphs among the attributes that could be read.
    pub fn subgraphs(&self) -> impl Iterator<Item = &OnnxGraph> {
        self.list.iter().filter_map(|(_, v)| match v {
            AttrValue::Graph(g) => g.as_ref().as_ref().ok(),
            _ => None,
        })
    }
}
