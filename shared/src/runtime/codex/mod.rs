//! Codex (`codex exec`): OpenAI's coding-agent CLI.

pub mod argv;
pub mod meta;
pub mod stream;
