//! Sandbox profiles: the grants a runtime's real CLI needs, derived from the installed CLI and
//! the runtime's record, so that nobody writes grants by trial and error.
//!
//! Three sources, each grant carrying the reason it was made:
//! - the install tree, found by resolving the program: symlinks, `#!` interpreters (an
//!   `/usr/bin/env X` line resolved on PATH, as the kernel and env(1) would), the outermost
//!   `node_modules` of an npm install (with the install root above it, read-only), and a Python venv
//!   with its base interpreter's prefix. Read and execute.
//! - the places the runtime's record declares ([`Needs`]): state and config directories,
//!   moved by the variables the CLI honours, and temporary directories;
//! - the provider's TCP port, from the CLI's base-URL variables and the URLs in its provider
//!   configuration (443 when none is set), as the only port it may connect to.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::fmt;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context};

use crate::model::{Access, Needs, Place, PROXY_VARS};
use crate::private_state::{read_operator_file, Carried, PrivateState};
use crate::program::resolve_program;
use crate::seat_proxy::{self, SeatProxy};
use crate::shim;

/// A declared place on this machine: where it is, and making it when the CLI would.
trait PlaceOnHost {
    fn locate(&self, env: &Env) -> Option<(PathBuf, String)>;
    fn ensure(&self, path: &Path) -> bool;
}

impl PlaceOnHost for Place {
    /// Where it is in `env`, and what decided it; `None` when it has no location there.
    fn locate(&self, env: &Env) -> Option<(PathBuf, String)> {
        if let Some(var) = self.var {
            if let Some(value) = env.get(var).filter(|v| !v.is_empty()) {
                let mut path = PathBuf::from(value);
                if !self.below_var.is_empty() {
                    path.push(self.below_var);
                }
                return Some((path, format!("${var}")));
            }
        }
        let home = env.get("HOME").filter(|h| !h.is_empty())?;
        Some((
            PathBuf::from(home).join(self.below_home?),
            "$HOME".to_string(),
        ))
    }

    /// Makes a directory place that is absent (and whose parent exists), private, so the CLI
    /// can use it inside the sandbox; true when it now exists.
    fn ensure(&self, path: &Path) -> bool {
        if path.exists() {
            return true;
        }
        if !self.dir || self.access != Access::ReadWrite {
            return false;
        }
        use std::os::unix::fs::DirBuilderExt;
        fs::DirBuilder::new().mode(0o700).create(path).is_ok()
    }
}

/// The environment a profile is derived in (the CLI's: moot-sandbox passes its own on).
pub struct Env {
    vars: Vec<(OsString, OsString)>,
}

impl Env {
    pub fn current() -> Self {
        Env {
            vars: std::env::vars_os().collect(),
        }
    }

    pub fn from_pairs(pairs: &[(&str, &str)]) -> Self {
        Env {
            vars: pairs
                .iter()
                .map(|(k, v)| (OsString::from(k), OsString::from(v)))
                .collect(),
        }
    }

    fn get(&self, name: &str) -> Option<&std::ffi::OsStr> {
        self.vars
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_os_str())
    }

    /// This environment as the CLI has it in a private state: `HOME` is `home`, and `unset`
    /// are not set, so every place they would move is below that home.
    fn private(&self, home: &Path, unset: &[&str]) -> Env {
        let mut vars: Vec<(OsString, OsString)> = self
            .vars
            .iter()
            .filter(|(k, _)| k != "HOME" && !unset.iter().any(|u| k == u))
            .cloned()
            .collect();
        vars.push(("HOME".into(), home.into()));
        Env { vars }
    }
}

/// One grant of a profile, with its reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub path: PathBuf,
    pub access: Access,
    pub why: String,
}

/// A derived profile: path grants and the TCP ports the CLI may connect to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Profile {
    pub grants: Vec<Grant>,
    pub connect: Vec<(u16, String)>,
    /// Variables set for the command, with why.
    pub env: Vec<(String, String, String)>,
    /// Files handed to the command in memory, `(VAR, text, why)` (see [`Needs::files`]).
    pub files: Vec<(&'static str, &'static str, &'static str)>,
    /// The seat's private state (`--state`): made and filled before the command runs.
    pub state: Option<PrivateState>,
    /// The job's credential proxy, the seat's only way to its provider.
    pub proxy: Option<SeatProxy>,
}

