//! The seat's side of the credential proxy (`moot-broker --forward`, net/src/broker/forward.rs):
//! what moot-sandbox does so that no byte of the provider's key reaches the seat.
//!
//! moot-broker holds the key and tells the command it runs four things in its environment
//! ([`VARS`]): the proxy's loopback URL, the job's token, the provider URL it forwards to, and a
//! print of the key (its length, a 32-bit rolling hash and its SHA-256: enough to find the key,
//! not to learn it). moot-sandbox, given them, copies the operator's configuration into the
//! private state with every occurrence of the key replaced by the token and every URL of the
//! provider pointed at the proxy, does the same to the CLI's environment, grants no port but the
//! proxy's, and keeps the operator's logins (OAuth tokens, credential stores: secrets that are
//! not the proxied key) out of the seat. So whatever format a CLI keeps its key in (YAML, TOML,
//! JSON, an environment variable), the seat has the token in its place.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};

use anyhow::{anyhow, bail, Context};

/// The proxy's URL, `http://127.0.0.1:PORT`.
pub const URL: &str = "MOOT_PROXY_URL";
/// The job's token, the only key the proxy accepts.
pub const TOKEN: &str = "MOOT_PROXY_TOKEN";
/// The provider's URL the proxy forwards to (its path the prefix of every forwarded path).
pub const UPSTREAM: &str = "MOOT_PROXY_UPSTREAM";
/// The print of the provider's key ([`KeyPrint`]).
pub const KEY_PRINT: &str = "MOOT_PROXY_KEY_PRINT";
/// All of them: given together, kept together by `moot-run --env-preset`, never passed to the
/// CLI.
pub const VARS: [&str; 4] = [URL, TOKEN, UPSTREAM, KEY_PRINT];

/// The base of the rolling hash (odd, so every byte matters modulo 2^32).
const BASE: u32 = 0x0100_0193;

/// What finds the key without holding it: its length, a rolling hash over its bytes (to pick
/// the candidate windows of a file at one multiplication a byte) and its SHA-256 (to confirm
/// one). The 32-bit hash and the digest leave a provider key's 128 bits and more of entropy
/// unguessable; a short or guessable key is no secret to begin with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyPrint {
    len: usize,
    rolling: u32,
    sha256: [u8; 32],
}

impl KeyPrint {
    pub fn of(key: &[u8]) -> Self {
        KeyPrint {
            len: key.len(),
            rolling: rolling_hash(key),
            sha256: sha256(key),
        }
    }

    fn parse(text: &str) -> anyhow::Result<Self> {
        let mut parts = text.split(':');
        let (Some("v1"), Some(len), Some(rolling), Some(sha), None) = (
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
        ) else {
            bail!("not v1:LEN:HASH:SHA256");
        };
        let len: usize = len.parse().context("its length")?;
        if len == 0 {
            bail!("an empty key");
        }
        let rolling = u32::from_str_radix(rolling, 16).context("its rolling hash")?;
        let mut sha256 = [0u8; 32];
        if sha.len() != 64 {
            bail!("its SHA-256 is not 64 hex digits");
        }
        for (i, byte) in sha256.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&sha[2 * i..2 * i + 2], 16).context("its SHA-256")?;
        }
        Ok(KeyPrint {
            len,
            rolling,
            sha256,
        })
    }

    fn render(&self) -> String {
        let sha: String = self.sha256.iter().map(|b| format!("{b:02x}")).collect();
        format!("v1:{}:{:08x}:{sha}", self.len, self.rolling)
    }

    /// Where the key starts in `bytes`, left to right, occurrences not overlapping.
    pub fn find(&self, bytes: &[u8]) -> Vec<usize> {
        let mut found = Vec::new();
        if bytes.len() < self.len {
            return found;
        }
        let top = BASE.wrapping_pow(self.len as u32 - 1);
        let mut hash = rolling_hash(&bytes[..self.len]);
        let mut at = 0;
        let mut free = 0; // the first position a new occurrence may start at
        loop {
            if hash == self.rolling && at >= free && self.confirms(&bytes[at..at + self.len]) {
                found.push(at);
                free = at + self.len;
            }
            if at + self.len == bytes.len() {
                return found;
            }
            hash = hash
                .wrapping_sub(u32::from(bytes[at]).wrapping_mul(top))
                .wrapping_mul(BASE)
                .wrapping_add(u32::from(bytes[at + self.len]));
            at += 1;
        }
    }

    fn confirms(&self, window: &[u8]) -> bool {
        sha256(window) == self.sha256
    }
}

