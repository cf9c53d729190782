//! A seat's private state: the HOME and state directories a CLI writes in a seat, in a
//! directory of the job (or of its managed session), never the operator's own.
//!
//! A CLI's config and state directories hold what its next, unconfined run loads (hooks,
//! extensions, plugins, MCP servers) and what the next seat's grants are derived from, so a seat
//! that could write the operator's would run code outside itself later. Instead each seat gets a
//! directory of its own ([`PrivateState`], planned by src/profile.rs from the runtime's
//! [`Needs`](crate::model::Needs)): `HOME` is `DIR/home`, every variable that moves a place is
//! unset so the CLI keeps everything below that home, and before each job the operator's
//! configuration as it is then (the provider config, credentials, settings: nothing else) is
//! copied in. Nothing in it is read by the operator's CLI, and a later job of the same session
//! finds its sessions there.
//!
//! The directory is written by the harness before the job, while a process of another job of the
//! same session may be changing it (swapping a directory for a link between two system calls),
//! so nothing here names a path below `DIR`: every step is relative to a descriptor of a
//! directory opened without following a link (`openat` with `O_NOFOLLOW`), a file is replaced by
//! a rename inside its directory (which replaces a link, never writes through it), and a removal
//! descends by descriptors too. Whatever is swapped in, the writes stay in directories the seat
//! could write anyway.

use std::ffi::OsStr;
use std::fs;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

use anyhow::{bail, Context};
use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag};
use nix::sys::stat::Mode;
use nix::unistd::{unlinkat, UnlinkatFlags};

use crate::seat_proxy::SeatProxy;

/// The largest file carried in (a credentials database is the largest expected).
const CARRY_LIMIT: u64 = 64 << 20;

/// The most files a carried directory may hold.
const CARRY_FILES: usize = 1000;

/// What a seat's private state holds, planned before the job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrivateState {
    /// The directory given with `--state`.
    pub dir: PathBuf,
    /// `DIR/home`, the CLI's `$HOME`.
    pub home: PathBuf,
    /// The directories the CLI writes, made when absent (all below `home`).
    pub dirs: Vec<PathBuf>,
    /// The operator's files copied in before each job.
    pub carried: Vec<Carried>,
    /// The variables unset for the CLI, so that every place it uses is below `home`.
    pub unset: Vec<&'static str>,
    /// The job's credential proxy: every copy gets its token in place of the provider's key
    /// and its URL in place of the provider's.
    pub proxy: Option<SeatProxy>,
}

/// One file (or directory of files) of the operator's configuration, and where the CLI finds
/// it in the private state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Carried {
    pub from: PathBuf,
    pub to: PathBuf,
    /// A directory: its regular files are copied, nothing below them.
    pub dir: bool,
    /// A login kept out of a seat behind a credential proxy: removed from the state, never
    /// copied.
    pub kept_out: bool,
    pub why: String,
}

impl PrivateState {
    /// Makes the state directory (when absent) and what is below it, and copies the operator's
    /// configuration in, replacing what an earlier job left there. Fails, naming the path, on
    /// anything planted: a link or a file where a directory belongs, a directory that is not
    /// its owner's or that others may write.
    ///
    /// With `seat_user` (a `--user` seat, moot-sandbox running as root), the operator's files
    /// are read as the caller and everything below the state directory is written with that
    /// user's file rights (the filesystem uid, setfsuid(2)): what the state holds is the seat
    /// user's, and a link that user planted reaches nothing the user could not reach anyway.
    pub fn prepare(&self, seat_user: Option<(u32, u32)>) -> anyhow::Result<()> {
        let what = || format!("--state ({})", self.dir.display());
        let mut loaded = Vec::with_capacity(self.carried.len());
        for carried in &self.carried {
            let content = match carried.kept_out {
                true => Content::Absent,
                false => load(carried).with_context(what)?,
            };
            loaded.push(match &self.proxy {
                Some(proxy) => content.rewritten(proxy),
                None => content,
            });
        }
        let owner = seat_user.map_or(nix::unistd::geteuid().as_raw(), |(uid, _)| uid);
        make_for(&self.dir, seat_user).with_context(what)?;
        as_file_user(seat_user, || {
            let root = claim_root(&self.dir, owner)?;
            make_below(&root, &self.dir, &self.home)?;
            for dir in &self.dirs {
                make_below(&root, &self.dir, dir)?;
            }
            for (carried, content) in self.carried.iter().zip(loaded) {
                store(&root, &self.dir, carried, content).with_context(|| {
                    format!(
                        "cannot copy {} to {}",
                        carried.from.display(),
                        carried.to.display()
                    )
                })?;
            }
            Ok(())
        })
        .with_context(what)
    }
}

