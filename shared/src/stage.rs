//! Prompt staging: when a prompt leaves argv, and where it goes instead.
//!
//! Linux caps one argument at MAX_ARG_STRLEN (128 KiB), and any process may read another's
//! argv, so a prompt of [`STAGE_THRESHOLD`] bytes or more never goes on argv. It is written to
//! `prompt.md` (mode 0600) in a directory of its own (mode 0700), never inside the job's git
//! worktree or a writable grant, where an implement job's `git add` could pick it up. How the
//! runtime then receives it is declared by the runtime ([`Oversize`]); this module decides the
//! route, checks the directory and writes the file, the same way for every runtime.

use std::fs::{self, DirBuilder, OpenOptions, Permissions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

use anyhow::Context;

use crate::cleanup;
use crate::model::{Oversize, PromptRules, Refusal};
use crate::worktree;

/// At this many bytes or more a prompt is staged, never put on argv.
pub const STAGE_THRESHOLD: usize = 102_400;

/// The most moot-render reads from `--prompt-file` or stdin, for runtimes without a ceiling of
/// their own: past this the prompt is refused rather than held in memory.
pub const MAX_PROMPT_BYTES: usize = 64 * 1024 * 1024;

/// The staged prompt's file name.
pub const PROMPT_FILE: &str = "prompt.md";

/// Prefix of the fresh staging directories made under `$TMPDIR`.
pub const FRESH_DIR_PREFIX: &str = "moot-stage-";

/// How the prompt travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// Verbatim, as one argv token.
    Inline,
    /// Staged; the runtime attaches the file and the token points at it.
    Attach,
    /// Staged; the runtime is granted the directory and the token says to read the file.
    Instruct,
}

/// Decides the route of `prompt` for a runtime; refuses what the runtime cannot take.
pub fn route(runtime: &str, prompt: &str, rules: &PromptRules) -> Result<Route, Refusal> {
    if rules.reserved.contains(&prompt) {
        return Err(Refusal::new(
            "prompt",
            format!("{runtime} gives the prompt {prompt:?} a meaning of its own (it reads stdin); reword it"),
        ));
    }
    let oversize = prompt.len() >= STAGE_THRESHOLD;
    let misread = prompt.starts_with(rules.unsafe_leading);
    if !oversize && !misread {
        return Ok(Route::Inline);
    }
    match rules.oversize {
        Oversize::Attach { ceiling: Some(ceiling) } if prompt.len() > ceiling => Err(Refusal::new(
            "prompt",
            format!(
                "{} bytes is above {runtime}'s {ceiling}-byte @file attachment ceiling, where {runtime} \
                 would answer a placeholder instead of the task; shorten the prompt",
                prompt.len()
            ),
        )),
        Oversize::Refuse if oversize => Err(Refusal::new(
            "prompt",
            format!(
                "{} bytes: {runtime} takes the prompt only as one argument, and prompts of \
                 {STAGE_THRESHOLD} bytes or more never go on argv; shorten it, or use a runtime \
                 that stages large prompts (moot-render --list shows each one's oversize rule)",
                prompt.len()
            ),
        )),
        Oversize::Refuse => Err(Refusal::new(
            "prompt",
            format!(
                "{runtime} would read a prompt starting with {:?} as an option or a file; reword it",
                prompt.chars().next().unwrap_or_default()
            ),
        )),
        Oversize::Attach { .. } => Ok(Route::Attach),
        Oversize::Instruct => Ok(Route::Instruct),
    }
}

/// Where a staged prompt will be written: checked, not yet created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StagePlan {
    pub dir: PathBuf,
    pub file: PathBuf,
    /// moot-render creates the directory (and removes it again if writing fails).
    pub create_dir: bool,
    /// The user and group the directory and prompt are given to once written (`--stage-user`).
    pub reader: Option<(u32, u32)>,
}

impl StagePlan {
    /// Gives the prompt to `user` (`USER[:GROUP]`) once it is written: only in a directory
    /// moot-render makes, so no directory of the caller's changes mode.
    pub fn give_to(&mut self, user: &str) -> Result<(), Refusal> {
        let identity = crate::privilege::Identity::parse(user)
            .map_err(|e| Refusal::new("--stage-user", format!("{e:#}")).value(user))?;
        if !self.create_dir {
            return Err(Refusal::new(
                "--stage-user",
                format!(
                    "gives away only a directory moot-render makes, and {} exists: name a new \
                     one with --stage-dir",
                    self.dir.display()
                ),
            )
            .value(user));
        }
        self.reader = Some((identity.uid.as_raw(), identity.gid.as_raw()));
        Ok(())
    }
}

