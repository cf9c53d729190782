//! Environment presets for moot-run: start from nothing and keep only the names a runtime needs,
//! so a job does not inherit every credential of the daemon that launched it.
//!
//! The mechanism lives here; each runtime's names live in its record (`env` in
//! `runtime/<rt>/meta.rs`, with the groups that only work together, such as omp's broker URL and
//! token, which are kept or dropped as one).

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::str::FromStr;

use crate::model::{Meta, PROXY_VARS};
use crate::registry;
use crate::seat_proxy;

/// Kept under every preset: what any CLI needs to find its binaries, home, locale and terminal.
pub const COMMON_ALLOWLIST: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "TMPDIR",
    "TZ",
    "LANG",
    "LC_*",
    "TERM",
    "XDG_*",
    // Where a proxy is the way out (its variables are PROXY_VARS, kept too), what it is not
    // for, and the certificate authorities it needs.
    "NO_PROXY",
    "no_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
];

/// The runtimes that have a preset (all of them), for `--env-preset`'s list of values.
pub fn runtimes() -> impl Iterator<Item = &'static str> {
    registry::all().iter().map(|meta| meta.name)
}

/// The record whose preset `runtime` names, if it is registered: its [`EnvAllowlist`], and
/// every variable its sandbox [`Needs`] read, so a curated run finds what
/// `moot-sandbox --profile` granted.
///
/// [`EnvAllowlist`]: crate::model::EnvAllowlist
/// [`Needs`]: crate::model::Needs
pub fn preset(runtime: &str) -> Option<&'static Meta> {
    registry::find(runtime).ok()
}

/// A name to keep: `VAR` exactly, or `PREFIX*` for every name that starts with PREFIX.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pattern {
    Exact(String),
    Prefix(String),
}

impl FromStr for Pattern {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (name, is_prefix) = match text.strip_suffix('*') {
            Some(prefix) => (prefix, true),
            None => (text, false),
        };
        if name.is_empty() {
            return Err(
                "a variable name, or a prefix followed by * (a bare * would keep \
                 everything: leave out --env-preset instead)"
                    .into(),
            );
        }
        if name.contains(['=', '*', '\0']) {
            return Err(
                "a variable name cannot contain =, NUL, or * anywhere but at the end".into(),
            );
        }
        Ok(if is_prefix {
            Pattern::Prefix(name.to_string())
        } else {
            Pattern::Exact(name.to_string())
        })
    }
}

impl Pattern {
    fn matches(&self, name: &OsStr) -> bool {
        match self {
            Pattern::Exact(exact) => name.as_bytes() == exact.as_bytes(),
            Pattern::Prefix(prefix) => name.as_bytes().starts_with(prefix.as_bytes()),
        }
    }

    /// Parses one of the allowlists' entries; they are all well formed by construction.
    fn of_allowlist(entry: &'static str) -> Self {
        match entry.strip_suffix('*') {
            Some(prefix) => Pattern::Prefix(prefix.to_string()),
            None => Pattern::Exact(entry.to_string()),
        }
    }
}

/// The environment a preset leaves, and what the caller should be told about it.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Curated {
    pub vars: Vec<(OsString, OsString)>,
    /// One line each, naming variables but never their values.
    pub warnings: Vec<String>,
}

