//! Kimi: Kimi Code (`kimi`, stream-json print mode) and the legacy kimi-cli (`kimi --print`).

pub mod argv;
pub mod meta;
