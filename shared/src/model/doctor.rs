//! What a runtime declares for moot-doctor (net/src/doctor/): how to ask its CLI for its version,
//! the version moot is tested against, how to point the CLI at a provider origin from a private
//! HOME, and where the pinned CLI legitimately reports a scenario differently from the others.
//! Each runtime fills this in its own folder (`runtime/<rt>/doctor.rs`); the doctor only reads it.

use std::io;
use std::path::Path;

/// A runtime's record for moot-doctor.
#[derive(Debug)]
pub struct Certify {
    /// The arguments after the executable that make the CLI print its version and exit.
    pub version_args: &'static [&'static str],
    /// The pinned CLI's install file (`runtime/<rt>/<cli>.install`): the version moot's parsers
    /// are tested against, where scripts/realcli/install.sh gets it from and where it puts it.
    /// Read with [`Certify::pinned`] and [`Certify::install_field`].
    pub install: &'static str,
    /// Writes the CLI's configuration under a private, empty HOME so that it talks to the model
    /// at `origin` (`http://127.0.0.1:PORT`) only, with `key` as the provider's key where an
    /// operator keeps it, and says how to run it there.
    pub fake_home: fn(home: &Path, origin: &str, key: &str) -> io::Result<FakeHome>,
    /// Scenarios whose verdict on the pinned CLI differs from the doctor's default, as
    /// `(scenario, expected verdict)` in the doctor's notation (`ok`, `fail:<class>`, classes
    /// joined by `|` when either is right). net/src/doctor/ checks every name and verdict here.
    pub differs: &'static [(&'static str, &'static str)],
    /// The repository files the `repoplant` scenario plants in the workspace, `(path, text)`: every
    /// file of `testdata/repoplant/<runtime>/` that runs code or moves the provider when the CLI
    /// loads it. Its code writes a marker below `@MARK@` (the scenario's marker directory).
    pub plants: &'static [(&'static str, &'static str)],
    /// Marks `project` trusted in the configuration `fake_home` wrote under `home`, for a CLI
    /// that reads a repository's own configuration only from a project its user trusts (the
    /// e2e suite's repoplant scenario then proves that what it would read runs nothing).
    /// `None`: the CLI has no such notion.
    pub trust: Option<fn(home: &Path, project: &Path) -> io::Result<()>>,
}

impl Certify {
    /// The version moot's parsers are tested against.
    pub fn pinned(&self) -> &'static str {
        self.install_field("PINNED").unwrap_or_default()
    }

    /// The value of `key` in the install file (`KEY=VALUE` lines, `#` comments), `None` when
    /// the file has no such line.
    pub fn install_field(&self, key: &str) -> Option<&'static str> {
        self.install
            .lines()
            .filter(|line| !line.starts_with('#'))
            .find_map(|line| line.strip_prefix(key)?.strip_prefix('='))
    }
}

/// The `plants` of a runtime: `repo_plants!("pi": ".pi/extensions/evil.ts", ...)` reads each
/// file of `testdata/repoplant/pi/` into the binary, so the doctor plants what the e2e suite
/// plants.
macro_rules! repo_plants {
    ($runtime:literal: $($path:literal),* $(,)?) => {
        &[$((
            $path,
            include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../testdata/repoplant/",
                $runtime,
                "/",
                $path
            )),
        )),*]
    };
}
pub(crate) use repo_plants;

/// The provider key a certification's fake HOME configures, as an operator's holds a real one:
/// the certification's credential proxy holds it (moot-broker --forward), the fake model
/// answers 401 to any other key, and the seat gets only the job token.
pub const FAKE_KEY: &str = "dummy-not-a-secret";

/// How to run a CLI against the fake model from its private HOME.
#[derive(Debug, Default)]
pub struct FakeHome {
    /// Variables to set besides HOME (the CLI's own config locations, a dummy key, ...).
    pub env: Vec<(String, String)>,
    /// Which of those `moot-run --env-preset` must `--keep` (the preset drops them otherwise).
    pub keep: Vec<String>,
    /// The CLI names its session or its fatal error only on stderr: moot-run keeps it in a file
    /// (`--stderr-file`) that the parser reads.
    pub stderr_file: bool,
    /// Flags its parser needs in the adapter contract's `--text` mode, as its adapter passes
    /// them (`--require-result`). A certification reads the envelope, which asks for them
    /// anyway; the e2e suite's pipeline prints the text (`moot-doctor --fake-home`).
    pub text_flags: Vec<String>,
    /// The CLI's session store, below its HOME, which the parser reads (`--session-store`): in
    /// the private state, where the seat keeps its HOME.
    pub session_store: Option<&'static str>,
    /// A deadline, in seconds, for the dropped-stream scenario, when the CLI never ends such a
    /// run by itself (the deadline is then what ends it).
    pub drop_deadline: Option<u64>,
}