/// Runs `work` with the filesystem uid and gid of `user` when given, and the caller's again
/// after.
fn as_file_user<T>(
    user: Option<(u32, u32)>,
    work: impl FnOnce() -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    use nix::unistd::{setfsgid, setfsuid, Gid, Uid};
    let Some((uid, gid)) = user else {
        return work();
    };
    let old_gid = setfsgid(Gid::from_raw(gid));
    let old_uid = setfsuid(Uid::from_raw(uid));
    let result = work();
    setfsuid(old_uid);
    setfsgid(old_gid);
    result
}

/// Makes `dir` (owner-only) when absent, as the caller, and gives it to the seat's user: that
/// user may not write its parent (a stage directory of root's, mode 0711).
fn make_for(dir: &Path, seat_user: Option<(u32, u32)>) -> anyhow::Result<()> {
    check_parent(dir)?;
    match fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Ok(()),
        Err(e) => return Err(e).context("cannot create it (its parent must exist)"),
    }
    if let Some((uid, gid)) = seat_user {
        std::os::unix::fs::lchown(dir, Some(uid), Some(gid))
            .context("cannot give it to the seat's user")?;
    }
    Ok(())
}

/// The state's path is one no one else can change: its parent is named by its real path (no
/// link on the way, which another user could flip between two lookups), and every directory
/// from `/` down to it is root's or the caller's and writable by no one else (unless sticky, as
/// /tmp is, where only an entry's owner renames it). Then the checks below, the creation, the
/// ownership change and the sandbox's grant all reach the same directory.
fn check_parent(dir: &Path) -> anyhow::Result<()> {
    let parent = crate::private_file::parent_dir(dir);
    let real =
        fs::canonicalize(parent).with_context(|| format!("its parent {}", parent.display()))?;
    if real != parent {
        bail!(
            "its parent {} has a link or '..' in its path: give its real path ({})",
            parent.display(),
            real.display()
        );
    }
    let me = nix::unistd::geteuid().as_raw();
    for ancestor in real.ancestors() {
        let meta = fs::symlink_metadata(ancestor)?;
        let shared = meta.mode() & 0o022 != 0 && meta.mode() & 0o1000 == 0;
        if (meta.uid() != me && meta.uid() != 0) || shared {
            bail!(
                "{} (on its path) is not yours or root's, or lets others rename what is in it: \
                 give a state in a directory of your own",
                ancestor.display()
            );
        }
    }
    Ok(())
}

/// Opens the state directory (not through a link); it must be owned by the (filesystem) user
/// writing it and writable by nobody else.
fn claim_root(dir: &Path, owner: u32) -> anyhow::Result<OwnedFd> {
    // Looked at first for the clearer refusal (a directory of another user's cannot be opened
    // at all); the descriptor's own metadata is what counts.
    if let Ok(meta) = fs::symlink_metadata(dir) {
        if meta.is_dir() && meta.uid() != owner {
            bail!(
                "belongs to uid {}, not to the seat's user ({owner}): give a directory of the \
                 job's own",
                meta.uid()
            );
        }
    }
    let fd = open_dir(None, dir.as_os_str()).map_err(|e| match e {
        Errno::ELOOP | Errno::ENOTDIR => anyhow::anyhow!(
            "is not a directory (a link or a file): give a directory of the job's own"
        ),
        e => anyhow::Error::from(e).context("cannot open it"),
    })?;
    let meta = nix::sys::stat::fstat(fd.as_raw_fd())?;
    if meta.st_uid != owner {
        bail!(
            "belongs to uid {}, not to the seat's user ({owner}): give a directory of the \
             job's own",
            meta.st_uid
        );
    }
    if meta.st_mode & 0o022 != 0 {
        bail!(
            "is writable by others (mode {:o}): give a private directory",
            meta.st_mode & 0o7777
        );
    }
    Ok(fd)
}

