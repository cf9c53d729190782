//! Claude Code (`claude -p`): Anthropic's coding-agent CLI.

pub mod stream;
