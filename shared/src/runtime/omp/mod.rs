//! omp (oh-my-pi): a multi-provider routing harness, the primary target.

pub mod argv;
pub mod meta;
pub mod stream;
