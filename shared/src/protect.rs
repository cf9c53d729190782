//! `moot-run --protect DIR`: the files of a worktree that the operator's own tools later trust or
//! run, though the job could write them. git reads its repository's `config` as the operator's
//! word (`core.fsmonitor`, `core.hooksPath`, `filter.*`, `diff.*.textconv`, `core.sshCommand`,
//! `include.path`, ...) and runs its hooks; a `.git` file names where all of that is read from.
//! An agent granted the worktree writable could plant any of them, and the operator's next
//! `git status` would run the agent's code outside the seat.
//!
//! Landlock can only allow a path, never deny one below an allowed directory, so this is covered
//! from outside the seat instead: moot-run takes a snapshot of the protected set before the
//! command starts, compares once every process of the job is dead (so nothing races the
//! comparison or the repair), and when anything changed it puts the originals back, removes
//! what was added, and the run fails as `tampered`.
//!
//! The protected set of a worktree: every `.git` entry in it, at any depth (a nested repository
//! is a submodule's, or becomes one when the job adds a gitlink to the index, and `git status`
//! runs inside it); in each git directory, what git reads as configuration or runs
//! ([`GIT_CONFIGURATION`], and [`GIT_CONFIGURATION_BELOW`] inside its data), in it and in every
//! git directory nested under `modules/` and `worktrees/`; the git directory a `.git` file names;
//! and every `.gitmodules`. Git's data (objects, refs, logs, the index, the state of a commit,
//! merge or rebase) and other tools' files in `.git` (opencode keeps its project id there) are
//! left to the job, so that `git add` and `git commit` on its branch keep working.
//!
//! Not covered: a replace ref written into `packed-refs` (git's data, rewritten by ordinary
//! commands) rather than as a file under `refs/replace/`. An operator who runs git on a worktree
//! an agent wrote sets `GIT_NO_REPLACE_OBJECTS=1`, or, better, hands the agent a clone
//! (examples/engines/ do).

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::io::{self, Read};
use std::os::unix::fs::{symlink, FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use nix::libc;
use serde::{Deserialize, Serialize};

/// What git reads in a git directory as configuration or runs: its config, hooks, `info/`
/// (attributes that pick drivers, excludes, sparse patterns), the pointers of a linked worktree
/// (`commondir`, `gitdir`) and the legacy remote definitions. Taken whole.
const GIT_CONFIGURATION: &[&str] = &[
    "config",
    "config.worktree",
    "hooks",
    "info",
    "commondir",
    "gitdir",
    "remotes",
    "branches",
    "shallow",
];

/// What git reads as configuration inside its data: replacement refs (a `refs/replace/<id>` makes
/// every command show another object for that id, so the operator's next checkout of a commit
/// the agent never made shows the agent's files), and alternates (other object stores git reads
/// as this one's). A link in place of a directory on the way is recorded, never followed.
const GIT_CONFIGURATION_BELOW: &[&str] = &[
    "refs/replace",
    "objects/info/alternates",
    "objects/info/http-alternates",
];

/// Where a git directory holds other git directories (a submodule's, a linked worktree's), at
/// any depth below: each is protected the same way.
const NESTED_GIT_DIRS: &[&str] = &["modules", "worktrees"];

/// Names of git's data below `modules/` and `worktrees/`, never a nested git directory.
const GIT_DATA: &[&str] = &["objects", "refs", "logs", "lfs", "rr-cache"];

/// The most the protected set may hold (its files are kept in memory to be put back): far above
/// a repository's config and hooks, far below what a run's memory can spare.
const MAX_BYTES: u64 = 64 << 20;
/// A thousand in this module's own tests, so that the flood test writes a thousand files, not
/// a hundred thousand (the limit is checked the same way whatever its value).
const MAX_ENTRIES: usize = if cfg!(test) { 1_000 } else { 100_000 };

/// How many changed paths the status file names, and in how many bytes (it is one short line).
const NAMED_AT_MOST: usize = 8;
const NAMED_BYTES_AT_MOST: usize = 2048;

/// One entry of the protected set, as it was.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    Dir {
        mode: u32,
    },
    File {
        mode: u32,
        bytes: Vec<u8>,
    },
    Link(PathBuf),
    /// A FIFO, socket or device: never put back, only noticed (one planted as `.git/config`
    /// would hang the operator's git).
    Special {
        mode: u32,
    },
}