impl FakeHome {
    /// A FakeHome that sets `vars`.
    pub fn with_env(vars: &[(&str, String)]) -> Self {
        FakeHome {
            env: vars
                .iter()
                .map(|(name, value)| (name.to_string(), value.clone()))
                .collect(),
            ..FakeHome::default()
        }
    }
}

/// Writes `text` to `home/relative`, making its parent directories.
pub fn write_config(home: &Path, relative: &str, text: &str) -> io::Result<()> {
    let path = home.join(relative);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(&path, text)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

/// Known-good means: the pinned version or a later patch release of the same minor version
/// (`18.2.3` covers `18.2.3` to `18.2.x`, not `18.3.0`). A minor release is where CLIs have
/// reshaped their streams before, so it must be certified again before it counts as known.
pub fn known_good(pinned: &str, version: &str) -> bool {
    match (triple(pinned), triple(version)) {
        (Some(p), Some(v)) => v.0 == p.0 && v.1 == p.1 && v.2 >= p.2,
        _ => false,
    }
}

/// Whether `version` has `pinned`'s major version: how the doctor tells apart two runtimes
/// whose CLIs share an executable name (`kimi`: Kimi Code 2.x, the legacy kimi-cli 1.x).
pub fn same_major(pinned: &str, version: &str) -> bool {
    matches!((triple(pinned), triple(version)), (Some(p), Some(v)) if p.0 == v.0)
}

/// The range [`known_good`] accepts, in words (`>=18.2.3 <18.3.0`).
pub fn known_good_range(pinned: &str) -> String {
    match triple(pinned) {
        Some((major, minor, _)) => format!(">={pinned} <{major}.{}.0", minor + 1),
        None => format!("={pinned}"),
    }
}

/// `major.minor.patch` of a version string (a pre-release suffix after the patch is ignored).
fn triple(version: &str) -> Option<(u64, u64, u64)> {
    let mut parts = version.splitn(3, '.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    let patch: String = parts
        .next()?
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    Some((major, minor, patch.parse().ok()?))
}

/// The first `N.N.N` word of a CLI's `--version` output (`omp/18.2.3`, `kimi, version 1.51.0`,
/// `2.1.332 (Claude Code)`, `codex-cli 0.171.0`).
pub fn version_in(output: &str) -> Option<String> {
    output
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == '-'))
        .flat_map(|word| word.split(['/', '-']))
        .map(|word| word.trim_start_matches('v'))
        .find(|word| triple(word).is_some() && word.split('.').count() >= 3)
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_range_is_the_pinned_minor_from_the_pinned_patch() {
        assert!(known_good("18.2.3", "18.2.3"));
        assert!(known_good("18.2.3", "18.2.9"));
        assert!(!known_good("18.2.3", "18.2.2"));
        assert!(!known_good("18.2.3", "18.3.0"));
        assert!(!known_good("18.2.3", "19.2.3"));
        assert!(known_good("0.73.1", "0.73.4"));
        assert!(!known_good("0.73.1", "0.74.0"));
        assert!(!known_good("0.73.1", "garbage"));
        assert_eq!(known_good_range("0.171.0"), ">=0.171.0 <0.172.0");
        assert!(same_major("2.1.0", "2.7.1"));
        assert!(!same_major("1.51.0", "2.1.0"));
    }

    #[test]
    fn versions_are_found_in_what_the_pinned_clis_print() {
        for (printed, version) in [
            ("omp/18.2.3\n", "18.2.3"),
            ("0.73.1\n", "0.73.1"),
            ("2.1.332 (Claude Code)\n", "2.1.332"),
            (
                "WARNING: proceeding, even though ... \"/tmp\" (codex_home: x)\ncodex-cli 0.171.0\n",
                "0.171.0",
            ),
            ("kimi, version 1.51.0\n", "1.51.0"),
            ("v1.18.33\n", "1.18.33"),
        ] {
            assert_eq!(version_in(printed).as_deref(), Some(version), "{printed}");
        }
        assert_eq!(version_in("no version here 1.2\n"), None);
    }
}
