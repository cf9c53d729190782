//! Claude Code (`claude -p`).

pub mod argv;
pub mod meta;