impl fmt::Display for Profile {
    /// One moot-sandbox flag a line, with its reason: what `--print-profile` shows, and what a
    /// user can paste, narrow or add to.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for grant in &self.grants {
            writeln!(
                f,
                "{} {}\t# {}",
                grant.access.flag(false),
                shell_word(&grant.path),
                grant.why
            )?;
        }
        for (port, why) in &self.connect {
            writeln!(f, "--connect {port}\t# {why}")?;
        }
        for (name, value, why) in &self.env {
            writeln!(f, "# sets {name}={value}\t# {why}")?;
        }
        for (name, _, why) in &self.files {
            writeln!(f, "# hands ${name} a sealed in-memory file\t# {why}")?;
        }
        if let Some(proxy) = &self.proxy {
            writeln!(
                f,
                "# credential proxy {}\t# the provider's key is the job token in every copy and \
                 variable, the provider's URL the proxy's; no proxy variable reaches the CLI",
                proxy.url
            )?;
        }
        if let Some(state) = &self.state {
            for name in &state.unset {
                writeln!(f, "# unsets {name}\t# its place is in the private state")?;
            }
            for carried in state.carried.iter().filter(|c| c.kept_out) {
                writeln!(
                    f,
                    "# keeps out {}\t# {}: a login the credential proxy does not hold \
                     (--seat-holds-login carries it)",
                    carried.from.display(),
                    carried.why
                )?;
            }
            for carried in state.carried.iter().filter(|c| !c.kept_out) {
                writeln!(
                    f,
                    "# copies {} to {}\t# {}, as the operator has it before the job",
                    carried.from.display(),
                    carried.to.display(),
                    carried.why
                )?;
            }
        }
        Ok(())
    }
}

fn shell_word(path: &Path) -> String {
    crate::shell_quote::sh_quote(&path.to_string_lossy())
}

