//! Runtime-specific knowledge, one module per runtime. Nothing outside these modules names a
//! runtime's flags, event types or session grammar.

pub mod claude;
pub mod codex;
pub mod kimi;
pub mod mock;
pub mod omp;
pub mod opencode;
pub mod pi;
pub mod pi_family;
pub mod shell;
