//! Tests of the shape module: hand-picked cases, and property tests against naive models.

mod naive;
mod symbolic_cases;
mod symbolic_props;
mod tracker_cases;
mod tracker_errors;
mod tracker_props;
