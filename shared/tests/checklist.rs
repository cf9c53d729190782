//! The checklist of CONTRIBUTING.md ("Adding a runtime"), walked over the registry: every
//! registered runtime has each piece a runtime is made of, and nothing in the tree belongs to a
//! runtime the registry does not know. A runtime added without one of them fails here, naming
//! what is missing.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use moot::model::Meta;
use moot::registry;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(path: &str) -> String {
    fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Whether `path` (relative to the workspace root) is a file.
fn is_file(path: &str) -> bool {
    root().join(path).is_file()
}

/// The dialects some runtime's output is read by.
fn dialects() -> BTreeSet<&'static str> {
    registry::all().iter().filter_map(|m| m.parser).collect()
}

/// What `meta` lacks of the checklist, one line each.
fn missing(meta: &Meta) -> Vec<String> {
    let name = meta.name;
    let mut missing = Vec::new();
    let mut need = |ok: bool, what: String| {
        if !ok {
            missing.push(what);
        }
    };
    let adapter = format!("scripts/adapters/{name}/adapter.sh");
    need(is_file(&adapter), adapter);
    let row = format!("\n.TP\n.B {}\n", name.replace('-', "\\-"));
    need(
        read("man/moot.7").contains(&row),
        format!("a row for {name} in man/moot.7"),
    );
    if let Some(dialect) = meta.parser {
        let tool = format!("moot-parse-{dialect}");
        need(
            is_file(&format!("bins/{tool}/src/main.rs")),
            format!("bins/{tool}/"),
        );
        let page = format!("man/{tool}.1");
        need(is_file(&page), page);
        let goldens = fs::read_dir(root().join("testdata").join(dialect))
            .map(|dir| {
                dir.filter(|e| {
                    let path = e.as_ref().unwrap().path();
                    path.extension().is_some_and(|x| x == "ndjson")
                        && path.with_extension("json").is_file()
                })
                .count()
            })
            .unwrap_or(0);
        need(
            goldens >= 25,
            format!("25 goldens in testdata/{dialect}/ (has {goldens})"),
        );
        need(
            read("fuzz/Cargo.toml").contains(&format!("name = \"parse_{dialect}\""))
                && is_file(&format!("fuzz/fuzz_targets/parse_{dialect}.rs")),
            format!("the fuzz target parse_{dialect}"),
        );
        need(
            is_file(&format!("testdata/{dialect}/bench.round")),
            format!("testdata/{dialect}/bench.round (scripts/bench/gen-stream.py's recipe)"),
        );
        need(
            meta.doctor.is_some(),
            "its moot-doctor record (doctor: Some(..) from its doctor.rs)".to_string(),
        );
    }
    let listed = preset_in_man_page(name);
    let groups = meta.env.indivisible.iter().copied().flatten();
    for kept in meta.env.names.iter().chain(groups).chain(meta.env.keys) {
        need(
            listed.as_deref().is_some_and(|text| text.contains(kept)),
            format!("{kept} in the {name} entry of man/moot-run.1's environment presets"),
        );
    }
    need(
        listed.is_some(),
        format!("an entry for {name} in man/moot-run.1's environment presets"),
    );
    if let Some(certify) = meta.doctor {
        missing.extend(install_file_gaps(meta, certify));
    }
    missing
}