/// The facts a staging location is checked against.
#[derive(Debug, Clone)]
pub struct Protected<'a> {
    /// The git worktree the job runs in, when there is one.
    pub worktree: Option<&'a Path>,
    /// The runtime's writable grants.
    pub writable: &'a [String],
    /// Who must own the directory.
    pub euid: u32,
}

/// Plans the staging location: `--stage-dir` when given, else a fresh directory under the
/// temporary directory `tmpdir` named with `fresh_suffix`.
pub fn plan(
    stage_dir: Option<&str>,
    tmpdir: &str,
    fresh_suffix: &str,
    protected: &Protected,
) -> Result<StagePlan, Refusal> {
    let (input, plan) = match stage_dir {
        Some(dir) => ("--stage-dir", given_dir(dir, protected.euid)?),
        None => ("TMPDIR", fresh_dir(tmpdir, fresh_suffix)?),
    };
    let shown = match stage_dir {
        Some(dir) => dir,
        None => tmpdir,
    };
    if let Some(tree) = protected.worktree {
        if worktree::contains(tree, &plan.dir) {
            return Err(Refusal::new(
                input,
                format!(
                    "inside the job's git worktree {}, where an implement job's git add could pick \
                     the prompt up; stage it outside (e.g. --stage-dir \"$(mktemp -d)\")",
                    tree.display()
                ),
            )
            .value(shown));
        }
    }
    if let Some(grant) = protected
        .writable
        .iter()
        .find(|grant| worktree::contains(Path::new(grant), &plan.dir))
    {
        return Err(Refusal::new(
            input,
            format!(
                "inside the writable grant {grant}, where the agent could change or commit the \
                 prompt; stage it outside"
            ),
        )
        .value(shown));
    }
    Ok(plan)
}

fn absolute_normal(input: &str, dir: &str) -> Result<PathBuf, Refusal> {
    let path = PathBuf::from(dir);
    if !path.is_absolute() {
        return Err(Refusal::new(input, "must be an absolute path").value(dir));
    }
    if path.components().any(|c| c == Component::ParentDir) {
        return Err(Refusal::new(input, "must not contain '..'").value(dir));
    }
    Ok(path)
}

fn given_dir(dir: &str, euid: u32) -> Result<StagePlan, Refusal> {
    let path = absolute_normal("--stage-dir", dir)?;
    let file = path.join(PROMPT_FILE);
    let refuse = |why: String| Err(Refusal::new("--stage-dir", why).value(dir));
    match fs::symlink_metadata(&path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let parent_is_dir = path.parent().is_some_and(Path::is_dir);
            if !parent_is_dir {
                return refuse("its parent directory does not exist; create it first".into());
            }
            Ok(StagePlan {
                dir: path,
                file,
                create_dir: true,
                reader: None,
            })
        }
        Err(e) => refuse(format!("cannot inspect it: {e}")),
        Ok(meta) if meta.file_type().is_symlink() => {
            refuse("is a symbolic link; give the directory itself".into())
        }
        Ok(meta) if !meta.is_dir() => refuse("is not a directory".into()),
        Ok(meta) if meta.uid() != euid => refuse(format!(
            "is owned by uid {}, not by you (uid {euid}); use a directory of your own",
            meta.uid()
        )),
        Ok(meta) if meta.mode() & 0o077 != 0 => refuse(format!(
            "has mode {:04o}, which lets other users reach the prompt; chmod 700 it or use a fresh \
             directory",
            meta.mode() & 0o7777
        )),
        Ok(_) if fs::symlink_metadata(&file).is_ok() => {
            refuse("already holds prompt.md; use a fresh directory for each job".into())
        }
        Ok(_) => Ok(StagePlan {
            dir: path,
            file,
            create_dir: false,
            reader: None,
        }),
    }
}

fn fresh_dir(tmpdir: &str, suffix: &str) -> Result<StagePlan, Refusal> {
    let base = absolute_normal("TMPDIR", tmpdir)?;
    if !base.is_dir() {
        return Err(Refusal::new("TMPDIR", "is not a directory").value(tmpdir));
    }
    let dir = base.join(format!("{FRESH_DIR_PREFIX}{suffix}"));
    Ok(StagePlan {
        file: dir.join(PROMPT_FILE),
        dir,
        create_dir: true,
        reader: None,
    })
}

