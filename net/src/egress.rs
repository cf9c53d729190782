//! How moot's HTTP client leaves the machine: straight to the origin, or through the proxy the
//! environment names.
//!
//! A CI runner whose only way out is an egress proxy sets `HTTPS_PROXY` (and `ALL_PROXY`,
//! `NO_PROXY`, in either case) for every tool on it; moot-broker's upstream client reads them
//! with hyper-util's `Matcher` (the upper-case name first, as Go's tools do; `NO_PROXY` takes
//! domains, their subdomains, addresses and networks, `*` for all). Choices of its own:
//!
//! - a loopback origin (`localhost`, 127.0.0.0/8, `::1`) is always reached directly, as Go's
//!   net/http does: a proxy on another host cannot reach this one's loopback;
//! - an origin goes through the proxy as a `CONNECT` tunnel (to port 80 for http), so for an
//!   https origin the proxy sees the host and port, never the request or its key. moot-broker
//!   takes http only on loopback (net/src/broker/refuse.rs), so in practice only https is
//!   tunnelled.
//!
//! The proxy itself is spoken to over plain http (`http://user:password@host:port`, sent as
//! `Proxy-Authorization: Basic`); an `https://` or `socks5://` proxy, one whose password
//! hyper-util would misread and a variable it cannot read at all are refused before the job
//! ([`check_route`]), never silently bypassed, and a proxy is named by its address only.

use std::error::Error as StdError;
use std::ffi::OsString;
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use hyper::Uri;
use hyper_util::client::legacy::connect::proxy::Tunnel;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::proxy::matcher::{Intercept, Matcher};
use hyper_util::rt::TokioIo;
use moot::model::needs::PROXY_VARS;
use tokio::net::TcpStream;
use tower_service::Service;

/// What a connection attempt fails with.
pub type Error = Box<dyn StdError + Send + Sync>;

/// A TCP connector that goes through the environment's proxy where it says to.
#[derive(Clone)]
pub struct Connector {
    tcp: HttpConnector,
    proxies: Arc<Matcher>,
}

impl Connector {
    /// Connects with `tcp`, through the proxies in this process's environment.
    pub fn from_env(tcp: HttpConnector) -> Self {
        Self::new(tcp, Matcher::from_env())
    }

    /// Connects with `tcp`, through `proxies`.
    pub fn new(tcp: HttpConnector, proxies: Matcher) -> Self {
        Connector {
            tcp,
            proxies: Arc::new(proxies),
        }
    }

    /// The proxy `origin` is reached through, if any.
    pub fn proxy_for(&self, origin: &Uri) -> Option<Intercept> {
        if is_loopback(origin.host()?) {
            return None;
        }
        self.proxies.intercept(origin)
    }
}

impl Service<Uri> for Connector {
    type Response = TokioIo<TcpStream>;
    type Error = Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        self.tcp.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, origin: Uri) -> Self::Future {
        let Some(proxy) = self.proxy_for(&origin) else {
            let connecting = self.tcp.call(origin);
            return Box::pin(async move { connecting.await.map_err(Into::into) });
        };
        if let Some(unusable) = unusable(&proxy) {
            return Box::pin(async move { Err(unusable.into()) });
        }
        let named = address(&proxy);
        let mut tunnel = Tunnel::new(proxy.uri().clone(), self.tcp.clone());
        if let Some(auth) = proxy.basic_auth() {
            tunnel = tunnel.with_auth(auth.clone());
        }
        let origin = with_port(origin);
        Box::pin(async move {
            std::future::poll_fn(|cx| tunnel.poll_ready(cx)).await?;
            tunnel.call(origin).await.map_err(|error| {
                Box::new(Through {
                    proxy: named,
                    error: error.into(),
                }) as Error
            })
        })
    }
}

/// The proxy's host and port, and nothing of its user-info: hyper-util splits the user-info at
/// the first `@`, so an unencoded `@` in a password leaves the rest of it in the authority.
fn address(proxy: &Intercept) -> String {
    let authority = proxy.uri().authority().map_or("", |a| a.as_str());
    authority.rsplit('@').next().unwrap_or_default().to_string()
}

/// Why `proxy` cannot be used, when it cannot: moot-broker speaks to a proxy over plain http
/// only, with credentials it read whole. Named without the proxy's credentials.
fn unusable(proxy: &Intercept) -> Option<String> {
    let scheme = proxy.uri().scheme_str().unwrap_or_default();
    let address = address(proxy);
    if proxy
        .uri()
        .authority()
        .is_some_and(|a| a.as_str().contains('@'))
    {
        return Some(format!(
            "the proxy at {address} the environment names has an '@' in its user or password: \
             write it as %40"
        ));
    }
    if scheme == "http" {
        return None;
    }
    let advice = if scheme.starts_with("socks") {
        "use an http proxy, or put this origin in NO_PROXY".to_string()
    } else {
        format!("set it as http://{address}, or put this origin in NO_PROXY")
    };
    Some(format!(
        "the proxy {scheme}://{address} the environment names: moot-broker speaks to a proxy \
         over http only ({advice})"
    ))
}