/// The protected set of some worktrees at one moment.
#[derive(Debug)]
pub struct Snapshot {
    roots: Vec<PathBuf>,
    /// Git directories outside the roots that a `.git` file named when the snapshot was taken.
    named_git_dirs: Vec<PathBuf>,
    /// Every `.git` directory that was a git directory, with its `HEAD`: one that stops being a
    /// git directory hands git's discovery to its parent, which then reads the worktree's own
    /// `HEAD`, `config` and `hooks` as a bare repository's.
    git_dirs: Vec<(PathBuf, Vec<u8>)>,
    entries: BTreeMap<PathBuf, Entry>,
}

/// What a run did to the protected set: the status file's `tampered`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tampered {
    /// How many protected paths were added, removed or changed.
    pub count: usize,
    /// The first of them.
    pub paths: Vec<PathBuf>,
    /// True when every original was put back and every addition removed.
    pub restored: bool,
    /// Why the protected set could not be read whole after the run (it then cannot be shown
    /// unchanged, and nothing was put back).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unverifiable: Option<String>,
}

impl fmt::Display for Tampered {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(why) = &self.unverifiable {
            return write!(
                f,
                "the protected set cannot be verified after the run: {why}"
            );
        }
        let named: Vec<String> = self.paths.iter().map(|p| p.display().to_string()).collect();
        write!(
            f,
            "the job changed {} protected path{} ({}{}), {}",
            self.count,
            if self.count == 1 { "" } else { "s" },
            named.join(", "),
            if self.count > named.len() {
                ", ..."
            } else {
                ""
            },
            if self.restored {
                "now put back as they were"
            } else {
                "and not all could be put back: do not run git there"
            }
        )
    }
}

