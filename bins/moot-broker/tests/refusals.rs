//! Each refusal of moot-broker: one line on stderr, exit 2, no seat made and the command not
//! run. No upstream is listening: a refusal must come before any connection.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use support::{token_file, BIN};

const UPSTREAM: &str = "http://127.0.0.1:9";

/// Runs moot-broker with `flags` (and `env`), and checks the refusal: exit 2, one line naming
/// `about`, no seat, the command not run.
fn refused(dir: &Path, flags: &[&str], env: &[(&str, &str)], about: &str) {
    let seat = dir.join("seat");
    let marker = dir.join("ran");
    let output = Command::new(BIN)
        .args(flags)
        .arg("--seat-dir")
        .arg(&seat)
        .arg("--")
        .arg("touch")
        .arg(&marker)
        .env_remove("OMP_AUTH_BROKER_URL")
        .env_remove("OMP_AUTH_BROKER_TOKEN")
        .env_remove("OMP_AUTH_BROKER_TOKEN_FILE")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{flags:?}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("moot-broker: ") && stderr.contains(about),
        "{stderr}"
    );
    assert!(!seat.exists(), "a refusal created the seat");
    assert!(!marker.exists(), "a refusal ran the command");
}

fn with_token(dir: &Path, extra: &[&str]) -> Vec<String> {
    let token = token_file(dir);
    let mut flags = vec![
        "--token-file".to_string(),
        token.to_str().unwrap().to_string(),
    ];
    flags.extend(extra.iter().map(|s| s.to_string()));
    flags
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

#[test]
fn an_upstream_neither_https_nor_loopback_http_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    for url in [
        "http://10.1.2.3:8765",
        "http://broker.example",
        "ftp://127.0.0.1",
    ] {
        let flags = with_token(dir.path(), &["--upstream", url, "--model", "kimi-code/k3"]);
        refused(dir.path(), &strs(&flags), &[], "--upstream");
    }
    let flags = with_token(dir.path(), &["--model", "kimi-code/k3"]);
    refused(dir.path(), &strs(&flags), &[], "no upstream broker");
    // $OMP_AUTH_BROKER_URL is read, and checked the same way.
    refused(
        dir.path(),
        &strs(&flags),
        &[("OMP_AUTH_BROKER_URL", "http://10.0.0.1")],
        "--upstream",
    );
}

#[test]
fn an_unsafe_token_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let base = [
        "--upstream",
        UPSTREAM,
        "--model",
        "kimi-code/k3",
        "--token-file",
    ];
    let check = |path: &Path, about: &str| {
        let mut flags: Vec<&str> = base.to_vec();
        flags.push(path.to_str().unwrap());
        refused(dir.path(), &flags, &[], about);
    };
    let token = token_file(dir.path());

    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o640)).unwrap();
    check(&token, "chmod 600");
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o604)).unwrap();
    check(&token, "chmod 600");
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();

    let link = dir.path().join("link.token");
    std::os::unix::fs::symlink(&token, &link).unwrap();
    check(&link, "symbolic link");

    let fifo = dir.path().join("fifo.token");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    check(&fifo, "not a regular file");

    let directory = dir.path().join("dir.token");
    std::fs::create_dir(&directory).unwrap();
    std::fs::set_permissions(&directory, std::fs::Permissions::from_mode(0o700)).unwrap();
    check(&directory, "not a regular file");

    check(&dir.path().join("absent.token"), "--token-file");
    check(Path::new("/dev/null"), "not a regular file");

    let empty = dir.path().join("empty.token");
    std::fs::write(&empty, "\n").unwrap();
    std::fs::set_permissions(&empty, std::fs::Permissions::from_mode(0o600)).unwrap();
    check(&empty, "one token");

    // Another owner: as root, a file chowned away; as anyone else, a root-owned file.
    let foreign = dir.path().join("foreign.token");
    std::fs::write(&foreign, "t\n").unwrap();
    std::fs::set_permissions(&foreign, std::fs::Permissions::from_mode(0o600)).unwrap();
    if nix::unistd::geteuid().is_root() {
        nix::unistd::chown(&foreign, Some(nix::unistd::Uid::from_raw(65534)), None).unwrap();
        check(&foreign, "not by this user");
    }

    let flags = ["--upstream", UPSTREAM, "--model", "kimi-code/k3"];
    refused(dir.path(), &flags, &[], "no upstream token");
}

#[test]
fn an_upstream_token_in_the_environment_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let flags = with_token(
        dir.path(),
        &["--upstream", UPSTREAM, "--model", "kimi-code/k3"],
    );
    refused(
        dir.path(),
        &strs(&flags),
        &[("OMP_AUTH_BROKER_TOKEN", "secret")],
        "OMP_AUTH_BROKER_TOKEN is set",
    );
    refused(
        dir.path(),
        &strs(&flags),
        &[("OMP_AUTH_BROKER_TOKEN", "")],
        "OMP_AUTH_BROKER_TOKEN is set",
    );
}

#[test]
fn a_model_without_its_provider_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    for model in ["k3", "/k3", "kimi-code/"] {
        let flags = with_token(dir.path(), &["--upstream", UPSTREAM, "--model", model]);
        refused(dir.path(), &strs(&flags), &[], "PROVIDER/MODEL");
    }
}

#[test]
fn an_existing_seat_dir_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let seat = dir.path().join("taken");
    std::fs::create_dir(&seat).unwrap();
    let token = token_file(dir.path());
    let output = Command::new(BIN)
        .args([
            "--upstream",
            UPSTREAM,
            "--model",
            "kimi-code/k3",
            "--token-file",
        ])
        .arg(&token)
        .arg("--seat-dir")
        .arg(&seat)
        .args(["--", "true"])
        .env_remove("OMP_AUTH_BROKER_TOKEN")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("already exists"));
    assert!(seat.is_dir(), "a refused seat dir must be left alone");
}

#[test]
fn help_and_version() {
    moot_testkit::check_help_and_version(BIN, "moot-broker", "moot-broker --upstream");
}

#[test]
fn the_man_page_documents_every_flag() {
    moot_testkit::check_man_page(BIN, "moot-broker.1");
}

#[test]
fn a_models_file_that_pins_a_key_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let models = dir.path().join("models.yml");
    std::fs::write(&models, "providers:\n  fake:\n    apiKey: sk-x\n").unwrap();
    let mut flags = with_token(
        dir.path(),
        &["--upstream", UPSTREAM, "--model", "fake/m", "--models-file"],
    );
    flags.push(models.to_str().unwrap().to_string());
    refused(dir.path(), &strs(&flags), &[], "apiKey");
}
