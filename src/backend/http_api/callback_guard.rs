//! Where a callback may go. A `callback_url` is chosen by whoever holds an API token,
//! and the bridge POSTs signed state to it from inside the network: without a guard a
//! token holder could aim it at the cloud metadata service, a database port on
//! loopback, or anything else only the bridge can reach.
//!
//! An address is allowed when it is a public unicast address: not loopback,
//! link-local, private, unique-local, shared (CGNAT), multicast, broadcast,
//! documentation, reserved or unspecified, including those addresses embedded in
//! IPv6 (IPv4-mapped, NAT64). The check runs twice: at push time on what the host
//! resolves to (a clear 422), and at connect time on the address actually dialled
//! ([`GuardedResolver`]), so a name that resolves elsewhere later (DNS rebinding)
//! is still refused. `http.callback_allow_private = true` turns both off for on-prem
//! receivers and the tests.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// Whether a callback may be sent to `ip`.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    let special = ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_multicast()
        || ip.is_broadcast()
        || ip.is_documentation()
        || a == 0 // "this network"
        || (a == 100 && (64..128).contains(&b)) // shared address space (CGNAT)
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 198 && (b == 18 || b == 19)) // benchmarking
        || a >= 240; // reserved
    !special
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return is_public_v4(v4);
    }
    let segments = ip.segments();
    // NAT64 (64:ff9b::/96) reaches the embedded IPv4 address.
    if segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        let [a, b] = segments[6].to_be_bytes();
        let [c, d] = segments[7].to_be_bytes();
        return is_public_v4(Ipv4Addr::new(a, b, c, d));
    }
    let special = ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        || (segments[0] & 0xfe00) == 0xfc00 // unique local
        || (segments[0] & 0xffc0) == 0xfe80 // link-local
        || (segments[0] & 0xffc0) == 0xfec0 // site-local (deprecated)
        || (segments[0] == 0x2001 && segments[1] == 0x0db8) // documentation
        || segments[..6] == [0, 0, 0, 0, 0, 0]; // IPv4-compatible (deprecated)
    !special
}

/// Why a callback URL is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("must be an http:// or https:// URL")]
    NotHttp,
    #[error(
        "{host} resolves to {ip}, a private or internal address; callbacks go only to public addresses (http.callback_allow_private lets an on-prem bridge reach its own network)"
    )]
    Private { host: String, ip: IpAddr },
    #[error("cannot resolve {host}: {reason}")]
    Unresolvable { host: String, reason: String },
}

/// Checks `url` where it points now: an IP literal as written, a name by resolving it.
pub async fn check_url(url: &str) -> Result<(), Refused> {
    let parsed = reqwest::Url::parse(url).map_err(|_| Refused::NotHttp)?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(Refused::NotHttp);
    }
    let host = parsed.host_str().ok_or(Refused::NotHttp)?.to_owned();
    let port = parsed.port_or_known_default().unwrap_or(80);
    let addrs: Vec<IpAddr> = match parsed.host() {
        Some(url::Host::Ipv4(ip)) => vec![IpAddr::V4(ip)],
        Some(url::Host::Ipv6(ip)) => vec![IpAddr::V6(ip)],
        _ => tokio::net::lookup_host((host.as_str(), port))
            .await
            .map_err(|e| Refused::Unresolvable { host: host.clone(), reason: e.to_string() })?
            .map(|a| a.ip())
            .collect(),
    };
    match addrs.into_iter().find(|ip| !is_public(*ip)) {
        Some(ip) => Err(Refused::Private { host, ip }),
        None => Ok(()),
    }
}

/// The callback client's DNS: resolves as usual, then drops every address that is not
/// public, failing when none is left, so the connection can only go where the push
/// check allowed. (An IP literal never reaches a resolver: the deliverer checks those
/// itself before each attempt.)
pub struct GuardedResolver;

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let all: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let public: Vec<SocketAddr> = all.iter().copied().filter(|a| is_public(a.ip())).collect();
            if public.is_empty() {
                let ip = all.first().map(|a| a.ip()).unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED));
                return Err(Box::new(Refused::Private { host, ip }) as Box<dyn std::error::Error + Send + Sync>);
            }
            Ok(Box::new(public.into_iter()) as Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn internal_addresses_are_refused() {
        for internal in [
            "127.0.0.1",
            "127.8.9.10",
            "10.0.0.1",
            "172.16.5.4",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "224.0.0.1",
            "255.255.255.255",
            "240.0.0.1",
            "192.0.0.8",
            "198.18.0.1",
            "::1",
            "::",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:10.1.2.3",
            "64:ff9b::a9fe:a9fe",
            "2001:db8::1",
            "::127.0.0.1",
        ] {
            assert!(!is_public(ip(internal)), "{internal} must be refused");
        }
    }

    #[test]
    fn public_addresses_are_allowed() {
        for public in ["1.1.1.1", "93.184.215.14", "2606:4700:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808"] {
            assert!(is_public(ip(public)), "{public} must be allowed");
        }
    }

    #[tokio::test]
    async fn urls_are_checked_on_what_they_point_at() {
        assert_eq!(check_url("ftp://example.com/x").await, Err(Refused::NotHttp));
        assert_eq!(check_url("not a url").await, Err(Refused::NotHttp));
        assert_eq!(
            check_url("http://169.254.169.254/latest/meta-data").await,
            Err(Refused::Private { host: "169.254.169.254".into(), ip: ip("169.254.169.254") })
        );
        assert_eq!(check_url("http://[::1]:5432/").await, Err(Refused::Private { host: "[::1]".into(), ip: ip("::1") }));
        // A name is judged by what it resolves to.
        assert!(matches!(check_url("http://localhost:22/").await, Err(Refused::Private { .. })));
        assert_eq!(check_url("https://93.184.215.14/hook").await, Ok(()));
    }

    #[tokio::test]
    async fn the_resolver_never_hands_out_an_internal_address() {
        let refused = GuardedResolver.resolve("localhost".parse().unwrap()).await;
        let error = refused.err().expect("localhost resolves only to loopback").to_string();
        assert!(error.starts_with("localhost resolves to "), "{error}");
    }
}
