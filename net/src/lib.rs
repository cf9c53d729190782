//! What in moot speaks HTTP: the HTTP stack ([`http`]), moot-broker's engine (the omp seat's
//! proxy and the credential proxy, [`broker`]), the fake model provider ([`fake_model`]) and
//! moot-doctor's engine ([`doctor`]), which certifies a CLI against that fake model, and the
//! OpenTelemetry export of a run's events ([`otlp`], moot-otlp's engine).
//!
//! Kept out of the core crate (`shared/`, `moot`) so that the parsers, moot-render, moot-run
//! and moot-sandbox compile no async runtime, HTTP or TLS crate; `shared/tests/architecture.rs`
//! checks that layering against `cargo metadata`.

pub mod broker;
pub mod doctor;
pub mod egress;
pub mod fake_model;
pub mod http;
pub mod otlp;
