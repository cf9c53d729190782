//! What moot-doctor's test files share: the built doctor, and how its output is read.
#![allow(dead_code)]

use std::process::{Command, Output};

/// The doctor, built beside the tools it runs.
pub fn doctor() -> Command {
    Command::new(moot_e2e::tool("moot-doctor"))
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}