/// What the install file of a certified runtime lacks: every key install.sh, e2e.sh and the
/// tests read, a pinned `N.N.N`, its own runtime's name, and its place under the runtime's
/// folder as `<CLI>.install`.
fn install_file_gaps(meta: &Meta, certify: &moot::model::Certify) -> Vec<String> {
    let mut gaps = Vec::new();
    for key in [
        "CLI",
        "RUNTIME",
        "DIR",
        "FROM",
        "PACKAGE",
        "PINNED",
        "PROGRAM",
        "SHELL_TOOLS",
        "HOME_CODE",
    ] {
        if certify.install_field(key).is_none_or(str::is_empty) {
            gaps.push(format!("{key}= in its install file"));
        }
    }
    for key in ["WITH", "PATH_DIRS", "READ_TOOLS", "ADAPTER_ENV", "BUNDLE"] {
        if certify.install_field(key).is_none() {
            gaps.push(format!("{key}= (empty when none) in its install file"));
        }
    }
    for key in ["LIVE_STREAM", "ASKS", "HIDES_KEYS", "NO_USAGE"] {
        if !matches!(certify.install_field(key), Some("" | "1")) {
            gaps.push(format!("{key}=1 or {key}= in its install file"));
        }
    }
    gaps.extend(adapter_drive_gaps(meta, certify));
    if certify.install_field("RUNTIME") != Some(meta.name) {
        gaps.push(format!("RUNTIME={} in its install file", meta.name));
    }
    if !matches!(certify.install_field("FROM"), Some("npm" | "pypi")) {
        gaps.push("FROM=npm or FROM=pypi in its install file".into());
    }
    if !matches!(
        certify.install_field("WIRE"),
        Some("chat" | "anthropic" | "responses")
    ) {
        gaps.push("WIRE=chat, anthropic or responses in its install file".into());
    }
    if !root()
        .join("testdata/requests")
        .join(meta.name)
        .join("first.json")
        .is_file()
    {
        gaps.push(format!(
            "the requests it sends its model in testdata/requests/{}/ (testdata/requests/README.md)",
            meta.name
        ));
    }
    let pinned = certify.pinned().split('.').collect::<Vec<_>>();
    if pinned.len() != 3 || pinned.iter().any(|n| n.parse::<u32>().is_err()) {
        gaps.push(format!("a PINNED=N.N.N, not {:?}", certify.pinned()));
    }
    let found = install_files()
        .into_iter()
        .find(|(_, text)| text == certify.install);
    let cli = certify.install_field("CLI").unwrap_or_default();
    match found {
        Some((path, _)) if path.ends_with(&format!("/{cli}.install")) => {}
        _ => gaps.push(format!(
            "its install file as shared/src/runtime/*/{cli}.install"
        )),
    }
    gaps
}

/// Where the e2e suite's way of driving the adapter (its install file) and the registry must
/// agree: a managed session's adapter has its bundle, and one that takes a tool limit (`tools`)
/// has a READ_TOOLS its limit can name, since the suite derives both scenarios from them.
fn adapter_drive_gaps(meta: &Meta, certify: &moot::model::Certify) -> Vec<String> {
    let mut gaps = Vec::new();
    let bundle = certify.install_field("BUNDLE").unwrap_or_default();
    if meta.managed_bundle == bundle.is_empty() {
        gaps.push(format!(
            "BUNDLE= in its install file {} its managed_bundle ({})",
            if bundle.is_empty() {
                "empty, against"
            } else {
                "set, against"
            },
            meta.managed_bundle
        ));
    }
    if !meta.tools.is_empty() {
        let read = certify.install_field("READ_TOOLS").unwrap_or_default();
        match read.split(' ').next() {
            Some(tool) if meta.tools.contains(&tool) => {}
            _ => gaps.push(format!(
                "a READ_TOOLS whose first is one of its tools ({})",
                meta.tools.join(", ")
            )),
        }
    }
    gaps
}

/// Every `shared/src/runtime/<rt>/*.install` file, as (path from the root, text).
fn install_files() -> Vec<(String, String)> {
    let mut files = Vec::new();
    for folder in fs::read_dir(root().join("shared/src/runtime")).unwrap() {
        let folder = folder.unwrap().path();
        if !folder.is_dir() {
            continue;
        }
        for file in fs::read_dir(&folder).unwrap() {
            let path = file.unwrap().path();
            if path.extension().is_some_and(|e| e == "install") {
                let text = fs::read_to_string(&path).unwrap();
                let relative = path.strip_prefix(root()).unwrap().to_string_lossy();
                files.push((relative.replace("/../", "/"), text));
            }
        }
    }
    files
}

/// A pinned version is written once, in its install file: every install file is some certified
/// runtime's, and no script, test or engine writes a pinned version or package spec of its own.
#[test]
fn every_pinned_version_is_written_once() {
    let records: Vec<&str> = registry::all()
        .iter()
        .filter_map(|meta| meta.doctor.map(|certify| certify.install))
        .collect();
    for (path, text) in install_files() {
        assert!(
            records.contains(&text.as_str()),
            "{path}: no runtime's record reads it"
        );
    }
    let mut sources = Vec::new();
    for dir in ["scripts", "bins", "net", "testkit", "e2e", ".ci"] {
        collect_files(&root(), &root().join(dir), &mut sources);
    }
    sources.push(("Makefile".into(), read("Makefile")));
    for meta in registry::all() {
        let Some(certify) = meta.doctor else { continue };
        let package = certify.install_field("PACKAGE").unwrap_or_default();
        let spellings = [
            format!("\"{}\"", certify.pinned()),
            format!("{package}@"),
            format!("{package}=="),
        ];
        for (path, text) in &sources {
            for spelling in &spellings {
                assert!(
                    !text.contains(spelling.as_str()),
                    "{path} writes {spelling}: read it from {}'s install file",
                    meta.name
                );
            }
        }
    }
}

