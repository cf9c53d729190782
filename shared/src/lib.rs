//! The library every moot tool links.
//!
//! Each module owns one concern; runtime-specific knowledge (flags, event names, session grammar)
//! lives only under [`runtime`], one module per runtime.

pub mod atomic_file;
pub mod capture;
pub mod cleanup;
pub mod columns;
pub mod dialect;
pub mod env_preset;
pub mod envelope;
pub mod event;
pub mod exec;
pub mod exporter;
pub mod gitmoot_result;
pub mod json_text;
pub mod model;
pub mod ndjson;
pub mod outcome;
pub mod parse;
pub mod private_file;
pub mod private_state;
pub mod privilege;
pub mod profile;
pub mod program;
pub mod protect;
pub mod reaper;
pub mod registry;
pub mod render;
pub mod report;
pub mod runtime;
pub mod sandbox;
pub mod seat_proxy;
pub mod seccomp;
pub mod seconds;
pub mod session;
pub mod shell_quote;
pub mod shim;
pub mod sniff;
pub mod stage;
pub mod summary;
pub mod surrogate;
pub mod tree;
pub mod worktree;
