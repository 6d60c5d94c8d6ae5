//! A model's state: values kept from one run to the next ([`StateInfo`]), read through
//! [`GOp::State`] nodes and replaced at the end of each run by their next values.

use super::{GOp, Graph, GraphError, Lazy, NodeId};
use crate::dtype::DType;
use crate::shape::ShapeTracker;
use crate::tensor::Tensor;

/// A value the model keeps from one run to the next (a streaming layer's ring buffer, a
/// recurrent layer's hidden state): read as [`GOp::State`], replaced by `next` at the end of a
/// run, `init` (or zeros) before the first run and after a reset.
#[derive(Clone, Debug, PartialEq)]
pub struct StateInfo {
    pub name: String,
    pub dtype: DType,
    pub shape: Vec<usize>,
    pub init: Option<Tensor>,
    /// The value the next run starts from; `None`: the state keeps its value.
    pub next: Option<Lazy>,
}

impl Graph {
    /// A new state of `dtype` and `shape`, starting from `init` (or zeros): its value as a run
    /// starts, and its index for [`Graph::set_next_state`].
    pub fn state(
        &mut self,
        name: &str,
        dtype: DType,
        shape: &[usize],
        init: Option<Tensor>,
    ) -> Result<(Lazy, usize), GraphError> {
        if let Some(t) = &init {
            if DType::from(t.dtype()) != dtype || t.shape() != shape {
                return Err(GraphError::Invalid {
                    op: "state",
                    reason: format!(
                        "\"{name}\" is {dtype} {shape:?}, its initial value {} {:?}",
                        DType::from(t.dtype()),
                        t.shape()
                    ),
                });
            }
        }
        let n = self.states.len();
        self.states.push(StateInfo {
            name: name.into(),
            dtype,
            shape: shape.to_vec(),
            init,
            next: None,
        });
        Ok((self.push(GOp::State(n), dtype, shape.to_vec(), vec![]), n))
    }

    /// Makes `value` the value state `n` holds when the next run starts.
    pub fn set_next_state(&mut self, n: usize, value: &Lazy) -> Result<(), GraphError> {
        let state = &mut self.states[n];
        if value.dtype != state.dtype || value.shape() != state.shape.as_slice() {
            return Err(GraphError::Invalid {
                op: "state",
                reason: format!(
                    "\"{}\" is {} {:?}, its next value {} {:?}",
                    state.name,
                    state.dtype,
                    state.shape,
                    value.dtype,
                    value.shape()
                ),
            });
        }
        state.next = Some(value.clone());
        Ok(())
    }

    /// Makes `value` state `n`'s initial value.
    pub fn set_initial_state(&mut self, n: usize, value: Tensor) -> Result<(), GraphError> {
        let state = &mut self.states[n];
        let (dtype, shape) = (DType::from(value.dtype()), value.shape());
        if dtype != state.dtype || shape != state.shape.as_slice() {
            return Err(GraphError::Invalid {
                op: "state",
                reason: format!(
                    "\"{}\" is {} {:?}, its initial value {dtype} {shape:?}",
                    state.name, state.dtype, state.shape
                ),
            });
        }
        state.init = Some(value);
        Ok(())
    }

    /// State `n`'s value so far in a run: its next value if one was set, else its value as the
    /// run started.
    pub fn current_state(&self, n: usize) -> Lazy {
        if let Some(next) = &self.states[n].next {
            return next.clone();
        }
        let id = (self.nodes.iter())
            .position(|node| node.op == GOp::State(n))
            .expect("a state has its node");
        let node = &self.nodes[id];
        Lazy {
            base: NodeId(id as u32),
            st: ShapeTracker::from_shape(&node.shape),
            dtype: node.dtype,
        }
    }

    /// The next value of each state that changes in a run: (state, value).
    pub fn next_states(&self) -> Vec<(usize, Lazy)> {
        let unchanged = |n: usize, v: &Lazy| {
            self.node(v.base).op == GOp::State(n) && v.st.contiguous() && v.st.views.len() == 1
        };
        (self.states.iter().enumerate())
            .filter_map(|(n, s)| Some((n, s.next.clone()?)))
            .filter(|(n, v)| !unchanged(*n, v))
            .collect()
    }
}
