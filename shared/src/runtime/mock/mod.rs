//! mock: the test-only echo.

pub mod argv;
pub mod meta;
