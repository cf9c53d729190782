//! Kimi: Kimi Code (`kimi -p`, TypeScript, current) and the legacy kimi-cli (`kimi --print`, Python).

pub mod stream;
