//! The git working tree a job runs in, found from its working directory.
//!
//! moot-render needs two facts about it: where it ends (a staged prompt must never land inside
//! it, where an implement job's `git add` could pick it up), and, for a linked worktree, where its
//! own git directory lives (a sandboxed runtime needs that directory writable to refresh the
//! index). Both are read from the `.git` entry alone, as git itself does; git is never run.

use std::fs;
use std::path::{Path, PathBuf};

/// A git working tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Worktree {
    /// The directory holding the `.git` entry.
    pub root: PathBuf,
    pub kind: Kind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// `.git` is a directory: a primary checkout.
    Primary,
    /// `.git` is a file naming the worktree's own git directory (`<main>/.git/worktrees/<name>`),
    /// resolved against the root when relative.
    Linked { git_dir: PathBuf },
    /// `.git` is a file without a readable `gitdir:` line.
    Unreadable { why: String },
}

/// The working tree containing `dir`: the nearest ancestor (or `dir` itself) with a `.git`
/// entry, or `None` outside any working tree.
pub fn find(dir: &Path) -> Option<Worktree> {
    dir.ancestors().find_map(|candidate| {
        let dot_git = candidate.join(".git");
        let meta = fs::symlink_metadata(&dot_git).ok()?;
        let kind = if meta.is_dir() {
            Kind::Primary
        } else {
            linked_kind(candidate, &dot_git)
        };
        Some(Worktree {
            root: candidate.to_path_buf(),
            kind,
        })
    })
}

fn linked_kind(root: &Path, dot_git: &Path) -> Kind {
    let text = match fs::read_to_string(dot_git) {
        Ok(text) => text,
        Err(e) => return Kind::Unreadable { why: e.to_string() },
    };
    let Some(target) = text
        .lines()
        .find_map(|line| line.strip_prefix("gitdir:"))
        .map(str::trim)
        .filter(|t| !t.is_empty())
    else {
        return Kind::Unreadable {
            why: "it has no gitdir: line".into(),
        };
    };
    Kind::Linked {
        git_dir: root.join(target),
    }
}

/// `path` with symbolic links resolved, also when it does not exist yet: the nearest existing
/// ancestor is resolved and the missing components are appended. Containment is decided on these
/// resolved paths, so a symlink cannot smuggle a staged prompt into the worktree.
pub fn resolve(path: &Path) -> PathBuf {
    let mut missing = Vec::new();
    let mut existing = path;
    loop {
        if let Ok(real) = fs::canonicalize(existing) {
            return missing.iter().rev().fold(real, |acc, part| acc.join(part));
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                missing.push(name.to_os_string());
                existing = parent;
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// Whether `inner` is `outer` or below it, comparing resolved paths.
pub fn contains(outer: &Path, inner: &Path) -> bool {
    resolve(inner).starts_with(resolve(outer))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_a_primary_checkout_from_a_subdirectory() {
        let tmp = tempfile::tempdir().unwrap();
        fs::create_dir(tmp.path().join(".git")).unwrap();
        fs::create_dir_all(tmp.path().join("src/deep")).unwrap();
        let found = find(&tmp.path().join("src/deep")).unwrap();
        assert_eq!(found.root, tmp.path());
        assert_eq!(found.kind, Kind::Primary);
    }

    #[test]
    fn reads_a_linked_worktree_git_dir_relative_or_absolute() {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(
            tmp.path().join(".git"),
            "gitdir: ../main/.git/worktrees/wt\n",
        )
        .unwrap();
        let found = find(tmp.path()).unwrap();
        assert_eq!(
            found.kind,
            Kind::Linked {
                git_dir: tmp.path().join("../main/.git/worktrees/wt")
            }
        );
        fs::write(
            tmp.path().join(".git"),
            "gitdir: /srv/main/.git/worktrees/wt",
        )
        .unwrap();
        assert_eq!(
            find(tmp.path()).unwrap().kind,
            Kind::Linked {
                git_dir: PathBuf::from("/srv/main/.git/worktrees/wt")
            }
        );
    }

    #[test]
    fn a_git_file_without_gitdir_is_unreadable_not_linked() {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(tmp.path().join(".git"), "nonsense\n").unwrap();
        assert!(matches!(
            find(tmp.path()).unwrap().kind,
            Kind::Unreadable { .. }
        ));
    }

    #[test]
    fn outside_any_worktree() {
        let tmp = tempfile::tempdir().unwrap();
        // A temp dir could sit inside a checkout on an odd machine; only assert on our own tree.
        if let Some(found) = find(tmp.path()) {
            assert!(!found.root.starts_with(tmp.path()));
        }
    }

    #[test]
    fn containment_resolves_symlinks_and_missing_tails() {
        let tmp = tempfile::tempdir().unwrap();
        let tree = tmp.path().join("tree");
        fs::create_dir(&tree).unwrap();
        std::os::unix::fs::symlink(&tree, tmp.path().join("alias")).unwrap();
        assert!(contains(&tree, &tmp.path().join("alias/not/yet")));
        assert!(contains(&tree, &tree));
        assert!(!contains(&tree, &tmp.path().join("treehouse")));
        assert!(!contains(&tree, tmp.path()));
    }
}
