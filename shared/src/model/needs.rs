//! What a runtime's real CLI needs in a sandbox besides its install tree, as its record
//! declares it. src/profile.rs turns these declarations into grants on a given machine.

/// How a place is granted, narrowest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Access {
    /// List directories, read no file (an npm install root that holds the home).
    List,
    Read,
    ReadExec,
    ReadWrite,
}

impl Access {
    /// The moot-sandbox flag that grants it.
    pub fn flag(self, optional: bool) -> &'static str {
        match (self, optional) {
            (Access::List, false) => "--ls",
            (Access::List, true) => "--ls-try",
            (Access::Read, false) => "--ro",
            (Access::ReadExec, false) => "--rx",
            (Access::ReadWrite, false) => "--rw",
            (Access::Read, true) => "--ro-try",
            (Access::ReadExec, true) => "--rx-try",
            (Access::ReadWrite, true) => "--rw-try",
        }
    }
}

/// A place a runtime's CLI uses, as its record declares it: under `$VAR` when the variable is
/// set (and not empty), else under `$HOME`.
#[derive(Debug, Clone, Copy)]
pub struct Place {
    /// The variable that moves it, if the CLI honours one.
    pub var: Option<&'static str>,
    /// The path below `$VAR` (empty: the variable names the place itself).
    pub below_var: &'static str,
    /// The path below `$HOME` when the variable is unset; `None`: nothing without it.
    pub below_home: Option<&'static str>,
    pub access: Access,
    /// A directory the CLI creates on first use: created (0700) when absent and writable, so
    /// that the CLI finds it inside the sandbox. A file is only granted when present.
    pub dir: bool,
    pub why: &'static str,
}

impl Place {
    /// A place under `$HOME` only.
    pub const fn home(below_home: &'static str, access: Access, why: &'static str) -> Self {
        Place {
            var: None,
            below_var: "",
            below_home: Some(below_home),
            access,
            dir: true,
            why,
        }
    }

    /// A file a variable moves, under `$HOME` without it.
    pub const fn moved_file(
        var: &'static str,
        below_var: &'static str,
        below_home: &'static str,
        why: &'static str,
    ) -> Self {
        Place {
            dir: false,
            ..Place::moved_by(var, below_var, below_home, Access::Read, why)
        }
    }

    /// A file under `$HOME` only.
    pub const fn home_file(below_home: &'static str, access: Access, why: &'static str) -> Self {
        Place {
            dir: false,
            ..Place::home(below_home, access, why)
        }
    }

    /// A place a variable moves, under `$HOME` without it.
    pub const fn moved_by(
        var: &'static str,
        below_var: &'static str,
        below_home: &'static str,
        access: Access,
        why: &'static str,
    ) -> Self {
        Place {
            var: Some(var),
            below_var,
            below_home: Some(below_home),
            access,
            dir: true,
            why,
        }
    }
}

/// What a runtime's CLI needs besides its install tree (declared in `runtime/<rt>/meta.rs`).
#[derive(Debug, Clone, Copy)]
pub struct Needs {
    /// State, config and temporary places, granted when present (state the CLI creates on
    /// first run: its parent must then be granted, so a missing one is reported).
    pub places: &'static [Place],
    /// Variables that hold a provider base URL. A runtime with neither these nor `url_files`
    /// talks to no provider (shell, mock): its profile leaves TCP unrestricted.
    pub url_vars: &'static [&'static str],
    /// Provider configuration files whose URLs name the endpoints.
    pub url_files: &'static [Place],
    /// What else of the operator's configuration the CLI needs to run (credentials, settings),
    /// copied with `url_files` into the seat's private state before each job (src/profile.rs):
    /// a file, or a directory whose files are copied (not what is below them).
    pub carried: &'static [Place],
    /// The operator's logins (OAuth tokens, credential stores): secrets that are not the key a
    /// credential proxy holds. Carried like `carried`, except in a seat behind a credential
    /// proxy (src/seat_proxy.rs), which gets none of them unless the caller says
    /// `--seat-holds-login`.
    pub logins: &'static [Place],
    /// Variables set for the CLI when it runs under the profile, with why.
    pub env: &'static [(&'static str, &'static str, &'static str)],
    /// Files the CLI reads that moot writes, as `(VAR, text, why)`: moot-sandbox hands each to
    /// the CLI as a sealed in-memory file, `/proc/self/fd/N` appended to `$VAR` (`:`-separated),
    /// so no process of the seat can change it and nothing of it is left on disk.
    pub files: &'static [(&'static str, &'static str, &'static str)],
    /// A private temporary directory, made when absent and given to the CLI as `$TMPDIR`:
    /// SQLite, node and the shell tools put temporary files there, and the shared /tmp is not
    /// granted (codex's resume failed in its SQLite without one).
    pub temp: Option<Place>,
}

/// The variables that name the proxy a CLI reaches its provider through: every runtime with a
/// provider reads them (its HTTP client does), so a profile grants their ports and a preset keeps
/// them.
pub const PROXY_VARS: &[&str] = &[
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "ALL_PROXY",
    "all_proxy",
];

impl Needs {
    /// Every variable the needs read: the ones that move places, and the provider URLs.
    pub fn variables(&self) -> impl Iterator<Item = &'static str> + '_ {
        let places = self
            .places
            .iter()
            .chain(self.url_files)
            .chain(self.carried)
            .chain(self.logins)
            .filter_map(|p| p.var);
        places.chain(self.url_vars.iter().copied())
    }

    /// The places the CLI writes: its state, config, caches and temporary files. Under a
    /// profile they live in the seat's private state, never the operator's.
    pub fn written(&self) -> impl Iterator<Item = &Place> + '_ {
        self.places
            .iter()
            .filter(|p| p.access == Access::ReadWrite)
            .chain(&self.temp)
    }

    /// A runtime that needs nothing but its install tree (shell, mock).
    pub const NONE: Needs = Needs {
        places: &[],
        url_vars: &[],
        url_files: &[],
        carried: &[],
        logins: &[],
        env: &[],
        files: &[],
        temp: None,
    };
}
