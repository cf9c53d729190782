//! Shell: a configured command run by `sh -c`, for smoke tests, demos and contract checks.

pub mod argv;
pub mod meta;