fn sha256(bytes: &[u8]) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).into()
}

fn rolling_hash(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0u32, |h, &b| {
        h.wrapping_mul(BASE).wrapping_add(u32::from(b))
    })
}

/// Whether `name` is a variable a CLI takes a provider key or a login token from: a routed
/// provider's, one a runtime's record names, or any `*_API_KEY`, `*_AUTH_TOKEN`,
/// `*_OAUTH_TOKEN`. Behind a proxy such a variable keeps only the job token.
pub fn is_key_var(name: &OsStr) -> bool {
    let name = name.as_bytes();
    let named = crate::model::ROUTED_PROVIDER_KEYS
        .iter()
        .chain(crate::registry::all().iter().flat_map(|meta| meta.env.keys))
        .any(|known| known.as_bytes() == name);
    named
        || [&b"_API_KEY"[..], b"_AUTH_TOKEN", b"_OAUTH_TOKEN"]
            .iter()
            .any(|suffix| name.ends_with(suffix))
}

/// The job's credential proxy, as the seat sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeatProxy {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    pub port: u16,
    token: String,
    /// The provider's URL, without a trailing `/`.
    upstream: String,
    key: KeyPrint,
    /// The operator's logins are carried into the seat anyway (`--seat-holds-login`).
    pub carry_logins: bool,
}

impl SeatProxy {
    /// The variables moot-broker gives its command (see [`VARS`]).
    pub fn exported(
        port: u16,
        token: &str,
        upstream: &str,
        key: &[u8],
    ) -> Vec<(OsString, OsString)> {
        vec![
            (URL.into(), format!("http://127.0.0.1:{port}").into()),
            (TOKEN.into(), token.into()),
            (UPSTREAM.into(), upstream.trim_end_matches('/').into()),
            (KEY_PRINT.into(), KeyPrint::of(key).render().into()),
        ]
    }

