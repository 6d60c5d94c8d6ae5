//! Kiln's host-side compiler.
//!
//! Data flows one way through the stages:
//! import → graph → schedule → kernel → linearize → render → plan → bundle.

pub mod dtype;
pub mod shape;