/// Derives the profile of a CLI whose program resolves to `program`, for a runtime that
/// declares `needs`, in `env`, its state kept in `state` (a CLI that writes state needs one: the
/// operator's own config and state directories are never granted). Fails, naming what is
/// missing, when the program's interpreter cannot be found.
pub fn derive(
    runtime: &str,
    needs: &Needs,
    program: &Path,
    env: &Env,
    state: Option<&Path>,
    proxy: Option<&SeatProxy>,
) -> anyhow::Result<Profile> {
    let mut profile = Profile::default();
    let path_var = env.get("PATH").map(OsString::from);
    // The home as given and as it resolves: install paths are compared resolved, and a home
    // reached through a link is still the home.
    let home = env.get("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
    let homes: Vec<PathBuf> = home
        .iter()
        .flat_map(|home| [Some(home.clone()), fs::canonicalize(home).ok()])
        .flatten()
        .collect();
    let host = Host {
        path_var: path_var.as_deref(),
        homes: &homes,
    };
    install_tree(runtime, program, &Link::Program, &host, &mut profile, 0)?;
    // Where the CLI's places are: in the private state, or (for a CLI that writes none, or a
    // place no variable of the state moves) where the operator has them.
    let private = match state {
        Some(dir) => {
            refuse_shared_state(runtime, env, &homes, dir)?;
            Some(plan_state(runtime, needs, env, dir, proxy))
        }
        None if needs.written().next().is_some() => anyhow::bail!(
            "{runtime} writes state (sessions, caches, its config): give --state DIR, a \
             directory of this job or session for its private HOME (made when absent)"
        ),
        None => None,
    };
    let seat_env = private
        .as_ref()
        .map(|(seat_env, _)| seat_env)
        .unwrap_or(env);
    let in_state = |path: &Path| {
        private
            .as_ref()
            .is_some_and(|(_, state)| path.starts_with(&state.dir))
    };
    for place in needs.places {
        if let Some((path, source)) = place.locate(seat_env) {
            if !in_state(&path) && place.ensure(&path) {
                profile.grant(
                    path,
                    place.access,
                    format!("{runtime} {} ({source})", place.why),
                );
            }
        }
    }
    profile.env = needs
        .env
        .iter()
        .map(|(name, value, why)| (name.to_string(), value.to_string(), why.to_string()))
        .collect();
    profile.connect = match proxy {
        Some(proxy) => {
            profile
                .env
                .extend(proxy_url_vars(runtime, needs, env, proxy));
            profile.proxy = Some(proxy.clone());
            vec![(
                proxy.port,
                format!(
                    "the job's credential proxy (${}), {runtime}'s only way out",
                    seat_proxy::URL
                ),
            )]
        }
        None => ports(runtime, needs, env),
    };
    profile.files = needs.files.to_vec();
    if let Some(place) = &needs.temp {
        if let Some((path, source)) = place.locate(seat_env) {
            if in_state(&path) || place.ensure(&path) {
                let shown = path.display().to_string();
                if !in_state(&path) {
                    profile.grant(
                        path,
                        Access::ReadWrite,
                        format!("{runtime} {} ({source})", place.why),
                    );
                }
                profile.env.push((
                    "TMPDIR".into(),
                    shown,
                    format!(
                        "{runtime}'s private temporary directory (the shared /tmp is not granted)"
                    ),
                ));
            }
        }
    }
    if let Some((_, state)) = private {
        profile.grant(
            state.dir.clone(),
            Access::ReadWrite,
            format!(
                "{runtime}'s private state (--state): its HOME and every place it writes, the \
                 operator's configuration copied in before the job"
            ),
        );
        profile.env.push((
            "HOME".into(),
            state.home.display().to_string(),
            format!("{runtime}'s private HOME: nothing the operator's own {runtime} reads"),
        ));
        profile.state = Some(state);
    }
    profile.dedup();
    Ok(profile)
}

/// A state that is, holds or lies in the operator's home (as `$HOME` names it and as the user
/// database does), or overlaps a place of any runtime's CLI, would hand the seat what the
/// operator's shell, git or CLIs later read: refused.
fn refuse_shared_state(
    runtime: &str,
    env: &Env,
    homes: &[PathBuf],
    dir: &Path,
) -> anyhow::Result<()> {
    let resolved = crate::worktree::resolve(dir);
    let both = |path: &Path| [Some(path.to_path_buf()), fs::canonicalize(path).ok()];
    let overlaps = |other: &Path| {
        [dir, resolved.as_path()]
            .iter()
            .any(|d| d.starts_with(other) || other.starts_with(d))
    };
    let database_home = nix::unistd::User::from_uid(nix::unistd::geteuid())
        .ok()
        .flatten()
        .map(|user| user.dir);
    let all_homes = homes
        .iter()
        .cloned()
        .chain(database_home.iter().flat_map(|h| both(h)).flatten());
    for home in all_homes {
        if overlaps(&home) {
            anyhow::bail!(
                "--state ({}) is, holds or lies in the home {}: give a directory of the job's \
                 own outside it",
                dir.display(),
                home.display()
            );
        }
    }
    for meta in crate::registry::all() {
        let needs = &meta.needs;
        let operators = needs
            .url_files
            .iter()
            .chain(needs.carried)
            .chain(needs.logins);
        for place in needs.written().chain(operators) {
            let Some((path, source)) = place.locate(env) else {
                continue;
            };
            if both(&path).iter().flatten().any(|p| overlaps(p)) {
                anyhow::bail!(
                    "--state ({}) overlaps {}'s {} {} ({source}), which the operator's CLI \
                     reads: give a directory of the job's own (for {runtime})",
                    dir.display(),
                    meta.name,
                    place.why,
                    path.display()
                );
            }
        }
    }
    Ok(())
}

/// The private state in `dir`: the environment the CLI sees there, the directories it writes,
/// and the operator's files (provider config, credentials, settings) copied in.
///
/// Behind a credential proxy, the copies get the job token in place of the proxied key and the
/// proxy's URL in place of the provider's, and the operator's logins are kept out (removed from
/// the state) unless the caller carries them (`--seat-holds-login`).
fn plan_state(
    runtime: &str,
    needs: &Needs,
    env: &Env,
    dir: &Path,
    proxy: Option<&SeatProxy>,
) -> (Env, PrivateState) {
    let mut unset: Vec<&'static str> = needs.written().filter_map(|p| p.var).collect();
    unset.sort_unstable();
    unset.dedup();
    let home = dir.join("home");
    let seat_env = env.private(&home, &unset);
    let dirs = needs
        .written()
        .filter(|place| place.dir)
        .filter_map(|place| place.locate(&seat_env))
        .map(|(path, _)| path)
        .filter(|path| path.starts_with(dir))
        .collect();
    let logins_kept_out = proxy.is_some_and(|proxy| !proxy.carry_logins);
    let carried = needs
        .url_files
        .iter()
        .chain(needs.carried)
        .map(|place| (place, false))
        .chain(needs.logins.iter().map(|place| (place, logins_kept_out)))
        .filter_map(|(place, kept_out)| {
            let (from, _) = place.locate(env)?;
            let (to, _) = place.locate(&seat_env)?;
            to.starts_with(dir).then(|| Carried {
                from,
                to,
                dir: place.dir,
                kept_out,
                why: format!("{runtime}'s {}", place.why),
            })
        })
        .collect();
    let state = PrivateState {
        dir: dir.to_path_buf(),
        home,
        dirs,
        carried,
        unset,
        proxy: proxy.cloned(),
    };
    (seat_env, state)
}

impl Profile {
    fn grant(&mut self, path: PathBuf, access: Access, why: String) {
        self.grants.push(Grant { path, access, why });
    }

    /// One grant per path, the widest access kept; a path already below a grant of the same
    /// or wider access is dropped.
    fn dedup(&mut self) {
        self.grants
            .sort_by(|a, b| a.path.cmp(&b.path).then(b.access.cmp(&a.access)));
        let mut kept: Vec<Grant> = Vec::new();
        for grant in self.grants.drain(..) {
            let covered = kept
                .iter()
                .any(|k| grant.path.starts_with(&k.path) && k.access >= grant.access);
            if !covered {
                kept.push(grant);
            }
        }
        self.grants = kept;
    }
}

/// What an install tree is resolved against: the CLI's PATH, and its HOME, which no install
/// grant may cover (a CLI installed in or run from the home would otherwise hand the seat
/// `~/.ssh`, `~/.aws` and every other CLI's credentials).
struct Host<'a> {
    path_var: Option<&'a std::ffi::OsStr>,
    /// The home, as given and resolved.
    homes: &'a [PathBuf],
}