    /// The proxy named in `get`'s variables: none when none is set; refused when only some
    /// are, or one is malformed (a seat that half believes in a proxy would hold the key).
    pub fn from_vars<'a>(get: impl Fn(&str) -> Option<&'a OsStr>) -> anyhow::Result<Option<Self>> {
        let values: Vec<Option<&str>> = VARS
            .iter()
            .map(|name| get(name).map(|v| v.to_str().unwrap_or_default()))
            .collect();
        if values.iter().all(Option::is_none) {
            return Ok(None);
        }
        let missing: Vec<&str> = VARS
            .iter()
            .zip(&values)
            .filter(|(_, v)| v.is_none_or(str::is_empty))
            .map(|(name, _)| *name)
            .collect();
        if !missing.is_empty() {
            bail!(
                "the credential proxy's variables are set without {} (moot-broker --forward sets \
                 all four; keep them together)",
                missing.join(", ")
            );
        }
        let [url, token, upstream, print] =
            [values[0], values[1], values[2], values[3]].map(Option::unwrap_or_default);
        let port = url
            .strip_prefix("http://127.0.0.1:")
            .and_then(|port| port.parse::<u16>().ok())
            .filter(|port| *port != 0)
            .ok_or_else(|| anyhow!("{URL} ({url}) is not http://127.0.0.1:PORT"))?;
        let token_byte = |b: u8| b.is_ascii_alphanumeric() || b == b'-' || b == b'_';
        if token.len() < 16 || !token.bytes().all(token_byte) {
            bail!("{TOKEN} is not a job token (16 or more letters, digits, - and _)");
        }
        if !(upstream.starts_with("https://") || upstream.starts_with("http://")) {
            bail!("{UPSTREAM} ({upstream}) is not an http(s) URL");
        }
        let key = KeyPrint::parse(print).context(KEY_PRINT)?;
        Ok(Some(SeatProxy {
            url: url.to_string(),
            port,
            token: token.to_string(),
            upstream: upstream.trim_end_matches('/').to_string(),
            key,
            carry_logins: false,
        }))
    }

    /// The provider's URL the proxy forwards to.
    pub fn upstream(&self) -> &str {
        &self.upstream
    }

    /// Whether `bytes` hold the provider's key.
    pub fn holds_key(&self, bytes: &[u8]) -> bool {
        !self.key.find(bytes).is_empty()
    }

    /// Whether `bytes` hold the job's token.
    pub fn holds_token(&self, bytes: &[u8]) -> bool {
        memchr::memmem::find(bytes, self.token.as_bytes()).is_some()
    }

    /// Whether `bytes` name the provider's URL.
    pub fn names_upstream(&self, bytes: &[u8]) -> bool {
        !self.upstream_at(bytes).is_empty()
    }

    /// `bytes` as the seat gets them: the key replaced by the token, the provider's URL (as a
    /// whole, or followed by a path, a query or the end of a quoted string) by the proxy's.
    pub fn rewrite(&self, bytes: &[u8]) -> Vec<u8> {
        let keyless = splice(
            bytes,
            &self.key.find(bytes),
            self.key.len,
            self.token.as_bytes(),
        );
        let at = self.upstream_at(&keyless);
        splice(&keyless, &at, self.upstream.len(), self.url.as_bytes())
    }

    /// `value` rewritten, when that changes it.
    pub fn rewrite_var(&self, value: &OsStr) -> Option<OsString> {
        let rewritten = self.rewrite(value.as_bytes());
        (rewritten != value.as_bytes()).then(|| OsString::from_vec(rewritten))
    }

    /// Where the provider's URL starts in `bytes`: not followed by more of a host name, port
    /// or path segment (`https://api.example` is not `https://api.example.net`).
    fn upstream_at(&self, bytes: &[u8]) -> Vec<usize> {
        let needle = self.upstream.as_bytes();
        memchr::memmem::find_iter(bytes, needle)
            .filter(|&at| {
                bytes.get(at + needle.len()).is_none_or(|&next| {
                    !(next.is_ascii_alphanumeric() || b".-_:@%".contains(&next))
                })
            })
            .collect()
    }
}

