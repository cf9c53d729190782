//! The module graph of the library, read from its sources: no cycle between top-level modules,
//! and no runtime module reaching a driver. A runtime module is written against the model
//! (src/model/) and the parser contract (src/dialect.rs); the drivers that read those records
//! (render, registry, profile, sandbox, exec, parse, ...) may depend on the runtimes, never the
//! reverse, so a change to a driver cannot ripple into a runtime through a cycle.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Modules that drive a tool or assemble the registry: a runtime module must not import them.
const DRIVERS: &[&str] = &[
    "broker",
    "env_preset",
    "exec",
    "parse",
    "profile",
    "registry",
    "render",
    "report",
    "sandbox",
    "testkit",
];

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file belongs to (`src/runtime/omp/argv.rs` → `runtime`).
fn top_module(file: &Path) -> String {
    let relative = file.strip_prefix(src_dir()).unwrap();
    let first = relative.components().next().unwrap();
    let name = first.as_os_str().to_string_lossy();
    name.trim_end_matches(".rs").to_string()
}

/// The code of a file without its comments (doc comments name modules in prose).
fn code_of(text: &str) -> String {
    text.lines()
        .map(|line| match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The top-level modules a piece of code names as `crate::x`, `crate::{x, y::z}`.
fn crate_references(code: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            found.extend(group_heads(group));
        } else {
            found.insert(identifier(rest));
        }
    }
    found.retain(|name| !name.is_empty());
    found
}

/// The leading identifiers of the items of a `{...}` group, up to its closing brace.
fn group_heads(group: &str) -> Vec<String> {
    let (mut heads, mut depth, mut start) = (Vec::new(), 0usize, true);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => start = true,
            c if start && !c.is_whitespace() => {
                heads.push(identifier(&group[i..]));
                start = false;
            }
            _ => {}
        }
    }
    heads
}

fn identifier(text: &str) -> String {
    text.chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect()
}

/// Top-level module → the other top-level modules it names.
fn module_graph() -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(&src_dir(), &mut files);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in files {
        let module = top_module(&file);
        if module == "lib" {
            continue;
        }
        let mut references = crate_references(&code_of(&fs::read_to_string(&file).unwrap()));
        references.remove(&module);
        graph.entry(module).or_default().extend(references);
    }
    graph
}

/// A cycle through `start`, as the path of modules, if there is one.
fn cycle_from(graph: &BTreeMap<String, BTreeSet<String>>, start: &str) -> Option<Vec<String>> {
    let mut stack = vec![(start.to_string(), vec![start.to_string()])];
    let mut seen = BTreeSet::new();
    while let Some((module, path)) = stack.pop() {
        for next in graph.get(&module).into_iter().flatten() {
            if next == start {
                let mut cycle = path.clone();
                cycle.push(next.clone());
                return Some(cycle);
            }
            if seen.insert(next.clone()) {
                let mut longer = path.clone();
                longer.push(next.clone());
                stack.push((next.clone(), longer));
            }
        }
    }
    None
}

#[test]
fn the_module_graph_has_no_cycle() {
    let graph = module_graph();
    assert!(graph.contains_key("render") && graph.contains_key("runtime"));
    let cycles: Vec<String> = graph
        .keys()
        .filter_map(|module| cycle_from(&graph, module))
        .map(|cycle| cycle.join(" -> "))
        .collect();
    assert!(cycles.is_empty(), "module cycles:\n{}", cycles.join("\n"));
}

#[test]
fn no_runtime_module_imports_a_driver() {
    let graph = module_graph();
    let reached: Vec<&String> = graph["runtime"]
        .iter()
        .filter(|module| DRIVERS.contains(&module.as_str()))
        .collect();
    assert!(
        reached.is_empty(),
        "src/runtime/ imports driver modules {reached:?}"
    );
}

#[test]
fn the_reader_finds_every_form_of_reference() {
    let code = code_of(
        "use crate::a::B;\nuse crate::{c, d::{e, f}, g};\nlet x = crate::h::i(); // crate::j\n",
    );
    let found: Vec<String> = crate_references(&code).into_iter().collect();
    assert_eq!(found, ["a", "c", "d", "g", "h"]);
    let graph = BTreeMap::from([
        ("a".to_string(), BTreeSet::from(["b".to_string()])),
        ("b".to_string(), BTreeSet::from(["a".to_string()])),
        ("c".to_string(), BTreeSet::from(["a".to_string()])),
    ]);
    assert_eq!(cycle_from(&graph, "a").unwrap(), ["a", "b", "a"]);
    assert_eq!(cycle_from(&graph, "c"), None);
}
