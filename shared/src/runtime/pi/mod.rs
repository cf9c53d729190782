//! pi (`pi -p --mode json`), omp's ancestor.

pub mod argv;
pub mod meta;