/// Whether hyper-util reads `value` as a proxy URL (it ignores one it cannot).
fn readable(value: String) -> bool {
    let probe = Uri::from_static("https://example.invalid/");
    Matcher::builder()
        .all(value)
        .build()
        .intercept(&probe)
        .is_some()
}

/// The variables that name a proxy for an https origin, in the order hyper-util reads them.
const HTTPS_PROXY_VARS: [&str; 4] = ["HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"];

/// Refuses `origin` (an upstream URL) when the environment sends it through a proxy moot-broker
/// cannot use, or names one it cannot read (hyper-util would go direct, past a proxy the runner
/// may require): said before the job starts, not as a 502 to every request the CLI retries.
pub fn check_route(origin: &str) -> Result<(), String> {
    let Ok(origin) = origin.parse::<Uri>() else {
        return Ok(());
    };
    if origin.host().is_none_or(is_loopback) {
        return Ok(());
    }
    for name in HTTPS_PROXY_VARS {
        let Some(value) = std::env::var_os(name).filter(|v| !v.is_empty()) else {
            continue;
        };
        if !readable(value.to_string_lossy().into_owned()) {
            return Err(format!(
                "{name} is not a proxy URL moot-broker can read \
                 (http://[USER:PASSWORD@]HOST:PORT): fix it or unset it"
            ));
        }
    }
    let connector = Connector::from_env(HttpConnector::new());
    match connector.proxy_for(&origin).as_ref().and_then(unusable) {
        Some(why) => Err(why),
        None => Ok(()),
    }
}

/// A tunnel that failed, naming its proxy (never the proxy's credentials) and keeping the cause
/// for the error chain moot-broker reports.
#[derive(Debug)]
struct Through {
    proxy: String,
    error: Error,
}

impl std::fmt::Display for Through {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "through the proxy http://{}", self.proxy)
    }
}

impl StdError for Through {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        Some(&*self.error)
    }
}

/// `NO_PROXY` and `no_proxy` for a command that reaches moot-broker on 127.0.0.1, when `env`
/// names a proxy: its entries (`NO_PROXY`'s, else `no_proxy`'s) plus `127.0.0.1` and
/// `localhost`, in both names. Many HTTP clients send even a request for 127.0.0.1 to the proxy
/// unless `NO_PROXY` names it, and a proxy on another host cannot reach this one's loopback.
pub fn loopback_exempted(env: &[(OsString, OsString)]) -> Vec<(OsString, OsString)> {
    let get = |name: &str| {
        env.iter()
            .find(|(given, _)| given == name)
            .map(|(_, value)| value.to_string_lossy().into_owned())
    };
    if !PROXY_VARS
        .iter()
        .any(|name| get(name).is_some_and(|value| !value.is_empty()))
    {
        return Vec::new();
    }
    let given = get("NO_PROXY")
        .or_else(|| get("no_proxy"))
        .unwrap_or_default();
    let mut entries: Vec<&str> = given
        .split(',')
        .map(str::trim)
        .filter(|entry| !entry.is_empty())
        .collect();
    for loopback in ["127.0.0.1", "localhost"] {
        if !entries.contains(&loopback) {
            entries.push(loopback);
        }
    }
    let value = OsString::from(entries.join(","));
    vec![
        ("NO_PROXY".into(), value.clone()),
        ("no_proxy".into(), value),
    ]
}

