//! Codex (`codex exec`): OpenAI's coding-agent CLI.

pub mod stream;
