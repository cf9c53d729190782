//! Codex CLI (`codex exec --json`).

pub mod argv;
pub mod meta;