/// Writes the prompt: the directory (0700) when it is new, then `prompt.md` (0600), created
/// exclusively so an existing file or symlink is never followed or overwritten. On failure what
/// this call created is removed again, and nothing else.
pub fn write(plan: &StagePlan, prompt: &[u8]) -> anyhow::Result<()> {
    if plan.create_dir {
        DirBuilder::new()
            .mode(0o700)
            .create(&plan.dir)
            .with_context(|| format!("stage dir ({}): cannot create it", plan.dir.display()))?;
    }
    let written = write_file(plan, prompt)
        .and_then(|()| mark_removable(plan))
        .and_then(|()| give_away(plan));
    if written.is_err() && plan.create_dir {
        let _ = fs::remove_dir_all(&plan.dir);
    }
    written
}

/// Marks a directory moot-render created as moot's scratch, so `--cleanup` may remove it
/// (src/cleanup.rs); a directory the caller made is never marked.
fn mark_removable(plan: &StagePlan) -> anyhow::Result<()> {
    if !plan.create_dir {
        return Ok(());
    }
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(plan.dir.join(cleanup::MARKER))
        .and_then(|file| file.set_permissions(Permissions::from_mode(0o600)))
        .with_context(|| {
            format!(
                "stage dir ({}): cannot write {}",
                plan.dir.display(),
                cleanup::MARKER
            )
        })?;
    Ok(())
}

/// Gives the written prompt to the plan's reader, if any: the file becomes that user's (0600),
/// and the directory, still the caller's, the reader's group's to enter and list (0750) but not
/// to write, so the reader can neither rename the prompt nor plant anything beside it, and
/// `--cleanup` still removes it. Listing matters: kimi-cli refuses an `--add-dir` it cannot
/// read (exit 2).
fn give_away(plan: &StagePlan) -> anyhow::Result<()> {
    let Some((uid, gid)) = plan.reader else {
        return Ok(());
    };
    let context = || {
        format!(
            "--stage-user: cannot give {} to uid {uid} (moot-render must run as root)",
            plan.file.display()
        )
    };
    std::os::unix::fs::lchown(&plan.file, Some(uid), Some(gid)).with_context(context)?;
    std::os::unix::fs::lchown(&plan.dir, None, Some(gid)).with_context(context)?;
    fs::set_permissions(&plan.dir, Permissions::from_mode(0o750)).with_context(context)?;
    Ok(())
}

/// Removes a written prompt: the file, and the directory when moot-render made it.
pub fn remove(plan: &StagePlan) {
    if plan.create_dir {
        let _ = fs::remove_dir_all(&plan.dir);
    } else {
        let _ = fs::remove_file(&plan.file);
    }
}