impl Host<'_> {
    /// Whether granting `dir` would grant the home: it is the home or one of its ancestors,
    /// links resolved.
    fn covers_home(&self, dir: &Path) -> bool {
        let resolved = fs::canonicalize(dir).ok();
        self.homes.iter().any(|home| {
            home.starts_with(dir) || resolved.as_ref().is_some_and(|dir| home.starts_with(dir))
        })
    }
}

/// How deep a program's links may chain: `#!` interpreters (the kernel allows 4 levels) and
/// the programs shell shims exec.
const MAX_LINKS: usize = 6;

/// One file the kernel executes to start a program, and why: the program, the `#!` interpreter
/// of a script, or what a shell shim execs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Link {
    Program,
    Interpreter(PathBuf),
    ShimTarget(PathBuf),
}

impl fmt::Display for Link {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Link::Program => write!(f, "the program itself"),
            Link::Interpreter(script) => write!(f, "the #! interpreter of {}", script.display()),
            Link::ShimTarget(shim) => write!(f, "what the shim {} executes", shim.display()),
        }
    }
}

/// Grants what running `program` reads and executes: its directory, its real location, the
/// npm package tree or Python venv it lives in, and the same for its `#!` interpreter and for
/// what it execs when it is a shell shim. A version manager's shim is refused (src/shim.rs).
fn install_tree(
    runtime: &str,
    program: &Path,
    link: &Link,
    host: &Host,
    profile: &mut Profile,
    depth: usize,
) -> anyhow::Result<()> {
    let what = match link {
        Link::Program => format!("{runtime}'s program"),
        Link::Interpreter(_) => format!("{runtime}'s #! interpreter"),
        Link::ShimTarget(shim) => format!("{runtime}'s shim {}: what it executes", shim.display()),
    };
    let real = fs::canonicalize(program)
        .with_context(|| format!("{what} ({}): cannot resolve it", program.display()))?;
    refuse_dispatcher(&what, program, &real, link)?;
    for executable in [program, real.as_path()] {
        if let Some(dir) = executable.parent() {
            // A program in the home (or in /) is granted alone, never its directory.
            let (path, why) = if host.covers_home(dir) {
                (
                    executable,
                    format!("{what} (alone: its directory holds $HOME)"),
                )
            } else {
                (dir, format!("{what} {}", executable.display()))
            };
            profile.grant(path.to_path_buf(), Access::ReadExec, why);
        }
    }
    if let Some(tree) = npm_tree(&real) {
        profile.grant(
            tree.clone(),
            Access::ReadExec,
            format!("{what} is in this npm package tree"),
        );
        if let Some(root) = tree.parent() {
            npm_root(root, host, profile);
        }
    }
    if let Some((venv, base)) = python_venv(&real) {
        profile.grant(
            venv,
            Access::ReadExec,
            format!("{what} is in this Python venv"),
        );
        if let Some(base) = base {
            profile.grant(
                base,
                Access::ReadExec,
                "the venv's base Python prefix".into(),
            );
        }
    }
    let Some(resolved) = interpreter(&real, host.path_var)
        .with_context(|| format!("{what} ({})", real.display()))?
    else {
        return Ok(());
    };
    if depth >= MAX_LINKS {
        anyhow::bail!(
            "{what} ({}): too many levels of #! interpreters and shims",
            real.display()
        );
    }
    let interpreted = Link::Interpreter(real.clone());
    install_tree(runtime, &resolved, &interpreted, host, profile, depth + 1)?;
    for target in shim::exec_targets(&real, &resolved, host.path_var) {
        let shimmed = Link::ShimTarget(program.to_path_buf());
        install_tree(runtime, &target, &shimmed, host, profile, depth + 1)?;
    }
    Ok(())
}

/// A version manager's shim picks the real program as it runs, from version files in the
/// working directory (in a job, the repository under review's, which would choose the code the
/// seat runs): refused, with the command that prints the real program to put first on PATH.
fn refuse_dispatcher(what: &str, program: &Path, real: &Path, link: &Link) -> anyhow::Result<()> {
    let Some((manager, which)) = shim::dispatcher(real) else {
        return Ok(());
    };
    // The name the shim was run as: what the manager is asked for.
    let shim = match link {
        Link::ShimTarget(shim) => shim.as_path(),
        _ => program,
    };
    let name = shim.file_name().unwrap_or_default().to_string_lossy();
    anyhow::bail!(
        "{what} ({}) is a {manager} shim: {manager} picks the real program as it runs, from \
         the working directory's version files, and no profile can follow it; put the real \
         program first on PATH: PATH=\"$(dirname \"$({which} {name})\")\":$PATH",
        shim.display()
    )
}

