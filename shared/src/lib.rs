//! The library every moot tool links.
//!
//! Each module owns one concern; runtime-specific knowledge (flags, event names, session grammar)
//! lives only under [`runtime`], one module per runtime.

pub mod envelope;
pub mod gitmoot_result;
pub mod ndjson;
pub mod outcome;
pub mod parse;
pub mod report;
pub mod runtime;
pub mod sniff;
#[cfg(feature = "testkit")]
pub mod testkit;