/// Whether `host` (a URI's host: a name, an address, a bracketed IPv6 address) is this machine's
/// loopback.
pub(crate) fn is_loopback(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    bare.eq_ignore_ascii_case("localhost")
        || bare.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// `origin` with its scheme's port written out: a tunnel is opened to host:port, and hyper-util's
/// assumes 443 when none is given.
fn with_port(origin: Uri) -> Uri {
    if origin.port().is_some() {
        return origin;
    }
    let port = if origin.scheme_str() == Some("http") {
        80
    } else {
        443
    };
    let Some(host) = origin.host() else {
        return origin;
    };
    let authority = format!("{host}:{port}");
    let mut parts = origin.clone().into_parts();
    match authority.parse() {
        Ok(authority) => parts.authority = Some(authority),
        Err(_) => return origin,
    }
    Uri::from_parts(parts).unwrap_or(origin)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn connector(https: &str, no: &str) -> Connector {
        Connector::new(
            HttpConnector::new(),
            Matcher::builder().https(https).http(https).no(no).build(),
        )
    }

    fn proxy_of(connector: &Connector, origin: &str) -> Option<String> {
        connector
            .proxy_for(&origin.parse().unwrap())
            .map(|proxy| proxy.uri().to_string())
    }

    #[test]
    fn loopback_is_reached_directly_and_no_proxy_is_honoured() {
        let via = connector(
            "http://user:pw@proxy.corp:3128",
            "internal.corp, 10.0.0.0/8",
        );
        for origin in [
            "http://127.0.0.1:8080/v1",
            "https://127.9.9.9/",
            "http://localhost:1/",
            "https://LOCALHOST/",
            "http://[::1]:80/",
            "https://api.internal.corp/",
            "https://10.1.2.3/",
        ] {
            assert_eq!(proxy_of(&via, origin), None, "{origin}");
        }
        for origin in [
            "https://api.anthropic.com/v1",
            "http://gateway.example:4000/",
        ] {
            assert_eq!(
                proxy_of(&via, origin).as_deref(),
                Some("http://proxy.corp:3128/"),
                "{origin}"
            );
        }
        let auth = via
            .proxy_for(&"https://api.openai.com/".parse().unwrap())
            .unwrap();
        assert_eq!(auth.basic_auth().unwrap(), "Basic dXNlcjpwdw==");
        assert_eq!(
            proxy_of(&connector("", ""), "https://api.openai.com/"),
            None
        );
    }

    #[test]
    fn a_command_behind_a_proxy_reaches_loopback_directly() {
        let env = |pairs: &[(&str, &str)]| -> Vec<(OsString, OsString)> {
            pairs.iter().map(|(n, v)| (n.into(), v.into())).collect()
        };
        assert!(loopback_exempted(&env(&[("PATH", "/bin"), ("HTTPS_PROXY", "")])).is_empty());
        let both = |value: &str| env(&[("NO_PROXY", value), ("no_proxy", value)]);
        assert_eq!(
            loopback_exempted(&env(&[("https_proxy", "http://proxy.corp:3128")])),
            both("127.0.0.1,localhost")
        );
        assert_eq!(
            loopback_exempted(&env(&[
                ("ALL_PROXY", "http://proxy.corp:3128"),
                ("no_proxy", "ignored.corp"),
                ("NO_PROXY", " .corp, localhost ,"),
            ])),
            both(".corp,localhost,127.0.0.1")
        );
    }

    #[test]
    fn a_proxy_is_named_without_its_credentials_and_one_misread_is_refused() {
        let proxy = |value: &str| {
            Matcher::builder()
                .https(value)
                .build()
                .intercept(&"https://api.example/".parse().unwrap())
                .unwrap()
        };
        // An unencoded '@' in the password: hyper-util keeps its tail in the authority.
        let misread = unusable(&proxy("http://alice:p@ss-secret@proxy.corp:3128")).unwrap();
        assert!(
            misread.contains("proxy.corp:3128") && misread.contains("%40"),
            "{misread}"
        );
        assert!(!misread.contains("ss-secret"), "{misread}");
        assert_eq!(
            unusable(&proxy("http://alice:p%40ss@proxy.corp:3128")),
            None
        );
        let socks = unusable(&proxy("socks5://bob:pw@proxy.corp:1080")).unwrap();
        assert!(
            socks.contains("socks5://proxy.corp:1080") && !socks.contains("pw"),
            "{socks}"
        );
        for unreadable in [
            "socks://proxy.corp:1080",
            "http//proxy.corp:3128",
            "http://a b@p:1",
        ] {
            assert!(!readable(unreadable.into()), "{unreadable}");
        }
        assert!(readable("proxy.corp:3128".into()));
    }

    #[test]
    fn a_tunnel_is_opened_to_the_scheme_s_port() {
        let port = |uri: &str| with_port(uri.parse().unwrap()).to_string();
        assert_eq!(
            port("http://gateway.example/v1"),
            "http://gateway.example:80/v1"
        );
        assert_eq!(
            port("https://api.example/v1?x=1"),
            "https://api.example:443/v1?x=1"
        );
        assert_eq!(
            port("https://api.example:8443/"),
            "https://api.example:8443/"
        );
    }

    #[test]
    fn a_proxy_spoken_to_over_tls_is_refused_by_name() {
        let mut via = connector("https://proxy.corp:3129", "");
        let failed = crate::http::runtime()
            .unwrap()
            .block_on(via.call("https://api.example/".parse().unwrap()))
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(failed.contains("https://proxy.corp:3129"), "{failed}");
        assert!(failed.contains("over http only"), "{failed}");
    }
}