/// The files the resolvers read in an npm install's root. (bun's and node's list the root to
/// find node_modules and read its package.json and bunfig.toml; a directory can only be
/// granted with what is below it.)
const NPM_ROOT_FILES: &[&str] = &["package.json", "bunfig.toml"];

/// Grants an npm install's root readable; one that is or holds the home (`cd ~ && npm install
/// <cli>`) only listable, with its own files readable: the resolvers find node_modules, and no
/// file of the home is read.
fn npm_root(root: &Path, host: &Host, profile: &mut Profile) {
    if !host.covers_home(root) {
        profile.grant(
            root.to_path_buf(),
            Access::Read,
            "the npm install's root: its resolver lists it and reads package.json".into(),
        );
        return;
    }
    profile.grant(
        root.to_path_buf(),
        Access::List,
        "the npm install's root holds $HOME: listed (its resolver looks for node_modules), no \
         file read"
            .into(),
    );
    for name in NPM_ROOT_FILES {
        let file = root.join(name);
        if file.is_file() {
            profile.grant(
                file,
                Access::Read,
                "the npm install's root holds $HOME: its own files alone".into(),
            );
        }
    }
}

/// The interpreter the kernel runs for `real` (a `#!` script), resolved as env(1) would;
/// `None` for a binary.
fn interpreter(real: &Path, path_var: Option<&std::ffi::OsStr>) -> anyhow::Result<Option<PathBuf>> {
    Ok(match shebang(real)? {
        None => None,
        Some(Interpreter::Path(path)) => Some(path),
        Some(Interpreter::Env(name)) => {
            Some(resolve_program(name.as_ref(), path_var).map_err(|e| {
                anyhow!(
                    "runs `#!/usr/bin/env {}`, which is not on PATH: {e}",
                    name.to_string_lossy()
                )
            })?)
        }
    })
}

/// The files the kernel executes to start `program`, real paths, and why each: the program,
/// each `#!` interpreter in turn and what a shell shim execs (as far as they resolve), so a
/// denied exec can name the file denied.
pub fn exec_chain(program: &Path, path_var: Option<&std::ffi::OsStr>) -> Vec<(PathBuf, Link)> {
    let mut chain = Vec::new();
    walk_exec_chain(program, Link::Program, path_var, &mut chain, 0);
    chain
}

fn walk_exec_chain(
    file: &Path,
    link: Link,
    path_var: Option<&std::ffi::OsStr>,
    chain: &mut Vec<(PathBuf, Link)>,
    depth: usize,
) {
    let Ok(real) = fs::canonicalize(file) else {
        chain.push((file.to_path_buf(), link));
        return;
    };
    chain.push((real.clone(), link));
    let Some(interpreter) = interpreter(&real, path_var).ok().flatten() else {
        return;
    };
    if depth >= MAX_LINKS {
        return;
    }
    walk_exec_chain(
        &interpreter,
        Link::Interpreter(real.clone()),
        path_var,
        chain,
        depth + 1,
    );
    for target in shim::exec_targets(&real, &interpreter, path_var) {
        let shimmed = Link::ShimTarget(file.to_path_buf());
        walk_exec_chain(&target, shimmed, path_var, chain, depth + 1);
    }
}

/// How the CLI at `program` was installed, as its install files name it (`FROM=`): `npm` when
/// its real file is in an npm tree, `pypi` when it is in a Python venv (pip, pipx, uv), `None`
/// when neither (a native binary, a system package).
pub fn install_kind(program: &Path) -> Option<&'static str> {
    let real = fs::canonicalize(program).ok()?;
    if npm_tree(&real).is_some() {
        Some("npm")
    } else if python_venv(program).is_some() || python_venv(&real).is_some() {
        Some("pypi")
    } else {
        None
    }
}

/// The outermost `node_modules` directory above `path`: an npm install resolves its packages
/// anywhere in that tree.
fn npm_tree(path: &Path) -> Option<PathBuf> {
    path.ancestors()
        .filter(|dir| dir.file_name().is_some_and(|n| n == "node_modules"))
        .last()
        .map(Path::to_path_buf)
}

/// The venv `path` is in (the directory holding `pyvenv.cfg` above `bin/`), and the prefix of
/// the interpreter it was made from (`home = <prefix>/bin` in pyvenv.cfg).
fn python_venv(path: &Path) -> Option<(PathBuf, Option<PathBuf>)> {
    let venv = path
        .ancestors()
        .find(|dir| dir.join("pyvenv.cfg").is_file())?;
    let config = fs::read_to_string(venv.join("pyvenv.cfg")).ok()?;
    let base = config.lines().find_map(|line| {
        let (key, value) = line.split_once('=')?;
        (key.trim() == "home").then(|| PathBuf::from(value.trim()))
    });
    let base = base
        .and_then(|bin| fs::canonicalize(bin).ok())
        .and_then(|bin| bin.parent().map(Path::to_path_buf));
    Some((venv.to_path_buf(), base))
}

