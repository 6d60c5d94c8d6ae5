//! Index expressions (`Node`s) as UOps, over the graph and the loop and thread variables.

use super::Lin;
use crate::shape::{render_to, Node, NodeRenderer};
use crate::uop::{UOpGraph, UOpId, UOpKind};
use std::cell::RefCell;
use std::collections::HashMap;

/// The index (`Node`) → UOp table, over the graph and the loop/thread variables.
struct IdxRenderer<'a> {
    g: RefCell<&'a mut UOpGraph>,
    vars: &'a HashMap<String, UOpId>,
}

impl NodeRenderer<UOpId> for IdxRenderer<'_> {
    fn num(&self, v: i64) -> UOpId {
        self.g.borrow_mut().const_int(v)
    }
    fn var(&self, name: &str, min: i64, max: i64) -> UOpId {
        match self.vars.get(name) {
            Some(&u) => u,
            None => self.g.borrow_mut().node(
                UOpKind::DefineVar {
                    name: name.to_string(),
                    min,
                    max,
                },
                Some(crate::dtype::DType::I32),
                vec![],
            ),
        }
    }
    fn mul(&self, a: UOpId, b: i64) -> UOpId {
        let c = self.num(b);
        self.g.borrow_mut().binary(crate::ops::BinaryOp::Mul, a, c)
    }
    fn div(&self, a: UOpId, b: i64) -> UOpId {
        let c = self.num(b);
        self.g.borrow_mut().binary(crate::ops::BinaryOp::Div, a, c)
    }
    fn modulo(&self, a: UOpId, b: i64) -> UOpId {
        let c = self.num(b);
        self.g.borrow_mut().binary(crate::ops::BinaryOp::Mod, a, c)
    }
    fn lt(&self, a: UOpId, b: i64) -> UOpId {
        let c = self.num(b);
        self.g
            .borrow_mut()
            .binary(crate::ops::BinaryOp::CmpLt, a, c)
    }
    fn add(&self, a: UOpId, b: UOpId) -> UOpId {
        self.g.borrow_mut().binary(crate::ops::BinaryOp::Add, a, b)
    }
    fn and(&self, a: UOpId, b: UOpId) -> UOpId {
        self.g.borrow_mut().binary(crate::ops::BinaryOp::And, a, b)
    }
}

impl Lin {
    /// `n` as a UOp.
    pub(super) fn render(&mut self, n: &Node) -> UOpId {
        let r = IdxRenderer {
            g: RefCell::new(&mut self.g),
            vars: &self.loop_uops,
        };
        render_to(n, &r)
    }
}
