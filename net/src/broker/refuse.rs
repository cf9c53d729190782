//! What moot-broker refuses before anything is staged: an upstream that is neither https nor
//! loopback http, a token file another user could read or swap, an upstream token in the
//! environment, and a model that names no provider. Each check is pure or read-only, so a
//! refusal leaves nothing behind.

use std::fs;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

use anyhow::{anyhow, bail, Context};

/// The variables omp reads its broker from. The token one is refused in moot-broker's own
/// environment: every process of the seat can read its ancestors' /proc/<pid>/environ.
pub const ENV_URL: &str = "OMP_AUTH_BROKER_URL";
pub const ENV_TOKEN: &str = "OMP_AUTH_BROKER_TOKEN";
pub const ENV_TOKEN_FILE: &str = "OMP_AUTH_BROKER_TOKEN_FILE";

/// The largest token file read: a token is a line, not a document.
const TOKEN_FILE_LIMIT: u64 = 16 * 1024;

/// The upstream origin as the proxy will use it: `scheme://authority[/path]`, no trailing `/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upstream {
    pub base: String,
}

/// Accepts `https://…`, or `http://` whose host is a loopback address (127.0.0.0/8, ::1,
/// localhost): a plain-http upstream anywhere else would send the upstream token (or the
/// provider's key) in clear. `flag` names where the URL came from.
pub fn upstream(flag: &str, text: &str) -> anyhow::Result<Upstream> {
    let what = || format!("{flag} ({text})");
    let uri: hyper::Uri = text
        .parse()
        .map_err(|e| anyhow!("not a URL: {e}"))
        .with_context(what)?;
    let host = uri
        .host()
        .filter(|h| !h.is_empty())
        .ok_or_else(|| anyhow!("has no host"))
        .with_context(what)?;
    if text.contains('@') || uri.query().is_some() || text.contains('#') {
        return Err(anyhow!(
            "must be a plain origin (no user, query or fragment)"
        ))
        .with_context(what);
    }
    // The URI parser reads a port past 65535 as none at all, which would mean the scheme's.
    let port = uri
        .authority()
        .and_then(|a| a.as_str().rsplit_once(':'))
        .map(|(_, port)| port)
        .filter(|port| !port.contains(']'));
    if port.is_some_and(|port| port.parse::<u16>().is_err()) {
        return Err(anyhow!("has a port that is not a TCP port")).with_context(what);
    }
    match uri.scheme_str() {
        Some("https") => {}
        Some("http") if crate::egress::is_loopback(host) => {}
        Some("http") => {
            return Err(anyhow!(
                "plain http is allowed only to a loopback address; use https"
            ))
            .with_context(what)
        }
        _ => return Err(anyhow!("must be an https:// or loopback http:// URL")).with_context(what),
    }
    Ok(Upstream {
        base: text.trim_end_matches('/').to_string(),
    })
}

/// Reads the upstream token from `path`: a regular file (not a symlink, FIFO, directory or
/// device), owned by this user, readable by nobody else, checked on the open descriptor so the
/// name cannot be swapped between the check and the read.
pub fn token_file(path: &Path) -> anyhow::Result<String> {
    secret_file("--token-file", path)
}

/// The secret in the file `flag` names, under [`token_file`]'s rules.
pub fn secret_file(flag: &str, path: &Path) -> anyhow::Result<String> {
    let what = || format!("{flag} ({})", path.display());
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK | nix::libc::O_NOCTTY)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(nix::libc::ELOOP) => anyhow!("is a symbolic link; name the file itself"),
            _ => anyhow!("{e}"),
        })
        .with_context(what)?;
    let meta = file.metadata().with_context(what)?;
    if !meta.file_type().is_file() {
        return Err(anyhow!("is not a regular file")).with_context(what);
    }
    let me = nix::unistd::geteuid().as_raw();
    if meta.uid() != me {
        return Err(anyhow!(
            "is owned by uid {}, not by this user (uid {me})",
            meta.uid()
        ))
        .with_context(what);
    }
    if meta.mode() & 0o077 != 0 {
        return Err(anyhow!(
            "has mode {:04o}; make it owner-only (chmod 600)",
            meta.mode() & 0o7777
        ))
        .with_context(what);
    }
    let mut bytes = Vec::new();
    file.take(TOKEN_FILE_LIMIT + 1)
        .read_to_end(&mut bytes)
        .with_context(what)?;
    if bytes.len() as u64 > TOKEN_FILE_LIMIT {
        return Err(anyhow!("is larger than {TOKEN_FILE_LIMIT} bytes")).with_context(what);
    }
    let token = String::from_utf8(bytes)
        .map_err(|_| anyhow!("is not UTF-8 text"))
        .with_context(what)?;
    let token = token.trim();
    if token.is_empty() || token.chars().any(|c| c.is_control() || c == ' ') {
        return Err(anyhow!("must hold one token on one line")).with_context(what);
    }
    Ok(token.to_string())
}

/// Refuses an upstream token in the environment: the seat could read it from /proc.
pub fn no_token_in_env(
    env: impl IntoIterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
) -> anyhow::Result<()> {
    if env.into_iter().any(|(name, _)| name == ENV_TOKEN) {
        bail!(
            "{ENV_TOKEN} is set: the seat could read it from /proc; unset it and pass the token \
             with --token-file (or {ENV_TOKEN_FILE})"
        );
    }
    Ok(())
}

/// The provider of a provider-qualified model (`kimi-code/k3` → `kimi-code`).
pub fn provider(model: &str) -> anyhow::Result<String> {
    match model.split_once('/') {
        Some((provider, name))
            if !provider.is_empty()
                && !name.is_empty()
                && provider
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)) =>
        {
            Ok(provider.to_string())
        }
        _ => bail!(
            "--model ({model}): name the provider too, as PROVIDER/MODEL (kimi-code/k3), so the \
             proxy knows which credentials the seat may see"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_https_and_loopback_http_are_upstreams() {
        for good in [
            "https://broker.example.com",
            "https://broker.example.com:8443/base/",
            "http://127.0.0.1:8765",
            "http://127.3.0.1",
            "http://[::1]:9",
            "http://localhost:1",
        ] {
            assert!(upstream("--upstream", good).is_ok(), "{good}");
        }
        assert_eq!(
            upstream("--upstream", "https://b.example/x/").unwrap().base,
            "https://b.example/x"
        );
        for bad in [
            "http://10.0.0.1:8765",
            "http://broker.example.com",
            "http://127.0.0.1.evil.com",
            "ftp://127.0.0.1",
            "127.0.0.1:8765",
            "https://user:pw@b.example",
            "https://b.example/?q=1",
            "http://127.0.0.1:84407/v1",
            "",
        ] {
            assert!(upstream("--upstream", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_model_must_name_its_provider() {
        assert_eq!(provider("kimi-code/k3").unwrap(), "kimi-code");
        assert_eq!(provider("fake/fake-model").unwrap(), "fake");
        for bad in ["k3", "/k3", "kimi-code/", "a b/c", ""] {
            assert!(provider(bad).is_err(), "{bad}");
        }
    }
}