/// Keeps from `env` the common allowlist, the preset's names and the `keep` patterns, in the
/// order `env` lists them; then drops every indivisible group that is only partly present.
pub fn curate(
    env: impl IntoIterator<Item = (OsString, OsString)>,
    preset: &Meta,
    keep: &[Pattern],
) -> Curated {
    let allowed: Vec<Pattern> = COMMON_ALLOWLIST
        .iter()
        .chain(preset.env.names)
        .chain(preset.env.keys)
        .chain(PROXY_VARS)
        .chain(&seat_proxy::VARS)
        .copied()
        .chain(preset.needs.variables())
        .map(Pattern::of_allowlist)
        .chain(keep.iter().cloned())
        .collect();
    let mut vars: Vec<(OsString, OsString)> = env
        .into_iter()
        .filter(|(name, _)| allowed.iter().any(|pattern| pattern.matches(name)))
        .collect();
    let mut warnings = Vec::new();
    for group in preset.env.indivisible {
        let (present, missing): (Vec<&str>, Vec<&str>) = group
            .iter()
            .partition(|member| vars.iter().any(|(name, _)| name == **member));
        if present.is_empty() || missing.is_empty() {
            continue;
        }
        vars.retain(|(name, _)| !group.iter().any(|member| name == *member));
        warnings.push(format!(
            "{} set without {}: dropped ({} are kept or dropped together)",
            present.join(", "),
            missing.join(", "),
            group.join(" and ")
        ));
    }
    Curated { vars, warnings }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs
            .iter()
            .map(|(name, value)| (OsString::from(name), OsString::from(value)))
            .collect()
    }

    fn omp() -> &'static Meta {
        preset("omp").expect("omp has a preset")
    }

    #[test]
    fn keeps_the_common_list_and_the_runtime_names_in_order() {
        let curated = curate(
            env(&[
                ("ANTHROPIC_API_KEY", "secret"),
                ("PATH", "/usr/bin"),
                ("LC_ALL", "C"),
                ("XDG_CONFIG_HOME", "/x"),
                ("OMP_PROFILE", "work"),
                ("LCX", "no"),
                ("GITHUB_TOKEN", "secret"),
                ("HOME", "/root"),
            ]),
            omp(),
            &[],
        );
        assert_eq!(
            curated,
            Curated {
                vars: env(&[
                    ("PATH", "/usr/bin"),
                    ("LC_ALL", "C"),
                    ("XDG_CONFIG_HOME", "/x"),
                    ("OMP_PROFILE", "work"),
                    ("HOME", "/root"),
                ]),
                warnings: vec![],
            }
        );
    }

    #[test]
    fn another_runtimes_names_are_not_kept() {
        let kimi = preset("kimi").expect("kimi has a preset");
        let curated = curate(
            env(&[("OMP_PROFILE", "work"), ("TERM", "xterm")]),
            kimi,
            &[],
        );
        assert_eq!(curated.vars, env(&[("TERM", "xterm")]));
    }

    #[test]
    fn keep_adds_exact_names_and_prefixes() {
        let keep = [
            "FOO".parse().expect("pattern"),
            "ANTH*".parse().expect("pattern"),
        ];
        let curated = curate(
            env(&[
                ("FOO", "1"),
                ("FOOBAR", "2"),
                ("ANTHROPIC_API_KEY", "k"),
                ("ANTH", "3"),
            ]),
            omp(),
            &keep,
        );
        assert_eq!(
            curated.vars,
            env(&[("FOO", "1"), ("ANTHROPIC_API_KEY", "k"), ("ANTH", "3")])
        );
    }

    #[test]
    fn the_broker_pair_is_kept_together() {
        let both = env(&[
            ("OMP_AUTH_BROKER_URL", "http://127.0.0.1:1"),
            ("OMP_AUTH_BROKER_TOKEN", "t"),
        ]);
        assert_eq!(
            curate(both.clone(), omp(), &[]),
            Curated {
                vars: both,
                warnings: vec![]
            }
        );
    }

    #[test]
    fn half_a_broker_pair_is_dropped_with_a_warning_that_shows_no_value() {
        let curated = curate(
            env(&[
                ("OMP_AUTH_BROKER_URL", "http://secret-host"),
                ("HOME", "/h"),
            ]),
            omp(),
            &[],
        );
        assert_eq!(
            curated,
            Curated {
                vars: env(&[("HOME", "/h")]),
                warnings: vec![
                    "OMP_AUTH_BROKER_URL set without OMP_AUTH_BROKER_TOKEN: dropped \
                     (OMP_AUTH_BROKER_URL and OMP_AUTH_BROKER_TOKEN are kept or dropped together)"
                        .to_string()
                ],
            }
        );
        let token_only = curate(env(&[("OMP_AUTH_BROKER_TOKEN", "t")]), omp(), &[]);
        assert_eq!(token_only.vars, vec![]);
        assert_eq!(token_only.warnings.len(), 1);
    }

    #[test]
    fn patterns_are_validated() {
        assert_eq!("A_B".parse(), Ok(Pattern::Exact("A_B".into())));
        assert_eq!("GH_*".parse(), Ok(Pattern::Prefix("GH_".into())));
        for bad in ["", "*", "A=B", "A*B*", "*A"] {
            assert!(bad.parse::<Pattern>().is_err(), "{bad:?} was accepted");
        }
    }

    /// Every preset keeps its CLI's documented key variables, the variables that name a proxy
    /// (the profile grants their ports) and what the proxy is not for: a runner behind an egress
    /// proxy reaches its provider.
    #[test]
    fn every_preset_keeps_its_keys_and_the_proxy_variables() {
        let network = [
            "NO_PROXY",
            "no_proxy",
            "SSL_CERT_FILE",
            "NODE_EXTRA_CA_CERTS",
        ];
        for meta in crate::registry::all() {
            let names = meta.env.keys.iter().chain(PROXY_VARS).chain(&network);
            for var in names {
                let kept = curate([(OsString::from(var), OsString::from("x"))], meta, &[]);
                assert_eq!(kept.vars.len(), 1, "{}: {var} is dropped", meta.name);
            }
        }
        let codex = preset("codex").unwrap();
        assert!(codex.env.keys.contains(&"OPENAI_API_KEY"));
    }

    /// Every runtime's preset keeps the variables its sandbox profile reads.
    #[test]
    fn every_preset_keeps_what_the_profile_reads() {
        assert!(runtimes().eq(crate::registry::all().iter().map(|m| m.name)));
        for meta in crate::registry::all() {
            let preset = preset(meta.name).unwrap();
            for var in meta.needs.variables() {
                let kept = curate([(OsString::from(var), OsString::from("x"))], preset, &[]);
                assert_eq!(kept.vars.len(), 1, "{}: {var} is dropped", meta.name);
            }
        }
    }
}
