//! The layering of the workspace. Between crates, cargo's resolved graph (`cargo metadata`):
//! the core crate and every tool but moot-broker and moot-doctor link no async runtime, HTTP or
//! TLS crate, nothing links moot-net but those two, and the test support crate is a
//! dev-dependency only. Inside the core crate, read from its sources: no cycle between
//! top-level modules, and a runtime module uses only the modules a runtime is written against
//! (the model, the parser contract and their leaves); the drivers that read those records
//! (render, registry, profile, sandbox, exec, parse, ...) may depend on the runtimes, never the
//! reverse, so a change to a driver cannot ripple into a runtime through a cycle.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// What a runtime module is written against: the model's records, the parser contract and the
/// leaves they use. Every other module (a new one included) counts as a driver, which a
/// runtime must not import.
const A_RUNTIME_USES: &[&str] = &[
    "dialect",
    "envelope",
    "event",
    "json_text",
    "model",
    "ndjson",
    "private_file",
    "session",
    "sniff",
    "worktree",
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
        .filter(|module| !A_RUNTIME_USES.contains(&module.as_str()))
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

/// Crates that make up an async runtime, an HTTP stack or TLS: what the core must not link.
const NETWORK_CRATES: &[&str] = &[
    "tokio",
    "mio",
    "hyper",
    "hyper-util",
    "hyper-rustls",
    "http",
    "rustls",
    "rustls-native-certs",
    "tokio-rustls",
    "ring",
];

/// The workspace's resolved graph: package name → (normal and build dependencies, dev
/// dependencies), by package name.
type Graph = BTreeMap<String, (BTreeSet<String>, BTreeSet<String>)>;

fn resolved_graph() -> &'static Graph {
    static GRAPH: std::sync::OnceLock<Graph> = std::sync::OnceLock::new();
    GRAPH.get_or_init(read_resolved_graph)
}

/// The host's target triple, so that `cargo metadata` resolves (and needs downloaded) only
/// what builds here.
fn host_triple() -> String {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = std::process::Command::new(rustc)
        .arg("-vV")
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let host = text.lines().find_map(|l| l.strip_prefix("host: "));
    host.unwrap().to_string()
}

fn read_resolved_graph() -> Graph {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--frozen"])
        .args(["--filter-platform", &host_triple()])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let name_of: BTreeMap<&str, &str> = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["id"].as_str().unwrap(), p["name"].as_str().unwrap()))
        .collect();
    let mut graph = Graph::new();
    for node in meta["resolve"]["nodes"].as_array().unwrap() {
        let (linked, dev) = graph
            .entry(name_of[node["id"].as_str().unwrap()].to_string())
            .or_default();
        for dep in node["deps"].as_array().unwrap() {
            let name = name_of[dep["pkg"].as_str().unwrap()].to_string();
            for kind in dep["dep_kinds"].as_array().unwrap() {
                match kind["kind"].as_str() {
                    Some("dev") => dev.insert(name.clone()),
                    _ => linked.insert(name.clone()),
                };
            }
        }
    }
    graph
}

/// Every package `root` links, directly or not (dev-dependencies of none of them).
fn linked_closure(graph: &Graph, root: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut stack = vec![root.to_string()];
    while let Some(name) = stack.pop() {
        for next in &graph[&name].0 {
            if seen.insert(next.clone()) {
                stack.push(next.clone());
            }
        }
    }
    seen
}

fn workspace_members() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut manifests = vec![root.join("shared"), root.join("net"), root.join("testkit")];
    let mut bins: Vec<PathBuf> = fs::read_dir(root.join("bins"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    bins.sort();
    manifests.extend(bins);
    manifests
        .iter()
        .map(|dir| {
            let text = fs::read_to_string(dir.join("Cargo.toml")).unwrap();
            let line = text.lines().find(|l| l.starts_with("name = ")).unwrap();
            line.trim_start_matches("name = ")
                .trim_matches('"')
                .to_string()
        })
        .collect()
}

/// The parsers, moot-render, moot-run, moot-sandbox and moot-report link no HTTP, TLS or async
/// crate. moot-otlp does (it sends to a collector): the parsers reach it as a child process
/// (shared/src/exporter.rs), never by linking it.
#[test]
fn only_the_broker_the_doctor_and_the_exporter_link_a_network_stack() {
    let graph = resolved_graph();
    let speaking_http = [
        "moot-net",
        "moot-broker",
        "moot-doctor",
        "moot-otlp",
        "moot-testkit",
    ];
    let members = workspace_members();
    assert!(members.len() >= 14, "{members:?}");
    for member in &members {
        let linked = linked_closure(graph, member);
        if speaking_http.contains(&member.as_str()) {
            continue;
        }
        let network: Vec<&String> = linked
            .iter()
            .filter(|name| NETWORK_CRATES.contains(&name.as_str()) || *name == "moot-net")
            .collect();
        assert!(network.is_empty(), "{member} links {network:?}");
    }
    // The check sees what it looks for: moot-broker does link them.
    let broker = linked_closure(graph, "moot-broker");
    assert!(broker.contains("tokio") && broker.contains("rustls") && broker.contains("moot-net"));
}

#[test]
fn the_test_support_crate_is_a_dev_dependency_only() {
    let graph = resolved_graph();
    for member in workspace_members() {
        assert!(
            !linked_closure(graph, &member).contains("moot-testkit"),
            "{member} links moot-testkit outside its tests"
        );
    }
    assert!(graph["moot-parse-omp"].1.contains("moot-testkit"));
}

#[test]
fn the_core_links_no_other_crate_of_the_workspace() {
    let graph = resolved_graph();
    let linked = linked_closure(graph, "moot");
    let ours: Vec<&String> = linked.iter().filter(|n| n.starts_with("moot")).collect();
    assert!(ours.is_empty(), "moot links {ours:?}");
}
