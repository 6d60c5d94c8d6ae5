//! Shared support for the integration tests: the linearizer's property tests and test graphs.
#![allow(dead_code)]

pub mod cdriver;
pub mod gen;
pub mod naive;
pub mod rng;
pub mod views;
pub mod weights;