/// The text man/moot-run.1 gives `runtime` among its environment presets: the `.TP` entry whose
/// tag line names it.
fn preset_in_man_page(runtime: &str) -> Option<String> {
    let page = read("man/moot-run.1");
    let start = page.find(".B Environment presets.")?;
    let end = start + page[start..].find("\n.PP\n")?;
    page[start..end].split("\n.TP\n").skip(1).find_map(|entry| {
        let (tag, text) = entry.split_once('\n')?;
        let tag = tag.replace("\\-", "-");
        let mut names = tag.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'));
        names.any(|word| word == runtime).then(|| text.to_string())
    })
}

#[test]
fn every_runtime_has_every_piece() {
    let gaps: Vec<String> = registry::all()
        .iter()
        .flat_map(|meta| {
            missing(meta)
                .into_iter()
                .map(move |what| format!("{}: {what}", meta.name))
        })
        .collect();
    assert!(gaps.is_empty(), "missing:\n{}", gaps.join("\n"));
}

/// Every parser bin and every testdata folder of captures belongs to a registered dialect, and
/// every folder of captured requests (testdata/requests, what the fake model is checked
/// against) to a registered runtime.
#[test]
fn nothing_belongs_to_an_unregistered_runtime() {
    let dialects = dialects();
    for entry in fs::read_dir(root().join("bins")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if let Some(dialect) = name.strip_prefix("moot-parse-") {
            assert!(
                dialects.contains(dialect),
                "bins/{name}: no runtime reads it"
            );
        }
    }
    for entry in fs::read_dir(root().join("testdata")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() && !["adversarial", "requests", "repoplant"].contains(&name.as_str()) {
            assert!(
                dialects.contains(name.as_str()),
                "testdata/{name}: no runtime"
            );
        }
    }
    for entry in fs::read_dir(root().join("testdata/requests")).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            assert!(
                registry::find(&name).is_ok(),
                "testdata/requests/{name}: no runtime"
            );
        }
    }
    for entry in fs::read_dir(root().join("testdata/repoplant")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        assert!(
            registry::find(&name).is_ok(),
            "testdata/repoplant/{name}: no runtime"
        );
    }
    for entry in fs::read_dir(root().join("scripts/adapters")).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            assert!(
                registry::find(&name).is_ok(),
                "scripts/adapters/{name}: not registered"
            );
        }
    }
}

/// moot-doctor's `repo` scenario plants what the e2e suite plants: every file of
/// testdata/repoplant/<runtime>/ that runs code (it writes a marker) or moves the provider.
#[test]
fn the_doctor_plants_every_file_that_runs_code() {
    for meta in registry::all() {
        let Some(certify) = meta.doctor else { continue };
        let folder = root().join("testdata/repoplant").join(meta.name);
        let folder = if folder.is_dir() {
            folder
        } else {
            root()
                .join("testdata/repoplant")
                .join(meta.name.trim_end_matches("-cli"))
        };
        let mut files = Vec::new();
        collect_files(&folder, &folder, &mut files);
        for (relative, text) in files {
            if text.contains("@MARK@") || text.contains("127.0.0.1:9/") {
                assert!(
                    certify.plants.iter().any(|(path, _)| *path == relative),
                    "{}: {relative} is not among its doctor's plants",
                    meta.name
                );
            }
        }
    }
}

fn collect_files(base: &Path, dir: &Path, out: &mut Vec<(String, String)>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect_files(base, &path, out);
        } else {
            let relative = path
                .strip_prefix(base)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let bytes = fs::read(&path).unwrap();
            out.push((relative, String::from_utf8_lossy(&bytes).into_owned()));
        }
    }
}

/// The scripts every runtime shares, which must learn each runtime's facts from its record, its
/// install file or its adapter, never from a list of their own.
const SHARED_SCRIPTS: &[&str] = &[
    "scripts/realcli/e2e.sh",
    "scripts/realcli/install.sh",
    "scripts/realcli/layout.sh",
    "scripts/realcli/run_all.sh",
    "scripts/adapters/lib.sh",
    ".ci/run",
];