enum Interpreter {
    Path(PathBuf),
    Env(OsString),
}

/// The interpreter of a `#!` script, or `None` for a binary.
fn shebang(path: &Path) -> anyhow::Result<Option<Interpreter>> {
    let mut head = [0u8; 256];
    let n = fs::File::open(path)
        .and_then(|mut file| file.read(&mut head))
        .with_context(|| format!("cannot read {}", path.display()))?;
    let Some(line) = head[..n].strip_prefix(b"#!") else {
        return Ok(None);
    };
    let line = line.split(|&b| b == b'\n').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    let mut words = line.split_whitespace();
    let Some(first) = words.next() else {
        return Ok(None);
    };
    if Path::new(first).file_name().is_some_and(|n| n == "env") {
        // `env -S X args` and `env X`: the first word that is not an option is the program.
        if let Some(name) = words.find(|w| !w.starts_with('-')) {
            return Ok(Some(Interpreter::Env(name.into())));
        }
    }
    Ok(Some(Interpreter::Path(PathBuf::from(first))))
}

/// The base-URL variables set to the proxy: a CLI whose configuration files do not name the
/// provider reaches its built-in endpoint (claude's api.anthropic.com, codex's OpenAI) unless
/// told, and the proxy forwards to that provider. A variable already set is rewritten with the
/// rest of the environment instead (src/sandbox/).
fn proxy_url_vars(
    runtime: &str,
    needs: &Needs,
    env: &Env,
    proxy: &SeatProxy,
) -> Vec<(String, String, String)> {
    let configured = needs.url_files.iter().any(|place| {
        place
            .locate(env)
            .and_then(|(path, _)| read_operator_file(&path).ok())
            .is_some_and(|text| proxy.names_upstream(&text))
    });
    if configured {
        return Vec::new();
    }
    needs
        .url_vars
        .iter()
        .filter(|var| env.get(var).is_none_or(|v| v.is_empty()))
        .map(|var| {
            (
                var.to_string(),
                proxy.url.clone(),
                format!("{runtime} reaches its provider through the job's credential proxy"),
            )
        })
        .collect()
}

/// The TCP ports of every provider URL the CLI is configured with; 443 when there is none.
fn ports(runtime: &str, needs: &Needs, env: &Env) -> Vec<(u16, String)> {
    let mut found: BTreeSet<(u16, String)> = BTreeSet::new();
    for var in needs.url_vars {
        if let Some(value) = env.get(var) {
            for port in url_ports(&value.to_string_lossy()) {
                found.insert((port, format!("{runtime}'s provider endpoint (${var})")));
            }
        }
    }
    for place in needs.url_files {
        let Some((path, _)) = place.locate(env) else {
            continue;
        };
        let Ok(bytes) = read_operator_file(&path) else {
            continue;
        };
        let text = String::from_utf8_lossy(&bytes);
        for port in url_ports(&text) {
            found.insert((
                port,
                format!("{runtime}'s provider endpoint ({})", path.display()),
            ));
        }
    }
    let has_provider = !needs.url_vars.is_empty() || !needs.url_files.is_empty();
    if found.is_empty() && has_provider {
        found.insert((
            443,
            format!("{runtime}'s provider endpoint (HTTPS, none configured)"),
        ));
    }
    if has_provider {
        for var in PROXY_VARS {
            for port in env
                .get(var)
                .map(|v| url_ports(&v.to_string_lossy()))
                .unwrap_or_default()
            {
                found.insert((
                    port,
                    format!("the proxy {runtime} reaches its provider through (${var})"),
                ));
            }
        }
    }
    // One reason per port: the first.
    let mut ports: Vec<(u16, String)> = Vec::new();
    for (port, why) in found {
        if !ports.iter().any(|(p, _)| *p == port) {
            ports.push((port, why));
        }
    }
    ports
}