fn write_file(plan: &StagePlan, prompt: &[u8]) -> anyhow::Result<()> {
    let context = || {
        format!(
            "stage dir ({}): cannot write {PROMPT_FILE}",
            plan.dir.display()
        )
    };
    // Modes are set explicitly: the umask could otherwise leave the directory unwritable or the
    // file unreadable to its owner.
    fs::set_permissions(&plan.dir, Permissions::from_mode(0o700)).with_context(context)?;
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&plan.file)
        .with_context(context)?;
    let written = file
        .set_permissions(Permissions::from_mode(0o600))
        .and_then(|()| file.write_all(prompt));
    if written.is_err() {
        let _ = fs::remove_file(&plan.file);
    }
    written.with_context(context)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    const VERBATIM_ATTACH: PromptRules = PromptRules::verbatim(Oversize::Attach {
        ceiling: Some(5_242_880),
    });

    fn sized(n: usize) -> String {
        "x".repeat(n)
    }

    #[test]
    fn the_threshold_is_inclusive() {
        assert_eq!(
            route("omp", &sized(102_399), &VERBATIM_ATTACH),
            Ok(Route::Inline)
        );
        assert_eq!(
            route("omp", &sized(102_400), &VERBATIM_ATTACH),
            Ok(Route::Attach)
        );
    }

    #[test]
    fn the_ceiling_is_inclusive() {
        assert!(route("omp", &sized(5_242_880), &VERBATIM_ATTACH).is_ok());
        let refusal = route("omp", &sized(5_242_881), &VERBATIM_ATTACH).unwrap_err();
        assert_eq!(
            refusal.to_string(),
            "prompt: 5242881 bytes is above omp's 5242880-byte @file attachment ceiling, where omp \
             would answer a placeholder instead of the task; shorten the prompt"
        );
    }

    #[test]
    fn refusing_runtimes_refuse_only_oversize_prompts() {
        let rules = PromptRules::verbatim(Oversize::Refuse);
        assert_eq!(route("claude", "-p @x", &rules), Ok(Route::Inline));
        let refusal = route("claude", &sized(102_400), &rules).unwrap_err();
        assert!(refusal
            .to_string()
            .starts_with("prompt: 102400 bytes: claude takes"));
    }

    #[test]
    fn misread_prefixes_take_the_oversize_route() {
        let rules = PromptRules {
            oversize: Oversize::Attach { ceiling: None },
            unsafe_leading: &['-', '@'],
            reserved: &[],
        };
        assert_eq!(route("pi", "review", &rules), Ok(Route::Inline));
        assert_eq!(route("pi", "-x", &rules), Ok(Route::Attach));
        assert_eq!(route("pi", "@x", &rules), Ok(Route::Attach));
        assert_eq!(route("pi", &sized(60_000_000), &rules), Ok(Route::Attach));
    }

    #[test]
    fn a_misread_prefix_without_a_staging_route_is_refused() {
        let rules = PromptRules {
            oversize: Oversize::Refuse,
            unsafe_leading: &['-'],
            reserved: &[],
        };
        assert_eq!(
            route("x", "-v", &rules).unwrap_err().to_string(),
            "prompt: x would read a prompt starting with '-' as an option or a file; reword it"
        );
        let instruct = PromptRules::verbatim(Oversize::Instruct);
        assert_eq!(
            route("kimi", &sized(102_400), &instruct),
            Ok(Route::Instruct)
        );
    }

    #[test]
    fn reserved_prompts_are_refused() {
        let rules = PromptRules {
            oversize: Oversize::Refuse,
            unsafe_leading: &[],
            reserved: &["-"],
        };
        assert_eq!(
            route("codex", "-", &rules).unwrap_err().to_string(),
            "prompt: codex gives the prompt \"-\" a meaning of its own (it reads stdin); reword it"
        );
        assert_eq!(route("codex", "- x", &rules), Ok(Route::Inline));
    }

    fn protected(euid: u32) -> Protected<'static> {
        Protected {
            worktree: None,
            writable: &[],
            euid,
        }
    }

    #[test]
    fn a_fresh_dir_goes_under_tmpdir() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().to_str().unwrap();
        let plan = plan(None, base, "0123abcd", &protected(0)).unwrap();
        assert_eq!(plan.dir, tmp.path().join("moot-stage-0123abcd"));
        assert_eq!(plan.file, tmp.path().join("moot-stage-0123abcd/prompt.md"));
        assert!(plan.create_dir);
        assert_eq!(
            super::plan(None, "tmp", "x", &protected(0))
                .unwrap_err()
                .to_string(),
            "TMPDIR (tmp): must be an absolute path"
        );
    }

    #[test]
    fn a_given_dir_must_be_private_and_owned_and_empty_of_prompts() {
        let tmp = tempfile::tempdir().unwrap();
        let euid = nix::unistd::geteuid().as_raw();
        let dir = tmp.path().join("stage");
        let dir_s = dir.to_str().unwrap();
        let planned = plan(Some(dir_s), "/tmp", "x", &protected(euid)).unwrap();
        assert!(planned.create_dir);

        fs::create_dir(&dir).unwrap();
        fs::set_permissions(&dir, Permissions::from_mode(0o750)).unwrap();
        assert_eq!(
            plan(Some(dir_s), "/tmp", "x", &protected(euid))
                .unwrap_err()
                .to_string(),
            format!(
                "--stage-dir ({dir_s}): has mode 0750, which lets other users reach the prompt; \
                 chmod 700 it or use a fresh directory"
            )
        );
        fs::set_permissions(&dir, Permissions::from_mode(0o700)).unwrap();
        assert!(
            !plan(Some(dir_s), "/tmp", "x", &protected(euid))
                .unwrap()
                .create_dir
        );
        assert_eq!(
            plan(Some(dir_s), "/tmp", "x", &protected(euid + 1))
                .unwrap_err()
                .to_string(),
            format!(
                "--stage-dir ({dir_s}): is owned by uid {euid}, not by you (uid {}); use a \
                 directory of your own",
                euid + 1
            )
        );
        fs::write(dir.join("prompt.md"), "old").unwrap();
        assert!(plan(Some(dir_s), "/tmp", "x", &protected(euid))
            .unwrap_err()
            .to_string()
            .ends_with("already holds prompt.md; use a fresh directory for each job"));

        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        assert!(
            plan(Some(link.to_str().unwrap()), "/tmp", "x", &protected(euid))
                .unwrap_err()
                .to_string()
                .ends_with("is a symbolic link; give the directory itself")
        );
        let orphan = tmp.path().join("no/such");
        assert!(plan(
            Some(orphan.to_str().unwrap()),
            "/tmp",
            "x",
            &protected(euid)
        )
        .unwrap_err()
        .to_string()
        .ends_with("its parent directory does not exist; create it first"));
        assert_eq!(
            plan(Some("/a/../b"), "/tmp", "x", &protected(euid))
                .unwrap_err()
                .to_string(),
            "--stage-dir (/a/../b): must not contain '..'"
        );
    }

    #[test]
    fn never_inside_the_worktree_or_a_writable_grant() {
        let tmp = tempfile::tempdir().unwrap();
        let tree = tmp.path().join("tree");
        fs::create_dir(&tree).unwrap();
        let inside = tree.join("stage");
        let guard = Protected {
            worktree: Some(&tree),
            writable: &[],
            euid: 0,
        };
        let refusal = plan(Some(inside.to_str().unwrap()), "/tmp", "x", &guard).unwrap_err();
        assert!(refusal
            .to_string()
            .contains("inside the job's git worktree"));
        let refusal = plan(None, tree.to_str().unwrap(), "x", &guard).unwrap_err();
        assert!(refusal.to_string().starts_with("TMPDIR ("));

        let grants = [tmp.path().to_str().unwrap().to_string()];
        let guard = Protected {
            worktree: None,
            writable: &grants,
            euid: 0,
        };
        let refusal = plan(Some(inside.to_str().unwrap()), "/tmp", "x", &guard).unwrap_err();
        assert!(refusal.to_string().contains("inside the writable grant"));
    }

    #[test]
    fn writes_private_files_and_never_overwrites() {
        let tmp = tempfile::tempdir().unwrap();
        let planned = plan(None, tmp.path().to_str().unwrap(), "t", &protected(0)).unwrap();
        write(&planned, b"the task\n").unwrap();
        let dir_mode = fs::metadata(&planned.dir).unwrap().permissions().mode() & 0o7777;
        let file_mode = fs::metadata(&planned.file).unwrap().permissions().mode() & 0o7777;
        assert_eq!((dir_mode, file_mode), (0o700, 0o600));
        assert_eq!(fs::read(&planned.file).unwrap(), b"the task\n");

        let again = StagePlan {
            create_dir: false,
            ..planned.clone()
        };
        assert!(write(&again, b"other").is_err());
        assert_eq!(fs::read(&planned.file).unwrap(), b"the task\n");
    }

    #[test]
    fn removing_takes_only_what_was_made() {
        let tmp = tempfile::tempdir().unwrap();
        let made = plan(None, tmp.path().to_str().unwrap(), "m", &protected(0)).unwrap();
        write(&made, b"x").unwrap();
        remove(&made);
        assert!(!made.dir.exists());
        let kept = StagePlan {
            dir: tmp.path().to_path_buf(),
            file: tmp.path().join(PROMPT_FILE),
            create_dir: false,
            reader: None,
        };
        write(&kept, b"x").unwrap();
        remove(&kept);
        assert!(tmp.path().is_dir() && !kept.file.exists());
    }

    #[test]
    fn a_failed_write_leaves_nothing_behind() {
        let tmp = tempfile::tempdir().unwrap();
        let planned = StagePlan {
            dir: tmp.path().join("d"),
            file: tmp.path().join("d/missing/prompt.md"),
            create_dir: true,
            reader: None,
        };
        assert!(write(&planned, b"x").is_err());
        assert!(!planned.dir.exists());
    }
}