/// The registered runtimes `script` names in its code: words outside comments and outside
/// double-quoted text (messages, paths), as a `case` pattern or a comparison would.
fn runtimes_named_in(script: &str) -> BTreeSet<&'static str> {
    let mut named = BTreeSet::new();
    for line in script.lines() {
        let code = line.trim_start();
        if code.starts_with('#') {
            continue;
        }
        let unquoted: String = code.split('"').step_by(2).collect::<Vec<_>>().join(" ");
        for word in unquoted.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-')) {
            if let Ok(meta) = registry::find(word) {
                named.insert(meta.name);
            }
        }
    }
    named
}

/// No shared script keeps a list or a case of runtimes (a ninth runtime would have to be added
/// there by hand): the e2e suite, the installer, the capture runner, the adapters' library and
/// CI name none.
#[test]
fn no_shared_script_names_a_runtime() {
    for path in SHARED_SCRIPTS {
        let named = runtimes_named_in(&read(path));
        assert!(named.is_empty(), "{path} names {named:?}");
    }
    // The scan sees what it looks for.
    let planted = "x() {\n    case $cli in pi) limit=read ;; esac\n    [ \"$r\" = codex ]\n}\n# omp\necho \"claude\"\n";
    assert_eq!(
        runtimes_named_in(planted).into_iter().collect::<Vec<_>>(),
        ["codex", "pi"]
    );
}

/// The checklist reads what it claims to: a record without its pieces is reported.
#[test]
fn a_runtime_without_its_pieces_is_reported() {
    let ghost = Meta {
        name: "ghost",
        parser: Some("ghost"),
        doctor: None,
        ..*registry::find("omp").unwrap()
    };
    let gaps = missing(&ghost);
    for piece in [
        "scripts/adapters/ghost/adapter.sh",
        "a row for ghost in man/moot.7",
        "bins/moot-parse-ghost/",
        "man/moot-parse-ghost.1",
        "25 goldens in testdata/ghost/ (has 0)",
        "the fuzz target parse_ghost",
        "testdata/ghost/bench.round (scripts/bench/gen-stream.py's recipe)",
        "its moot-doctor record (doctor: Some(..) from its doctor.rs)",
    ] {
        assert!(
            gaps.iter().any(|g| g == piece),
            "{piece} not reported: {gaps:?}"
        );
    }
}

/// The install file and the registry are held together: claude's record without its managed
/// session, or with a tool its READ_TOOLS does not name, is reported.
#[test]
fn an_install_file_that_disagrees_with_its_record_is_reported() {
    let claude = registry::find("claude").unwrap();
    let certify = claude.doctor.unwrap();
    assert!(adapter_drive_gaps(claude, certify).is_empty());
    let unmanaged = Meta {
        managed_bundle: false,
        ..*claude
    };
    assert!(
        adapter_drive_gaps(&unmanaged, certify)[0].starts_with("BUNDLE= in its install file set")
    );
    let renamed = Meta {
        tools: &["Bash", "ReadFile"],
        ..*claude
    };
    assert!(adapter_drive_gaps(&renamed, certify)[0].starts_with("a READ_TOOLS"));
}

/// Every tool (a folder under bins/) has a row in README.md's tool table and is named in
/// moot(7)'s DESCRIPTION and SEE ALSO, so a reader of either finds it.
#[test]
fn every_tool_is_in_the_readme_table_and_in_moot7() {
    let readme = read("README.md");
    let moot7 = read("man/moot.7");
    let (description, see_also) = moot7
        .split_once(".SH SEE ALSO")
        .expect("moot.7 has a SEE ALSO");
    let description = description
        .split_once(".SH DESCRIPTION")
        .and_then(|(_, rest)| rest.split_once("\n.SH "))
        .expect("moot.7 has a DESCRIPTION")
        .0;
    let mut gaps = Vec::new();
    for entry in fs::read_dir(root().join("bins")).unwrap() {
        let tool = entry.unwrap().file_name().to_string_lossy().into_owned();
        if !readme.lines().any(|l| l.starts_with(&format!("| `{tool}"))) {
            gaps.push(format!("{tool}: no row in README.md's tool table"));
        }
        if !description.contains(&format!("{tool} (1)")) {
            gaps.push(format!("{tool}: not in moot.7's DESCRIPTION"));
        }
        if !see_also.contains(&format!(".BR {tool} (1)")) {
            gaps.push(format!("{tool}: not in moot.7's SEE ALSO"));
        }
    }
    assert!(gaps.is_empty(), "missing:\n{}", gaps.join("\n"));
}
