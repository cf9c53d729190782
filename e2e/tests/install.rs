//! `make install` into a scratch DESTDIR, from the tools this workspace built (RELEASE pointed
//! at them, so nothing is rebuilt): what it puts where, and that what it installed works from
//! there: an installed adapter finds its lib.sh and the installed tools, and every completion
//! script is one its shell accepts.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

use moot_e2e::{root, tool_dir, tools};

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `make install` with PREFIX=/usr under `dest`.
fn make_install(dest: &Path) -> Output {
    Command::new("make")
        .current_dir(root())
        .arg("install")
        .arg(format!("RELEASE={}", tool_dir().display()))
        .arg(format!("DESTDIR={}", dest.display()))
        .arg("PREFIX=/usr")
        // Started by `make test`, the outer make's jobserver is not this one's.
        .env_remove("MAKEFLAGS")
        .env_remove("MFLAGS")
        .env_remove("MAKELEVEL")
        .output()
        .unwrap()
}

fn assert_executable(path: &Path) {
    let mode = fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode();
    assert_eq!(mode & 0o755, 0o755, "{} is {mode:o}", path.display());
}

#[test]
fn make_install_puts_the_tools_man_pages_completions_and_adapters_under_the_prefix() {
    let dest = tempfile::tempdir().unwrap();
    let out = make_install(dest.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        !text(&out.stdout).contains("cargo"),
        "make install rebuilt what was built: {}",
        text(&out.stdout)
    );
    let usr = dest.path().join("usr");
    let share = usr.join("share");
    for tool in tools() {
        assert_executable(&usr.join("bin").join(&tool));
        assert!(
            share.join(format!("man/man1/{tool}.1")).is_file(),
            "{tool}.1"
        );

        let bash = share.join("bash-completion/completions").join(&tool);
        let loaded = Command::new("bash")
            .arg("-c")
            .arg(format!(". \"$1\" && complete -p {tool}"))
            .arg("bash")
            .arg(&bash)
            .output()
            .unwrap();
        assert!(loaded.status.success(), "{tool}: {}", text(&loaded.stderr));
        assert!(text(&loaded.stdout).contains(&tool));

        let zsh = fs::read_to_string(share.join(format!("zsh/site-functions/_{tool}"))).unwrap();
        assert!(
            zsh.starts_with(&format!("#compdef {tool}\n")),
            "{tool}: {zsh:.80}"
        );
        let fish = share.join(format!("fish/vendor_completions.d/{tool}.fish"));
        let fish = fs::read_to_string(fish).unwrap();
        assert!(fish.contains(&format!("complete -c {tool} ")), "{tool}");
        assert!(
            fish.contains("-l help"),
            "{tool}: its flags are in the script"
        );
    }
    assert!(share.join("man/man7/moot.7").is_file());

    let libexec = usr.join("libexec/moot");
    assert!(libexec.join("lib.sh").is_file());
    for entry in fs::read_dir(root().join("scripts/adapters")).unwrap() {
        let entry = entry.unwrap();
        if !entry.file_type().unwrap().is_dir() {
            continue;
        }
        let installed = libexec.join(entry.file_name()).join("adapter.sh");
        let source = entry.path().join("adapter.sh");
        assert_eq!(
            fs::read(&installed).unwrap(),
            fs::read(&source).unwrap(),
            "{}",
            installed.display()
        );
        assert_eq!(
            fs::symlink_metadata(&installed).unwrap().is_symlink(),
            fs::symlink_metadata(&source).unwrap().is_symlink(),
            "{}: a link in the tree is a link installed",
            installed.display()
        );
    }
}

/// The installed mock adapter, with only the installed tools and the system on PATH: lib.sh is
/// found beside it, and the pipeline runs.
#[test]
fn an_installed_adapter_runs_with_the_installed_tools() {
    let dest = tempfile::tempdir().unwrap();
    let out = make_install(dest.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let usr = dest.path().join("usr");
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new("/bin/sh")
        .arg(usr.join("libexec/moot/mock/adapter.sh"))
        .env_clear()
        .env(
            "PATH",
            format!("{}:/usr/bin:/bin", usr.join("bin").display()),
        )
        .env("TMPDIR", tmp.path())
        .env("MOSAIC_REQUEST", "hello")
        .env("MOSAIC_MOCK_RESPONSE", "installed and answering")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "installed and answering");
}