/// Opens the directory `name` in `parent` (a path when `parent` is `None`), never through a
/// link.
fn open_dir(parent: Option<&OwnedFd>, name: &OsStr) -> nix::Result<OwnedFd> {
    let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let raw = nix::fcntl::openat(parent.map(|p| p.as_raw_fd()), name, flags, Mode::empty())?;
    // SAFETY: openat just returned this descriptor, and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

/// The names from `root` (the state directory) down to `path`, which must be below it.
fn names_below<'a>(root: &Path, path: &'a Path) -> anyhow::Result<Vec<&'a OsStr>> {
    let relative = path
        .strip_prefix(root)
        .with_context(|| format!("{} is outside the state", path.display()))?;
    relative
        .components()
        .map(|component| match component {
            Component::Normal(name) => Ok(name),
            _ => bail!("{} is not a plain path below the state", path.display()),
        })
        .collect()
}

/// Makes every directory from the state `root` down to `dir` that is absent (owner-only) and
/// opens `dir`, refusing a component that is a link or not a directory.
fn make_below(root: &OwnedFd, root_path: &Path, dir: &Path) -> anyhow::Result<OwnedFd> {
    let mut current = root.try_clone()?;
    let mut shown = root_path.to_path_buf();
    for name in names_below(root_path, dir)? {
        shown.push(name);
        match nix::sys::stat::mkdirat(
            Some(current.as_raw_fd()),
            name,
            Mode::from_bits_truncate(0o700),
        ) {
            Ok(()) | Err(Errno::EEXIST) => {}
            Err(e) => return Err(e).with_context(|| format!("cannot create {}", shown.display())),
        }
        current = open_dir(Some(&current), name).map_err(|e| match e {
            Errno::ELOOP | Errno::ENOTDIR => anyhow::anyhow!(
                "{} is a link or a file, not a directory (an earlier job's? remove the state)",
                shown.display()
            ),
            e => anyhow::Error::from(e).context(shown.display().to_string()),
        })?;
    }
    Ok(current)
}

/// What the operator has of one carried place before the job.
enum Content {
    File(Vec<u8>),
    /// A directory's regular files, by name.
    Dir(Vec<(std::ffi::OsString, Vec<u8>)>),
    Absent,
}

impl Content {
    /// The content as a seat behind `proxy` gets it (see [`SeatProxy::rewrite`]).
    fn rewritten(self, proxy: &SeatProxy) -> Content {
        match self {
            Content::File(bytes) => Content::File(proxy.rewrite(&bytes)),
            Content::Dir(files) => Content::Dir(
                files
                    .into_iter()
                    .map(|(name, bytes)| (name, proxy.rewrite(&bytes)))
                    .collect(),
            ),
            Content::Absent => Content::Absent,
        }
    }
}

impl Carried {
    /// The operator's bytes this carries, a file's or each of a directory's files' (none when
    /// absent or unreadable): what the seat's copy is made from.
    pub fn contents(&self) -> Vec<Vec<u8>> {
        match load(self) {
            Ok(Content::File(bytes)) => vec![bytes],
            Ok(Content::Dir(files)) => files.into_iter().map(|(_, bytes)| bytes).collect(),
            Ok(Content::Absent) | Err(_) => Vec::new(),
        }
    }
}

/// Reads one carried file or directory of the operator's (links followed: they are the
/// operator's own).
fn load(carried: &Carried) -> anyhow::Result<Content> {
    let meta = match fs::metadata(&carried.from) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Content::Absent),
        Err(e) => return Err(e).with_context(|| format!("{}", carried.from.display())),
    };
    if carried.dir && meta.is_dir() {
        let mut files = Vec::new();
        for entry in fs::read_dir(&carried.from)? {
            let entry = entry?;
            if !fs::metadata(entry.path()).is_ok_and(|m| m.is_file()) {
                continue;
            }
            if files.len() == CARRY_FILES {
                bail!(
                    "{} holds more than {CARRY_FILES} files",
                    carried.from.display()
                );
            }
            files.push((entry.file_name(), read_operator_file(&entry.path())?));
        }
        return Ok(Content::Dir(files));
    }
    if !carried.dir && meta.is_file() {
        return Ok(Content::File(read_operator_file(&carried.from)?));
    }
    bail!(
        "{} is not a {}",
        carried.from.display(),
        if carried.dir {
            "directory"
        } else {
            "regular file"
        }
    )
}