/// `bytes` with the `len` bytes at each of `at` (ascending, not overlapping) replaced by `with`.
fn splice(bytes: &[u8], at: &[usize], len: usize, with: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut from = 0;
    for &start in at {
        out.extend_from_slice(&bytes[from..start]);
        out.extend_from_slice(with);
        from = start + len;
    }
    out.extend_from_slice(&bytes[from..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "sk-live-0123456789abcdefghijKLMNOP";
    const TOKEN_: &str = "0123456789abcdef0123456789abcdef";

    fn proxy(upstream: &str) -> SeatProxy {
        let vars = SeatProxy::exported(4242, TOKEN_, upstream, KEY.as_bytes());
        SeatProxy::from_vars(|name| {
            vars.iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.as_os_str())
        })
        .unwrap()
        .unwrap()
    }

    #[test]
    fn the_key_is_found_wherever_it_is_and_only_there() {
        let print = KeyPrint::of(KEY.as_bytes());
        let text = format!("apiKey: {KEY}\nb=\"{KEY}{KEY}\"\nx{KEY}y\nsk-live-0123");
        let found = print.find(text.as_bytes());
        assert_eq!(found.len(), 4, "{found:?}");
        for at in found {
            assert_eq!(&text.as_bytes()[at..at + KEY.len()], KEY.as_bytes());
        }
        assert!(print.find(b"").is_empty());
        assert!(print.find(&KEY.as_bytes()[1..]).is_empty());
        assert_eq!(print.find(KEY.as_bytes()), vec![0]);
    }

    #[test]
    fn overlapping_occurrences_are_replaced_left_to_right() {
        let print = KeyPrint::of(b"aaa");
        assert_eq!(print.find(b"aaaaaaa"), vec![0, 3]);
    }

    #[test]
    fn a_config_gets_the_token_and_the_proxy() {
        let seat = proxy("https://api.example.com/v1/");
        let yaml = format!(
            "providers:\n  p:\n    baseUrl: https://api.example.com/v1\n    apiKey: {KEY}\n  \
             q:\n    baseUrl: https://api.example.com/v1beta\n    other: https://api.example.com.evil/v1\n"
        );
        let out = String::from_utf8(seat.rewrite(yaml.as_bytes())).unwrap();
        assert!(!out.contains(KEY), "{out}");
        assert!(out.contains(&format!("apiKey: {TOKEN_}")), "{out}");
        assert!(out.contains("baseUrl: http://127.0.0.1:4242\n"), "{out}");
        assert!(out.contains("https://api.example.com/v1beta"), "{out}");
        assert!(out.contains("https://api.example.com.evil/v1"), "{out}");
        let json = format!(r#"{{"baseURL":"https://api.example.com/v1/chat","k":"Bearer {KEY}"}}"#);
        assert_eq!(
            String::from_utf8(seat.rewrite(json.as_bytes())).unwrap(),
            format!(r#"{{"baseURL":"http://127.0.0.1:4242/chat","k":"Bearer {TOKEN_}"}}"#)
        );
    }

    #[test]
    fn key_variables_are_known_by_name() {
        for name in [
            "ANTHROPIC_API_KEY",
            "FAKE_PROVIDER_API_KEY",
            "CLAUDE_CODE_OAUTH_TOKEN",
            "ANTHROPIC_AUTH_TOKEN",
            "MOONSHOT_API_KEY",
        ] {
            assert!(is_key_var(OsStr::new(name)), "{name}");
        }
        for name in ["PATH", "ANTHROPIC_BASE_URL", "API_KEY_NOTE", "HOME"] {
            assert!(!is_key_var(OsStr::new(name)), "{name}");
        }
    }

    #[test]
    fn half_a_proxy_or_a_malformed_one_is_refused() {
        let vars = SeatProxy::exported(4242, TOKEN_, "https://p", KEY.as_bytes());
        for dropped in VARS {
            let error = SeatProxy::from_vars(|name| {
                vars.iter()
                    .find(|(k, _)| k == name && name != dropped)
                    .map(|(_, v)| v.as_os_str())
            })
            .unwrap_err();
            assert!(format!("{error:#}").contains(dropped), "{error:#}");
        }
        assert_eq!(SeatProxy::from_vars(|_| None).unwrap(), None);
        for (name, bad) in [
            (URL, "http://10.0.0.1:4242"),
            (URL, "http://127.0.0.1:0"),
            (TOKEN, "short"),
            (UPSTREAM, "ftp://x"),
            (KEY_PRINT, "v1:3:0:00"),
            (
                KEY_PRINT,
                "v1:0:00000000:0000000000000000000000000000000000000000000000000000000000000000",
            ),
        ] {
            let error = SeatProxy::from_vars(|n| {
                if n == name {
                    return Some(OsStr::new(bad));
                }
                vars.iter()
                    .find(|(k, _)| k == n)
                    .map(|(_, v)| v.as_os_str())
            })
            .unwrap_err();
            assert!(
                format!("{error:#}").contains(name),
                "{name}={bad}: {error:#}"
            );
        }
    }
}
