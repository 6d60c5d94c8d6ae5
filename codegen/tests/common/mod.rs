//! Shared support for the linearizer's property tests.
#![allow(dead_code)]

pub mod cdriver;
pub mod gen;
pub mod naive;
pub mod rng;
pub mod views;