/// Puts one carried place in the state as the operator has it: copied afresh, or removed.
fn store(
    root: &OwnedFd,
    root_path: &Path,
    carried: &Carried,
    content: Content,
) -> anyhow::Result<()> {
    let parent = make_below(
        root,
        root_path,
        crate::private_file::parent_dir(&carried.to),
    )?;
    let name = carried
        .to
        .file_name()
        .with_context(|| format!("{} has no name", carried.to.display()))?;
    match content {
        Content::File(bytes) => replace(&parent, name, &bytes),
        Content::Dir(files) => {
            remove(&parent, name, 0)?;
            nix::sys::stat::mkdirat(
                Some(parent.as_raw_fd()),
                name,
                Mode::from_bits_truncate(0o700),
            )?;
            let dir = open_dir(Some(&parent), name)?;
            for (file, bytes) in files {
                replace(&dir, &file, &bytes)?;
            }
            Ok(())
        }
        Content::Absent => remove(&parent, name, 0),
    }
}

/// Reads an operator's file (links followed: they are the operator's own), at most
/// [`CARRY_LIMIT`] bytes; a FIFO or device is refused without blocking.
pub fn read_operator_file(path: &Path) -> anyhow::Result<Vec<u8>> {
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    if !file.metadata()?.is_file() {
        bail!("{} is not a regular file", path.display());
    }
    let mut bytes = Vec::new();
    file.take(CARRY_LIMIT + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > CARRY_LIMIT {
        bail!("{} is larger than {CARRY_LIMIT} bytes", path.display());
    }
    Ok(bytes)
}

/// Puts `bytes` at `name` in `dir` (0600) by a rename: what an earlier job left under the name
/// (a link, a file with other hard links, a directory) is replaced, never written through.
fn replace(dir: &OwnedFd, name: &OsStr, bytes: &[u8]) -> anyhow::Result<()> {
    if is_dir_at(dir, name) {
        remove(dir, name, 0)?;
    }
    let temporary = format!(".moot-carry-{}", crate::session::random_hex::<8>()?);
    let flags =
        OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let raw = nix::fcntl::openat(
        Some(dir.as_raw_fd()),
        temporary.as_str(),
        flags,
        Mode::from_bits_truncate(0o600),
    )?;
    // SAFETY: openat just returned this descriptor, and nothing else owns it.
    let mut file = fs::File::from(unsafe { OwnedFd::from_raw_fd(raw) });
    let written = file
        .write_all(bytes)
        .and_then(|()| file.set_permissions(fs::Permissions::from_mode(0o600)))
        .map_err(anyhow::Error::from)
        .and_then(|()| {
            nix::fcntl::renameat(
                Some(dir.as_raw_fd()),
                temporary.as_str(),
                Some(dir.as_raw_fd()),
                name,
            )
            .map_err(anyhow::Error::from)
        });
    if written.is_err() {
        let _ = unlinkat(
            Some(dir.as_raw_fd()),
            temporary.as_str(),
            UnlinkatFlags::NoRemoveDir,
        );
    }
    written
}

fn is_dir_at(dir: &OwnedFd, name: &OsStr) -> bool {
    nix::sys::stat::fstatat(Some(dir.as_raw_fd()), name, AtFlags::AT_SYMLINK_NOFOLLOW)
        .is_ok_and(|meta| meta.st_mode & nix::libc::S_IFMT == nix::libc::S_IFDIR)
}

/// How deep a tree below the state may be removed (an earlier job's: deeper is refused).
const REMOVE_DEPTH: usize = 64;

/// Removes `name` in `dir` and all below it, descending by descriptors; absent is removed.
fn remove(dir: &OwnedFd, name: &OsStr, depth: usize) -> anyhow::Result<()> {
    if depth > REMOVE_DEPTH {
        bail!("a tree deeper than {REMOVE_DEPTH} levels: remove the state");
    }
    // A name swapped between the look and the removal is looked at again, a few times.
    for _ in 0..4 {
        let removed = if is_dir_at(dir, name) {
            match open_dir(Some(dir), name) {
                Ok(inner) => {
                    empty(&inner, depth)?;
                    unlinkat(Some(dir.as_raw_fd()), name, UnlinkatFlags::RemoveDir)
                }
                Err(e) => Err(e),
            }
        } else {
            unlinkat(Some(dir.as_raw_fd()), name, UnlinkatFlags::NoRemoveDir)
        };
        match removed {
            Ok(()) | Err(Errno::ENOENT) => return Ok(()),
            Err(Errno::ELOOP | Errno::ENOTDIR | Errno::EISDIR | Errno::ENOTEMPTY) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    bail!(
        "{} keeps changing: remove the state",
        Path::new(name).display()
    )
}

/// Removes everything in the directory `dir` (made writable by its owner first).
fn empty(dir: &OwnedFd, depth: usize) -> anyhow::Result<()> {
    let _ = nix::sys::stat::fchmod(dir.as_raw_fd(), Mode::from_bits_truncate(0o700));
    let listed = nix::dir::Dir::openat(
        Some(dir.as_raw_fd()),
        ".",
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )?;
    let mut listed = listed;
    let names: Vec<std::ffi::OsString> = listed
        .iter()
        .filter_map(Result::ok)
        .map(|entry| OsStr::from_bytes(entry.file_name().to_bytes()).to_os_string())
        .filter(|name| name != "." && name != "..")
        .collect();
    for name in &names {
        remove(dir, name, depth + 1)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(dir: &Path, carried: Vec<Carried>) -> PrivateState {
        PrivateState {
            proxy: None,
            dir: dir.to_path_buf(),
            home: dir.join("home"),
            dirs: vec![dir.join("home/.cli/tmp")],
            carried,
            unset: vec![],
        }
    }

    fn carried(from: &Path, to: &Path, dir: bool) -> Carried {
        Carried {
            kept_out: false,
            from: from.to_path_buf(),
            to: to.to_path_buf(),
            dir,
            why: "test".into(),
        }
    }

    #[test]
    fn the_operators_files_are_copied_in_and_follow_the_operator() {
        let operator = tempfile::tempdir().unwrap();
        let seat = tempfile::tempdir().unwrap();
        let dir = seat.path().join("state");
        fs::write(operator.path().join("config.toml"), "a = 1\n").unwrap();
        fs::create_dir(operator.path().join("credentials")).unwrap();
        fs::write(operator.path().join("credentials/k.json"), "{}").unwrap();
        let to = dir.join("home/.cli/config.toml");
        let plan = state(
            &dir,
            vec![
                carried(&operator.path().join("config.toml"), &to, false),
                carried(
                    &operator.path().join("credentials"),
                    &dir.join("home/.cli/credentials"),
                    true,
                ),
            ],
        );
        plan.prepare(None).unwrap();
        assert_eq!(fs::read_to_string(&to).unwrap(), "a = 1\n");
        assert_eq!(moot_testkit::fs::mode(&to), 0o600);
        assert_eq!(moot_testkit::fs::mode(&dir), 0o700);
        assert!(dir.join("home/.cli/tmp").is_dir());
        assert!(dir.join("home/.cli/credentials/k.json").is_file());

        // The job changes its copy; the next job gets the operator's again. The operator
        // removes a file; the copy goes too.
        fs::write(&to, "a = 2\n").unwrap();
        fs::write(dir.join("home/.cli/credentials/planted.json"), "{}").unwrap();
        fs::remove_file(operator.path().join("credentials/k.json")).unwrap();
        plan.prepare(None).unwrap();
        assert_eq!(fs::read_to_string(&to).unwrap(), "a = 1\n");
        assert_eq!(
            fs::read_dir(dir.join("home/.cli/credentials"))
                .unwrap()
                .count(),
            0
        );
        fs::remove_file(operator.path().join("config.toml")).unwrap();
        plan.prepare(None).unwrap();
        assert!(!to.exists());
    }

    #[test]
    fn links_an_earlier_job_planted_are_replaced_or_refused_never_followed() {
        let operator = tempfile::tempdir().unwrap();
        let victim = tempfile::tempdir().unwrap();
        let seat = tempfile::tempdir().unwrap();
        let dir = seat.path().join("state");
        fs::write(operator.path().join("config.toml"), "mine\n").unwrap();
        let victim_file = victim.path().join("authorized_keys");
        fs::write(&victim_file, "precious\n").unwrap();
        let to = dir.join("home/.cli/config.toml");
        let plan = state(
            &dir,
            vec![carried(&operator.path().join("config.toml"), &to, false)],
        );
        plan.prepare(None).unwrap();

        // A link in place of the carried file: replaced, the target untouched.
        fs::remove_file(&to).unwrap();
        std::os::unix::fs::symlink(&victim_file, &to).unwrap();
        plan.prepare(None).unwrap();
        assert_eq!(fs::read_to_string(&victim_file).unwrap(), "precious\n");
        assert!(!fs::symlink_metadata(&to).unwrap().is_symlink());

        // A link in place of a directory: refused, nothing written where it points.
        fs::remove_dir_all(dir.join("home/.cli")).unwrap();
        std::os::unix::fs::symlink(victim.path(), dir.join("home/.cli")).unwrap();
        let error = format!("{:#}", plan.prepare(None).unwrap_err());
        assert!(error.contains("is a link or a file"), "{error}");
        assert_eq!(fs::read_dir(victim.path()).unwrap().count(), 1);

        // The state itself a link, or open to others: refused.
        let linked = seat.path().join("linked");
        std::os::unix::fs::symlink(victim.path(), &linked).unwrap();
        assert!(state(&linked, vec![]).prepare(None).is_err());
        let open = seat.path().join("open");
        fs::create_dir(&open).unwrap();
        fs::set_permissions(&open, fs::Permissions::from_mode(0o777)).unwrap();
        let error = format!("{:#}", state(&open, vec![]).prepare(None).unwrap_err());
        assert!(error.contains("writable by others"), "{error}");
    }

    /// Another job of the session swaps directories of the state for links to a victim while
    /// this one prepares it (an atomic exchange, as a process in a seat can): the preparation
    /// may fail, but it never writes, moves or removes anything of the victim's.
    #[test]
    fn a_concurrent_job_swapping_links_in_never_steers_the_preparation_outside() {
        use nix::fcntl::{renameat2, RenameFlags};
        use std::sync::atomic::{AtomicBool, Ordering};
        let operator = tempfile::tempdir().unwrap();
        let victim = tempfile::tempdir().unwrap();
        let seat = tempfile::tempdir().unwrap();
        let dir = seat.path().join("state");
        fs::write(operator.path().join("config.toml"), "mine\n").unwrap();
        fs::create_dir(victim.path().join("keep")).unwrap();
        fs::write(victim.path().join("keep/id_ed25519"), "precious\n").unwrap();
        fs::write(victim.path().join("settings.json"), "victim's\n").unwrap();
        let plan = state(
            &dir,
            vec![
                carried(
                    &operator.path().join("config.toml"),
                    &dir.join("home/.cli/config.toml"),
                    false,
                ),
                // The operator has none: the preparation removes the copy, a directory here.
                carried(
                    &operator.path().join("settings.json"),
                    &dir.join("home/.cli/settings.json"),
                    false,
                ),
            ],
        );
        plan.prepare(None).unwrap();
        let cli = dir.join("home/.cli");
        let stop = AtomicBool::new(false);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                let swap = |a: &Path, b: &Path| {
                    let _ = renameat2(None, a, None, b, RenameFlags::RENAME_EXCHANGE);
                };
                let _ = std::os::unix::fs::symlink(victim.path(), dir.join("home/.cli-link"));
                while !stop.load(Ordering::Relaxed) {
                    let _ = fs::create_dir_all(cli.join("settings.json/keep"));
                    let _ = std::os::unix::fs::symlink(victim.path(), cli.join("link"));
                    swap(&cli.join("settings.json/keep"), &cli.join("link"));
                    swap(&cli, &dir.join("home/.cli-link"));
                    swap(&cli, &dir.join("home/.cli-link"));
                }
            });
            for _ in 0..2000 {
                let _ = plan.prepare(None);
            }
            stop.store(true, Ordering::Relaxed);
        });
        let mut left: Vec<String> = fs::read_dir(victim.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["keep", "settings.json"]);
        assert_eq!(
            fs::read_to_string(victim.path().join("keep/id_ed25519")).unwrap(),
            "precious\n"
        );
        assert_eq!(
            fs::read_to_string(victim.path().join("settings.json")).unwrap(),
            "victim's\n"
        );
        assert_eq!(fs::read_dir(victim.path().join("keep")).unwrap().count(), 1);
    }
}
