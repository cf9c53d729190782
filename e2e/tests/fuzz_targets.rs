//! fuzz/Cargo.toml lists its targets by hand, because cargo fuzz reads targets only from that
//! manifest's `[[bin]]` entries (it finds none on its own). This test keeps the list from
//! drifting: every file in fuzz/fuzz_targets/ is listed under its own name, and nothing else
//! is. That every parser has its target `parse_<dialect>` is the checklist's to check
//! (shared/tests/checklist.rs).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::fs;

use moot_e2e::root;

/// The `(name, path)` of each `bin` entry in fuzz/Cargo.toml, one inline table a line.
fn listed() -> Vec<(String, String)> {
    let manifest = fs::read_to_string(root().join("fuzz/Cargo.toml")).unwrap();
    let field = |line: &str, key: &str| {
        let start = line.find(&format!("{key} = \""))? + key.len() + 4;
        let len = line[start..].find('"')?;
        Some(line[start..start + len].to_string())
    };
    manifest
        .lines()
        .filter(|line| line.trim_start().starts_with("{ name = "))
        .map(|line| {
            let entry = (field(line, "name"), field(line, "path"));
            match entry {
                (Some(name), Some(path)) => (name, path),
                _ => panic!("fuzz/Cargo.toml: a target without name or path: {line}"),
            }
        })
        .collect()
}

#[test]
fn every_fuzz_target_is_listed_and_nothing_else() {
    let listed = listed();
    for (name, path) in &listed {
        assert_eq!(
            path,
            &format!("fuzz_targets/{name}.rs"),
            "fuzz/Cargo.toml: {name}"
        );
    }
    let names: BTreeSet<String> = listed.into_iter().map(|(name, _)| name).collect();
    let files: BTreeSet<String> = fs::read_dir(root().join("fuzz/fuzz_targets"))
        .unwrap()
        .map(|entry| {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            name.strip_suffix(".rs").unwrap_or(&name).to_string()
        })
        .collect();
    assert_eq!(
        names, files,
        "fuzz/Cargo.toml must list every fuzz/fuzz_targets/*.rs, and nothing else"
    );
}