/// The port of every `http://` or `https://` URL in `text` (80 and 443 by default).
fn url_ports(text: &str) -> Vec<u16> {
    let mut ports = Vec::new();
    for (scheme, default) in [("https://", 443), ("http://", 80)] {
        for (at, _) in text.match_indices(scheme) {
            let rest = &text[at + scheme.len()..];
            let authority: &str = rest
                .split(|c: char| c == '/' || c == '"' || c == '\'' || c.is_whitespace())
                .next()
                .unwrap_or_default();
            let host_port = authority.rsplit('@').next().unwrap_or_default();
            let port = match host_port.rsplit_once(':') {
                Some((host, port)) if !host.ends_with(']') || host_port.starts_with('[') => {
                    port.parse().ok()
                }
                _ => Some(default),
            };
            ports.extend(port.or(Some(default)));
        }
    }
    ports
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, PermissionsExt};

    fn executable(path: &Path, text: &str) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
        fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn urls_give_their_ports() {
        assert_eq!(url_ports("baseUrl: http://127.0.0.1:18080/v1"), [18080]);
        assert_eq!(
            url_ports("base_url = \"https://api.example.com/v1\""),
            [443]
        );
        assert_eq!(url_ports("http://[::1]:9000/x and http://h"), [9000, 80]);
        assert!(url_ports("no url").is_empty());
    }

    /// An npm install whose program is `#!/usr/bin/env bun`, with bun in another package of the
    /// same tree: both trees, the package.json and bun resolved on PATH.
    #[test]
    fn an_npm_program_and_its_env_interpreter_resolve_to_their_trees() {
        let root = tempfile::tempdir().unwrap();
        let install = fs::canonicalize(root.path()).unwrap().join("omp");
        let modules = install.join("node_modules");
        executable(&modules.join("pkg/dist/cli.js"), "#!/usr/bin/env bun\n");
        executable(&modules.join("bun/bin/bun.exe"), "\x7fELF");
        fs::create_dir_all(modules.join(".bin")).unwrap();
        symlink("../pkg/dist/cli.js", modules.join(".bin/omp")).unwrap();
        symlink("../bun/bin/bun.exe", modules.join(".bin/bun")).unwrap();
        fs::write(install.join("package.json"), "{}").unwrap();
        let env = Env::from_pairs(&[
            (
                "PATH",
                &format!("{}:/usr/bin", modules.join(".bin").display()),
            ),
            ("HOME", root.path().join("home").to_str().unwrap()),
        ]);
        let profile = derive(
            "omp",
            &Needs::NONE,
            &modules.join(".bin/omp"),
            &env,
            None,
            None,
        )
        .unwrap();
        let paths: Vec<(&Path, Access)> = profile
            .grants
            .iter()
            .map(|g| (g.path.as_path(), g.access))
            .collect();
        assert_eq!(
            paths,
            [
                (install.as_path(), Access::Read),
                (modules.as_path(), Access::ReadExec),
            ]
        );
        assert!(profile.connect.is_empty(), "no provider declared, no port");
    }

    #[test]
    fn a_missing_env_interpreter_is_named() {
        let root = tempfile::tempdir().unwrap();
        let program = root.path().join("bin/tool");
        executable(&program, "#!/usr/bin/env no-such-interpreter-xyz\n");
        let env = Env::from_pairs(&[("PATH", "/usr/bin")]);
        let error = derive("omp", &Needs::NONE, &program, &env, None, None).unwrap_err();
        assert!(
            format!("{error:#}").contains("no-such-interpreter-xyz"),
            "{error:#}"
        );
    }

    #[test]
    fn places_are_private_and_ports_come_from_the_operators_config() {
        let root = tempfile::tempdir().unwrap();
        let home = root.path().join("home");
        let moved = root.path().join("moved");
        let state = root.path().join("state");
        fs::create_dir_all(home.join(".tool")).unwrap();
        fs::create_dir_all(&moved).unwrap();
        fs::write(
            moved.join("config.toml"),
            "base_url = \"http://127.0.0.1:18084/v1\"",
        )
        .unwrap();
        let program = root.path().join("bin/tool");
        executable(&program, "\x7fELF");
        const NEEDS: Needs = Needs {
            places: &[
                Place::moved_by("TOOL_HOME", "", ".tool", Access::ReadWrite, "state"),
                Place::home(".absent", Access::Read, "config"),
            ],
            url_vars: &["TOOL_BASE_URL"],
            env: &[],
            files: &[],
            temp: None,
            url_files: &[Place::moved_file(
                "TOOL_HOME",
                "config.toml",
                ".tool/config.toml",
                "config",
            )],
            carried: &[],
            logins: &[],
        };
        let unmoved = Env::from_pairs(&[("HOME", home.to_str().unwrap())]);
        let error = derive("tool", &NEEDS, &program, &unmoved, None, None).unwrap_err();
        assert!(format!("{error}").contains("give --state DIR"), "{error}");

        let moved_env = Env::from_pairs(&[
            ("HOME", home.to_str().unwrap()),
            ("TOOL_HOME", moved.to_str().unwrap()),
            ("TOOL_BASE_URL", "https://example.com:8443/"),
        ]);
        let profile = derive("tool", &NEEDS, &program, &moved_env, Some(&state), None).unwrap();
        // Nothing of the operator's is granted; the state is, and the CLI's places are in it.
        let writable: Vec<&Path> = profile
            .grants
            .iter()
            .filter(|g| g.access == Access::ReadWrite)
            .map(|g| g.path.as_path())
            .collect();
        assert_eq!(writable, [state.as_path()], "{profile}");
        assert!(!profile.grants.iter().any(|g| g.path.starts_with(&home)));
        let private = profile.state.clone().unwrap();
        assert_eq!(private.unset, ["TOOL_HOME"]);
        assert_eq!(private.dirs, [state.join("home/.tool")]);
        assert_eq!(private.carried.len(), 1);
        assert_eq!(private.carried[0].from, moved.join("config.toml"));
        assert_eq!(private.carried[0].to, state.join("home/.tool/config.toml"));
        assert!(
            profile.to_string().contains("# unsets TOOL_HOME"),
            "{profile}"
        );
        let ports: Vec<u16> = profile.connect.iter().map(|(p, _)| *p).collect();
        assert_eq!(ports, [8443, 18084]);

        // The job's copy names another port: the next job's grant is still the operator's.
        private.prepare(None).unwrap();
        fs::write(
            state.join("home/.tool/config.toml"),
            "base_url = \"http://any-host:6379/\"",
        )
        .unwrap();
        let profile = derive("tool", &NEEDS, &program, &moved_env, Some(&state), None).unwrap();
        let ports: Vec<u16> = profile.connect.iter().map(|(p, _)| *p).collect();
        assert_eq!(ports, [8443, 18084]);

        // A proxy is the way out: its port is granted beside the provider's.
        let proxied = Env::from_pairs(&[
            ("HOME", home.to_str().unwrap()),
            ("https_proxy", "http://proxy.corp:3128"),
        ]);
        let profile = derive("tool", &NEEDS, &program, &proxied, Some(&state), None).unwrap();
        let ports: Vec<u16> = profile.connect.iter().map(|(p, _)| *p).collect();
        assert_eq!(ports, [443, 3128]);
    }

    /// Every runtime's profile, with every place the operator has moved and present: nothing
    /// writable outside the private state, nothing of the operator's home granted but files
    /// read (what --print-profile shows for every runtime).
    #[test]
    fn no_runtime_is_granted_a_writable_place_of_the_operators() {
        let root = tempfile::tempdir().unwrap();
        let home = root.path().join("home");
        let state = root.path().join("state");
        let program = root.path().join("bin/cli");
        executable(&program, "\x7fELF");
        for meta in crate::registry::all() {
            let needs = &meta.needs;
            let mut pairs = vec![("HOME".to_string(), home.display().to_string())];
            for var in needs.variables() {
                let dir = root.path().join("moved").join(var);
                fs::create_dir_all(&dir).unwrap();
                pairs.push((var.to_string(), dir.display().to_string()));
            }
            let pairs: Vec<(&str, &str)> = pairs
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            for env in [Env::from_pairs(&pairs[..1]), Env::from_pairs(&pairs)] {
                let profile = derive(meta.name, needs, &program, &env, Some(&state), None).unwrap();
                for grant in &profile.grants {
                    assert!(
                        grant.access < Access::ReadWrite || grant.path == state,
                        "{}: {profile}",
                        meta.name
                    );
                    assert!(!grant.path.starts_with(&home), "{}: {profile}", meta.name);
                }
                let home_var = profile.env.iter().find(|(name, _, _)| name == "HOME");
                assert_eq!(
                    home_var.map(|(_, value, _)| PathBuf::from(value)),
                    Some(state.join("home")),
                    "{}: {profile}",
                    meta.name
                );
            }
        }
    }

    /// claude's temporary directory is its private one: never the shared /tmp/claude-<uid>,
    /// which another user can create first, nor a directory the operator moved it to.
    #[test]
    fn claude_is_never_granted_a_shared_temporary_directory() {
        let root = tempfile::tempdir().unwrap();
        let home = root.path().join("home");
        let state = root.path().join("state");
        fs::create_dir_all(home.join(".claude")).unwrap();
        let program = root.path().join("bin/claude");
        executable(&program, "\x7fELF");
        let needs = &crate::registry::find("claude").unwrap().needs;
        let moved = root.path().join("claude-tmp");
        let env = Env::from_pairs(&[
            ("HOME", home.to_str().unwrap()),
            ("CLAUDE_CODE_TMPDIR", moved.to_str().unwrap()),
        ]);
        let profile = derive("claude", needs, &program, &env, Some(&state), None).unwrap();
        assert!(
            !profile
                .grants
                .iter()
                .any(|g| g.path.to_string_lossy().starts_with("/tmp/claude-")
                    || g.path.starts_with(&moved)),
            "{profile}"
        );
        let tmpdir = profile.env.iter().find(|(name, _, _)| name == "TMPDIR");
        assert_eq!(
            tmpdir.map(|(_, value, _)| PathBuf::from(value)),
            Some(state.join("home/.claude/tmp"))
        );
        assert!(profile.state.unwrap().unset.contains(&"CLAUDE_CODE_TMPDIR"));
    }
}
