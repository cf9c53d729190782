//! pi (badlogic/pi-mono, `@mariozechner/pi-coding-agent`): omp's ancestor, same event family.

pub mod stream;
