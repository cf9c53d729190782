//! Claude Code (`claude -p`): Anthropic's coding-agent CLI.

pub mod argv;
pub mod meta;
pub mod stream;