impl Snapshot {
    /// The protected set of `roots` (directories), as it is now.
    pub fn take(roots: &[PathBuf]) -> anyhow::Result<Self> {
        let roots = roots
            .iter()
            .map(|root| {
                let real = fs::canonicalize(root).with_context(|| {
                    format!("--protect ({}): cannot resolve it", root.display())
                })?;
                if !real.is_dir() {
                    bail!("--protect ({}): not a directory", root.display());
                }
                Ok(real)
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        let mut snapshot = Snapshot {
            named_git_dirs: Vec::new(),
            git_dirs: Vec::new(),
            entries: BTreeMap::new(),
            roots,
        };
        snapshot.entries = snapshot.scan().context("--protect")?;
        let named: Vec<PathBuf> = snapshot
            .entries
            .iter()
            .filter(|(path, _)| path.file_name().is_some_and(|n| n == ".git"))
            .filter_map(|(path, entry)| named_git_dir(path, entry))
            .filter(|dir| !snapshot.roots.iter().any(|root| dir.starts_with(root)))
            .collect();
        let mut extra = Scan::default();
        for dir in &named {
            extra.git_entry(dir)?;
        }
        snapshot.entries.extend(extra.entries);
        snapshot.named_git_dirs = named;
        snapshot.git_dirs = snapshot
            .entries
            .iter()
            .filter(|(path, entry)| {
                path.file_name().is_some_and(|n| n == ".git")
                    && matches!(entry, Entry::Dir { .. })
                    && is_git_dir(path)
            })
            .filter_map(|(path, _)| Some((path.clone(), fs::read(path.join("HEAD")).ok()?)))
            .collect();
        Ok(snapshot)
    }

    /// Compares the protected set with the snapshot, and when anything changed, puts the
    /// originals back; `None` when nothing changed.
    pub fn verify_and_restore(&self) -> Option<Tampered> {
        let (mut changed, mut restored, unverifiable) = match self.scan() {
            Ok(now) => {
                let changed: Vec<PathBuf> = self
                    .entries
                    .keys()
                    .chain(now.keys())
                    .filter(|path| self.entries.get(*path) != now.get(*path))
                    .collect::<std::collections::BTreeSet<_>>()
                    .into_iter()
                    .cloned()
                    .collect();
                let restored = self.restore(&now, &changed);
                (changed, restored, None)
            }
            // A tree that cannot be read whole cannot be shown unchanged: everything the
            // snapshot holds is put back, and what is not in it is cleared from its directories.
            Err(error) => {
                let restored = self.restore_all();
                let why: String = format!("{error:#}").chars().take(1024).collect();
                (Vec::new(), restored, Some(why))
            }
        };
        for (dir, head) in &self.git_dirs {
            if !is_git_dir(dir) {
                changed.push(dir.join("HEAD"));
                restored &= repair_git_dir(dir, head).is_ok() && is_git_dir(dir);
            }
        }
        if changed.is_empty() && unverifiable.is_none() {
            return None;
        }
        let mut named_bytes = 0;
        let paths = changed
            .iter()
            .take(NAMED_AT_MOST)
            .take_while(|path| {
                named_bytes += path.as_os_str().len();
                named_bytes <= NAMED_BYTES_AT_MOST
            })
            .cloned()
            .collect();
        Some(Tampered {
            count: changed.len(),
            paths,
            restored,
            unverifiable,
        })
    }

    /// Puts back every entry of the snapshot, after clearing from each of its directories what
    /// the snapshot does not hold (read as a stream: a flood of entries is removed, not kept).
    fn restore_all(&self) -> bool {
        let mut all = true;
        for (dir, entry) in &self.entries {
            if !matches!(entry, Entry::Dir { .. }) {
                continue;
            }
            let Ok(listing) = fs::read_dir(dir) else {
                continue;
            };
            for child in listing.flatten() {
                let path = child.path();
                if !self.entries.contains_key(&path) && remove(&path).is_err() {
                    all = false;
                }
            }
        }
        for (path, entry) in &self.entries {
            if put_back(path, entry).is_err() {
                all = false;
            }
        }
        all
    }

    fn scan(&self) -> anyhow::Result<BTreeMap<PathBuf, Entry>> {
        let mut scan = Scan::default();
        for root in &self.roots {
            scan.worktree(root)?;
        }
        for dir in &self.named_git_dirs {
            scan.git_entry(dir)?;
        }
        Ok(scan.entries)
    }

    /// Removes what is not as it was (deepest first), then writes back what was (shallowest
    /// first). Every process of the job is dead by now, so nothing moves under this; a parent
    /// that is not a real directory is never written through. True when all went back.
    fn restore(&self, now: &BTreeMap<PathBuf, Entry>, changed: &[PathBuf]) -> bool {
        let mut all = true;
        for path in changed.iter().rev() {
            let Some(current) = now.get(path) else {
                continue;
            };
            let keep = matches!(
                (self.entries.get(path), current),
                (Some(Entry::Dir { .. }), Entry::Dir { .. })
            );
            if !keep && remove(path).is_err() {
                all = false;
            }
        }
        for path in changed {
            if let Some(entry) = self.entries.get(path) {
                if put_back(path, entry).is_err() {
                    all = false;
                }
            }
        }
        all
    }
}

/// Whether git takes `dir` for a git directory: a `HEAD` naming a ref or an object, and
/// `objects` and `refs` directories.
fn is_git_dir(dir: &Path) -> bool {
    let head_is_valid = fs::symlink_metadata(dir.join("HEAD")).is_ok_and(|m| m.is_file())
        && fs::read(dir.join("HEAD")).is_ok_and(|head| valid_head(&head));
    head_is_valid && dir.join("objects").is_dir() && dir.join("refs").is_dir()
}

/// `ref: refs/<name>` or an object id, on one line.
fn valid_head(head: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(head) else {
        return false;
    };
    let text = text.strip_suffix('\n').unwrap_or(text);
    if let Some(name) = text.strip_prefix("ref: refs/") {
        return !name.is_empty()
            && !name.contains("..")
            && !name.chars().any(|c| c.is_control() || c == ' ');
    }
    matches!(text.len(), 40 | 64) && text.chars().all(|c| c.is_ascii_hexdigit())
}

/// Makes `dir` a git directory again: its `HEAD` as it was, and `objects` and `refs` (empty when
/// the job removed them: what it removed of git's data is lost, as any agent with the worktree
/// could lose it, but git reads this directory again and not its parent).
fn repair_git_dir(dir: &Path, head: &[u8]) -> io::Result<()> {
    if !fs::read(dir.join("HEAD")).is_ok_and(|now| valid_head(&now)) {
        put_back(
            &dir.join("HEAD"),
            &Entry::File {
                mode: 0o644,
                bytes: head.to_vec(),
            },
        )?;
    }
    for data in ["objects", "refs"] {
        let path = dir.join(data);
        if !path.is_dir() {
            put_back(&path, &Entry::Dir { mode: 0o755 })?;
        }
    }
    Ok(())
}

/// The git directory a `.git` file names (`gitdir: X`, relative to the file's directory).
fn named_git_dir(dot_git: &Path, entry: &Entry) -> Option<PathBuf> {
    let Entry::File { bytes, .. } = entry else {
        return None;
    };
    let text = std::str::from_utf8(bytes).ok()?;
    let named = text.lines().next()?.strip_prefix("gitdir:")?.trim();
    let dir = dot_git.parent()?.join(named);
    fs::canonicalize(dir).ok().filter(|dir| dir.is_dir())
}

/// A walk that records the protected entries it meets, never following a link.
#[derive(Default)]
struct Scan {
    entries: BTreeMap<PathBuf, Entry>,
    bytes: u64,
}

impl Scan {
    /// Walks a worktree for `.git` and `.gitmodules` entries (without entering a git directory
    /// as a worktree).
    fn worktree(&mut self, root: &Path) -> anyhow::Result<()> {
        let mut dirs = vec![root.to_path_buf()];
        while let Some(dir) = dirs.pop() {
            for item in read_dir(&dir)? {
                let (path, kind) = item;
                match path.file_name().and_then(|n| n.to_str()) {
                    Some(".git") => self.git_entry(&path)?,
                    Some(".gitmodules") => {
                        self.record(&path)?;
                    }
                    _ if kind.is_dir() => dirs.push(path),
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// Records a `.git` entry (or a named git directory) and, when it is a directory, what git
    /// reads in it as configuration or runs.
    fn git_entry(&mut self, path: &Path) -> anyhow::Result<()> {
        if self.record(path)? {
            self.git_dir(path)?;
        }
        Ok(())
    }

    /// The configuration of one git directory (the rest of it is git's data, or another
    /// tool's files that git never reads), and of every git directory nested in it.
    fn git_dir(&mut self, dir: &Path) -> anyhow::Result<()> {
        for below in GIT_CONFIGURATION_BELOW {
            self.below(dir, below)?;
        }
        for (child, _) in read_dir(dir)? {
            let name = child.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if GIT_CONFIGURATION.contains(&name) {
                self.tree(&child)?;
            } else if NESTED_GIT_DIRS.contains(&name) && self.record(&child)? {
                self.nested_git_dirs(&child)?;
            }
        }
        Ok(())
    }

    /// `relative` (slash-separated) below the git directory `dir`, when every directory on the
    /// way is one: a link there is recorded (so a swap is seen) and not followed.
    fn below(&mut self, dir: &Path, relative: &str) -> anyhow::Result<()> {
        let mut path = dir.to_path_buf();
        let mut parts = relative.split('/').peekable();
        while let Some(part) = parts.next() {
            path.push(part);
            if parts.peek().is_none() {
                return self.tree(&path);
            }
            match fs::symlink_metadata(&path) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    self.record(&path)?;
                    return Ok(());
                }
                Ok(meta) if meta.is_dir() => {}
                _ => return Ok(()),
            }
        }
        Ok(())
    }

    /// Every directory below `dir` (a submodule's name may hold slashes) as a git directory.
    fn nested_git_dirs(&mut self, dir: &Path) -> anyhow::Result<()> {
        for (child, kind) in read_dir(dir)? {
            let name = child.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if kind.is_dir() && !GIT_DATA.contains(&name) && !GIT_CONFIGURATION.contains(&name) {
                self.record(&child)?;
                self.git_dir(&child)?;
                self.nested_git_dirs(&child)?;
            }
        }
        Ok(())
    }

    /// Records `path` and everything below it.
    fn tree(&mut self, path: &Path) -> anyhow::Result<()> {
        let mut dirs = Vec::new();
        if self.record(path)? {
            dirs.push(path.to_path_buf());
        }
        while let Some(dir) = dirs.pop() {
            for (child, _) in read_dir(&dir)? {
                if self.record(&child)? {
                    dirs.push(child);
                }
            }
        }
        Ok(())
    }

    /// Records one entry as it is; true when it is a real directory to look into.
    fn record(&mut self, path: &Path) -> anyhow::Result<bool> {
        let meta = match fs::symlink_metadata(path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
            other => other.with_context(|| format!("cannot inspect {}", path.display()))?,
        };
        if self.entries.len() >= MAX_ENTRIES {
            bail!(
                "more than {MAX_ENTRIES} protected entries (at {}): too many to keep",
                path.display()
            );
        }
        let mode = meta.mode() & 0o7777;
        let kind = meta.file_type();
        let entry = if kind.is_dir() {
            Entry::Dir { mode }
        } else if kind.is_symlink() {
            Entry::Link(
                fs::read_link(path).with_context(|| format!("cannot read {}", path.display()))?,
            )
        } else if kind.is_file() {
            self.bytes += meta.size();
            if self.bytes > MAX_BYTES {
                bail!(
                    "the protected files pass {} MiB (at {}): too much to keep",
                    MAX_BYTES >> 20,
                    path.display()
                );
            }
            Entry::File {
                mode,
                bytes: read_file(path, meta.size())?,
            }
        } else {
            Entry::Special { mode }
        };
        let is_dir = matches!(entry, Entry::Dir { .. });
        self.entries.insert(path.to_path_buf(), entry);
        Ok(is_dir)
    }
}

/// The entries of a directory with their types (from the directory itself: no link followed).
fn read_dir(dir: &Path) -> anyhow::Result<Vec<(PathBuf, fs::FileType)>> {
    let listing = fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))?;
    listing
        .map(|item| {
            let item = item.with_context(|| format!("cannot list {}", dir.display()))?;
            let kind = item
                .file_type()
                .with_context(|| format!("cannot inspect {}", item.path().display()))?;
            Ok((item.path(), kind))
        })
        .collect()
}

/// A regular file's bytes, opened without following a link or blocking.
fn read_file(path: &Path, size: u64) -> anyhow::Result<Vec<u8>> {
    let mut file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.by_ref()
        .take(MAX_BYTES)
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read {}", path.display()))?;
    Ok(bytes)
}

/// Removes whatever is at `path` now, a directory with everything in it (links not followed).
fn remove(path: &Path) -> io::Result<()> {
    match fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
        Ok(meta) if meta.is_dir() => fs::remove_dir_all(path),
        Ok(_) => fs::remove_file(path),
    }
}

/// Writes `entry` back at `path`, whose parent must be a real directory.
fn put_back(path: &Path, entry: &Entry) -> io::Result<()> {
    let parent = path.parent().ok_or(io::ErrorKind::InvalidInput)?;
    if !fs::symlink_metadata(parent)?.is_dir() {
        return Err(io::ErrorKind::NotADirectory.into());
    }
    match entry {
        Entry::Dir { mode } => {
            match fs::symlink_metadata(path) {
                Ok(meta) if meta.is_dir() => {}
                _ => {
                    remove(path)?;
                    fs::create_dir(path)?;
                }
            }
            fs::set_permissions(path, fs::Permissions::from_mode(*mode))
        }
        Entry::File { mode, bytes } => {
            remove(path)?;
            let mut file = fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(*mode)
                .custom_flags(libc::O_NOFOLLOW)
                .open(path)?;
            io::Write::write_all(&mut file, bytes)?;
            // The mode given to open is cut by the umask: set it whole.
            file.set_permissions(fs::Permissions::from_mode(*mode))
        }
        Entry::Link(target) => {
            remove(path)?;
            symlink(target, path)
        }
        // Nothing to put back: what was there is not a file moot could copy.
        Entry::Special { .. } => match fs::symlink_metadata(path) {
            Ok(meta) if meta.file_type().is_fifo() || meta.file_type().is_socket() => Ok(()),
            _ => Err(io::ErrorKind::Unsupported.into()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(dir.path()).unwrap();
        fs::create_dir_all(root.join(".git/hooks")).unwrap();
        fs::create_dir_all(root.join(".git/objects/ab")).unwrap();
        fs::create_dir_all(root.join(".git/refs/heads")).unwrap();
        fs::write(root.join(".git/config"), "[core]\n\tbare = false\n").unwrap();
        fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        fs::write(root.join(".git/hooks/pre-commit.sample"), "#!/bin/sh\n").unwrap();
        (dir, root)
    }

    #[test]
    fn git_data_is_left_to_the_job_and_nothing_else() {
        let (_dir, root) = repo();
        let snapshot = Snapshot::take(std::slice::from_ref(&root)).unwrap();
        fs::write(root.join(".git/objects/ab/cdef"), "blob").unwrap();
        fs::write(root.join(".git/refs/heads/main"), "0000\n").unwrap();
        fs::write(root.join(".git/index"), "DIRC").unwrap();
        fs::write(root.join(".git/COMMIT_EDITMSG"), "msg").unwrap();
        fs::write(root.join(".git/config.lock"), "x").unwrap();
        fs::write(root.join(".git/opencode"), "project-id").unwrap();
        fs::write(root.join("src.rs"), "fn main() {}").unwrap();
        assert_eq!(snapshot.verify_and_restore(), None);
    }

    #[test]
    fn a_planted_config_hook_and_link_are_undone() {
        let (_dir, root) = repo();
        let snapshot = Snapshot::take(std::slice::from_ref(&root)).unwrap();
        let config = root.join(".git/config");
        fs::write(&config, "[core]\n\tfsmonitor = \"id >/tmp/x\"\n").unwrap();
        fs::write(root.join(".git/hooks/pre-commit"), "#!/bin/sh\nid\n").unwrap();
        fs::remove_file(root.join(".git/hooks/pre-commit.sample")).unwrap();
        fs::create_dir(root.join("sub")).unwrap();
        fs::write(root.join("sub/.git"), "gitdir: /tmp/evil\n").unwrap();
        fs::write(root.join(".gitmodules"), "[submodule \"x\"]\n").unwrap();
        let module = root.join(".git/modules/lib/nested");
        fs::create_dir_all(&module).unwrap();
        fs::write(module.join("config"), "[core]\n\tfsmonitor = id\n").unwrap();
        let tampered = snapshot.verify_and_restore().expect("the changes are seen");
        assert_eq!(tampered.count, 9, "{tampered:?}");
        assert!(tampered.restored);
        assert_eq!(
            fs::read_to_string(&config).unwrap(),
            "[core]\n\tbare = false\n"
        );
        assert!(!root.join(".git/hooks/pre-commit").exists());
        assert!(root.join(".git/hooks/pre-commit.sample").exists());
        assert!(!root.join("sub/.git").exists() && !root.join(".gitmodules").exists());
        assert!(!root.join(".git/modules").exists());
        assert_eq!(snapshot.verify_and_restore(), None, "all as it was");
    }

    /// A replace ref, alternates and a shallow file would change what the operator's git shows
    /// for the commits it has: undone, while refs and objects themselves stay the job's.
    #[test]
    fn replace_refs_alternates_and_shallow_are_undone() {
        let (_dir, root) = repo();
        let snapshot = Snapshot::take(std::slice::from_ref(&root)).unwrap();
        let replace = root.join(".git/refs/replace");
        fs::create_dir_all(&replace).unwrap();
        fs::write(
            replace.join("0123456789abcdef0123456789abcdef01234567"),
            "fedc\n",
        )
        .unwrap();
        fs::create_dir_all(root.join(".git/objects/info")).unwrap();
        fs::write(
            root.join(".git/objects/info/alternates"),
            "/tmp/evil/objects\n",
        )
        .unwrap();
        fs::write(root.join(".git/objects/info/commit-graph"), "data").unwrap();
        fs::write(root.join(".git/shallow"), "0123\n").unwrap();
        fs::write(root.join(".git/refs/heads/topic"), "0000\n").unwrap();
        let tampered = snapshot.verify_and_restore().expect("the changes are seen");
        assert!(tampered.restored, "{tampered:?}");
        assert_eq!(tampered.count, 4, "{tampered:?}");
        assert!(!replace.exists() && !root.join(".git/shallow").exists());
        assert!(!root.join(".git/objects/info/alternates").exists());
        assert!(root.join(".git/objects/info/commit-graph").exists());
        assert!(root.join(".git/refs/heads/topic").exists());
        assert_eq!(snapshot.verify_and_restore(), None);

        // A link in place of `refs` is seen, and removed without writing through it.
        let elsewhere = tempfile::tempdir().unwrap();
        fs::create_dir_all(elsewhere.path().join("replace")).unwrap();
        fs::write(elsewhere.path().join("replace/x"), "keep").unwrap();
        fs::rename(root.join(".git/refs"), root.join("refs-moved")).unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), root.join(".git/refs")).unwrap();
        let tampered = snapshot.verify_and_restore().expect("the link is seen");
        assert!(tampered.restored, "{tampered:?}");
        // (A `.git` left without `refs` is made a git directory again: a real one.)
        assert!(fs::symlink_metadata(root.join(".git/refs")).map_or(true, |m| m.is_dir()));
        assert!(elsewhere.path().join("replace/x").exists());
    }

    #[test]
    fn a_git_dir_swapped_for_a_link_is_never_written_through() {
        let (_dir, root) = repo();
        let elsewhere = tempfile::tempdir().unwrap();
        let snapshot = Snapshot::take(std::slice::from_ref(&root)).unwrap();
        fs::rename(root.join(".git/hooks"), root.join("moved")).unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), root.join(".git/hooks")).unwrap();
        let tampered = snapshot.verify_and_restore().expect("the link is seen");
        assert!(tampered.restored, "{tampered:?}");
        assert!(fs::symlink_metadata(root.join(".git/hooks"))
            .unwrap()
            .is_dir());
        assert!(root.join(".git/hooks/pre-commit.sample").is_file());
        assert_eq!(fs::read_dir(elsewhere.path()).unwrap().count(), 0);
    }

    /// A `.git` made invalid (a garbage `HEAD`) hands git's discovery to the worktree itself,
    /// where the job may have planted a bare repository's `HEAD`, `config` and `hooks`: the
    /// `.git` is made a git directory again.
    #[test]
    fn a_git_dir_made_invalid_is_repaired() {
        let (_dir, root) = repo();
        fs::create_dir_all(root.join(".git/refs/heads")).unwrap();
        let snapshot = Snapshot::take(std::slice::from_ref(&root)).unwrap();
        fs::write(root.join(".git/HEAD"), "garbage\n").unwrap();
        fs::remove_dir_all(root.join(".git/refs")).unwrap();
        let tampered = snapshot
            .verify_and_restore()
            .expect("the broken .git is seen");
        assert!(tampered.restored, "{tampered:?}");
        assert_eq!(tampered.paths, [root.join(".git/HEAD")]);
        assert_eq!(
            fs::read_to_string(root.join(".git/HEAD")).unwrap(),
            "ref: refs/heads/main\n"
        );
        assert!(is_git_dir(&root.join(".git")));
        assert_eq!(snapshot.verify_and_restore(), None);
    }

    #[test]
    fn heads_are_refs_or_object_ids() {
        assert!(valid_head(b"ref: refs/heads/main\n"));
        assert!(valid_head(&[b'a'; 40]));
        for bad in [
            &b"garbage"[..],
            b"ref: refs/../x",
            b"ref: refs/",
            b"ref: heads/x",
            b"",
        ] {
            assert!(!valid_head(bad), "{}", String::from_utf8_lossy(bad));
        }
    }

    /// A flood of entries where the snapshot is kept makes the tree unverifiable: the run still
    /// fails, and the snapshot is put back whole, the flood cleared.
    #[test]
    fn a_flooded_protected_directory_is_cleared_and_put_back() {
        let (_dir, root) = repo();
        let snapshot = Snapshot::take(std::slice::from_ref(&root)).unwrap();
        fs::write(root.join(".git/config"), "[core]\n\tfsmonitor = id\n").unwrap();
        let hooks = root.join(".git/hooks");
        for n in 0..=MAX_ENTRIES {
            fs::write(hooks.join(n.to_string()), "").unwrap();
        }
        let tampered = snapshot.verify_and_restore().expect("the flood is seen");
        assert!(tampered.unverifiable.is_some(), "{tampered:?}");
        assert!(tampered.restored, "{tampered:?}");
        assert_eq!(
            fs::read_to_string(root.join(".git/config")).unwrap(),
            "[core]\n\tbare = false\n"
        );
        assert_eq!(
            fs::read_dir(&hooks).unwrap().count(),
            1,
            "only the sample is left"
        );
        assert_eq!(snapshot.verify_and_restore(), None);
    }
}
