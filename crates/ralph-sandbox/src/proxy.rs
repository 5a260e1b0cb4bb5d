//! ralph's proxy on 127.0.0.1: the one TCP port a confined process may connect to (beside
//! listed local ports). It reads one request head: `CONNECT host:port` (HTTPS, any TLS, any
//! protocol) or an HTTP request in absolute form (`GET http://host:port/...`), lets it through
//! when the host is listed, and then only copies bytes both ways (`copy_bidirectional`): it
//! keeps nothing and looks at nothing past the head. A refused connection gets a 403 and is
//! kept as a [`Denial`] for the caller's events.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

/// The longest request head read; a longer one is refused.
const MAX_HEAD: usize = 16 * 1024;

/// Denials kept between two [`Proxy::take_denials`]; more are only counted.
pub(crate) const KEPT_DENIALS: usize = 1000;

/// A connection the proxy refused: the host and port asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    /// The host as asked for.
    pub host: String,
    /// The port.
    pub port: u16,
}

/// The refusals since the last look, and how many were only counted.
#[derive(Debug, Default)]
struct Denials {
    kept: Vec<Denial>,
    more: u64,
}

/// The running proxy; dropping it ends it and every connection through it.
#[derive(Debug)]
pub(crate) struct Proxy {
    port: u16,
    denials: Arc<Mutex<Denials>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A listed host: a name (or address) and, when written, one port.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Allowed {
    host: String,
    port: Option<u16>,
}

/// `host`, `host:port` or `[v6]:port`, as validated by the frontmatter.
fn split_host(entry: &str) -> (String, Option<u16>) {
    if let Some(rest) = entry.strip_prefix('[') {
        if let Some((host, after)) = rest.split_once(']') {
            let port = after.strip_prefix(':').and_then(|p| p.parse().ok());
            return (host.to_ascii_lowercase(), port);
        }
    }
    match entry.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') => (host.to_ascii_lowercase(), port.parse().ok()),
        _ => (entry.to_ascii_lowercase(), None),
    }
}

/// Whether `host` names this machine.
fn is_local(host: &str) -> bool {
    host == "localhost" || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The ports of listed local hosts (`127.0.0.1:8080`, `localhost:3000`): a program that does
/// not use the proxy for this machine connects to them directly.
pub(crate) fn local_ports(hosts: &[String]) -> Vec<u16> {
    hosts
        .iter()
        .map(|entry| split_host(entry))
        .filter(|(host, _)| is_local(host))
        .filter_map(|(_, port)| port)
        .collect()
}

impl Proxy {
    /// Listens on 127.0.0.1 (a port the system picks) and serves on the current runtime.
    pub(crate) fn start(hosts: Vec<String>) -> std::io::Result<Self> {
        let listener = std::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))?;
        listener.set_nonblocking(true)?;
        let port = listener.local_addr()?.port();
        let listener = TcpListener::from_std(listener)?;
        let allowed: Arc<[Allowed]> = hosts
            .iter()
            .map(|entry| {
                let (host, port) = split_host(entry);
                Allowed { host, port }
            })
            .collect();
        let denials = Arc::new(Mutex::new(Denials::default()));
        let task = tokio::spawn(serve(listener, allowed, Arc::clone(&denials)));
        Ok(Self {
            port,
            denials,
            task,
        })
    }

    /// The port it listens on, at 127.0.0.1.
    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    /// The refusals since the last call, and how many more there were.
    pub(crate) fn take_denials(&self) -> (Vec<Denial>, u64) {
        let mut denials = self
            .denials
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let taken = std::mem::take(&mut *denials);
        (taken.kept, taken.more)
    }
}

/// Accepts connections until dropped; each is served on a task of its own, ended with it.
async fn serve(listener: TcpListener, allowed: Arc<[Allowed]>, denials: Arc<Mutex<Denials>>) {
    let mut connections = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                if let Ok((client, _)) = accepted {
                    let _ = client.set_nodelay(true);
                    connections.spawn(serve_one(client, Arc::clone(&allowed), Arc::clone(&denials)));
                }
            }
            // Reaps finished connections so the set stays as large as what is open.
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

/// The request head's target: where the client wants to go, and what to send there first.
struct Target {
    host: String,
    port: u16,
    /// `CONNECT`: answer 200 and send nothing; otherwise the head to send, in origin form.
    forward: Option<Vec<u8>>,
}

async fn serve_one(mut client: TcpStream, allowed: Arc<[Allowed]>, denials: Arc<Mutex<Denials>>) {
    let mut head = Vec::with_capacity(1024);
    let end = loop {
        if let Some(end) = head.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
        if head.len() >= MAX_HEAD {
            return reply(&mut client, "431 Request Header Fields Too Large", "").await;
        }
        match client.read_buf(&mut head).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    };
    let Some(target) = target(&head[..end]) else {
        return reply(
            &mut client,
            "400 Bad Request",
            "ralph's proxy: not a proxy request\n",
        )
        .await;
    };
    let listed = allowed.iter().any(|a| {
        a.host.eq_ignore_ascii_case(&target.host) && a.port.is_none_or(|p| p == target.port)
    });
    if !listed {
        record(&denials, &target);
        let body = format!(
            "ralph's sandbox does not allow {}:{} (add it to sandbox.network)\n",
            target.host, target.port
        );
        return reply(&mut client, "403 Forbidden", &body).await;
    }
    let Ok(mut upstream) = TcpStream::connect((target.host.as_str(), target.port)).await else {
        return reply(
            &mut client,
            "502 Bad Gateway",
            "ralph's proxy: cannot connect\n",
        )
        .await;
    };
    let _ = upstream.set_nodelay(true);
    let sent = match &target.forward {
        None => {
            client
                .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .await
        }
        Some(rewritten) => upstream.write_all(rewritten).await,
    };
    // What the client sent after the head belongs to the host.
    if sent.is_err() || upstream.write_all(&head[end..]).await.is_err() {
        return;
    }
    drop(head);
    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
}

/// Keeps a refusal for the caller, or counts it past [`KEPT_DENIALS`].
fn record(denials: &Mutex<Denials>, target: &Target) {
    let mut kept = denials
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if kept.kept.len() < KEPT_DENIALS {
        kept.kept.push(Denial {
            host: target.host.clone(),
            port: target.port,
        });
    } else {
        kept.more += 1;
    }
}

async fn reply(client: &mut TcpStream, status: &str, body: &str) {
    let text = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: \
         close\r\n\r\n{body}",
        body.len()
    );
    let _ = client.write_all(text.as_bytes()).await;
    let _ = client.shutdown().await;
}

/// Reads a request head: `CONNECT host:port`, or a request in absolute form, rewritten to
/// origin form for the host. A later request on the same connection goes to the same host,
/// whatever it names: nothing reaches a host that was not allowed.
fn target(head: &[u8]) -> Option<Target> {
    let text = std::str::from_utf8(head).ok()?;
    let (line, rest) = text.split_once("\r\n")?;
    let mut words = line.split(' ');
    let (method, uri, version) = (words.next()?, words.next()?, words.next()?);
    if method.eq_ignore_ascii_case("CONNECT") {
        let (host, port) = split_host(uri);
        return Some(Target {
            host,
            port: port?,
            forward: None,
        });
    }
    let after = uri.strip_prefix("http://")?;
    let (authority, path) = match after.find('/') {
        Some(at) => after.split_at(at),
        None => (after, "/"),
    };
    let (host, port) = split_host(authority);
    let forward = format!("{method} {path} {version}\r\n{rest}").into_bytes();
    Some(Target {
        host,
        port: port.unwrap_or(80),
        forward: Some(forward),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connect_and_an_absolute_request_name_their_host() {
        let connect = target(b"CONNECT api.example.com:443 HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        assert_eq!(
            (connect.host.as_str(), connect.port),
            ("api.example.com", 443)
        );
        assert!(connect.forward.is_none());
        let get = target(b"GET http://127.0.0.1:8080/v1/x?y HTTP/1.1\r\nHost: h\r\n\r\n").unwrap();
        assert_eq!((get.host.as_str(), get.port), ("127.0.0.1", 8080));
        assert_eq!(
            get.forward.unwrap(),
            b"GET /v1/x?y HTTP/1.1\r\nHost: h\r\n\r\n"
        );
        let bare = target(b"GET http://Example.com HTTP/1.1\r\n\r\n").unwrap();
        assert_eq!((bare.host.as_str(), bare.port), ("example.com", 80));
        assert!(target(b"GET /x HTTP/1.1\r\n\r\n").is_none());
        let v6 = target(b"CONNECT [::1]:99 HTTP/1.1\r\n\r\n").unwrap();
        assert_eq!((v6.host.as_str(), v6.port), ("::1", 99));
    }

    #[test]
    fn only_listed_local_ports_are_open_directly() {
        let hosts = [
            "api.anthropic.com",
            "127.0.0.1:8080",
            "localhost:3000",
            "example.com:22",
            "[::1]:7",
        ]
        .map(str::to_owned);
        assert_eq!(local_ports(&hosts), [8080, 3000, 7]);
    }

    #[tokio::test]
    async fn a_listed_host_is_reached_and_another_is_refused_and_kept() {
        let server = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = server.local_addr().unwrap().port();
        tokio::spawn(async move {
            let (mut socket, _) = server.accept().await.unwrap();
            let mut buf = vec![0; 1024];
            let n = socket.read(&mut buf).await.unwrap();
            socket.write_all(&buf[..n]).await.unwrap();
        });
        let proxy = Proxy::start(vec![format!("127.0.0.1:{port}")]).unwrap();
        let mut client = TcpStream::connect(("127.0.0.1", proxy.port()))
            .await
            .unwrap();
        let request = format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\nping");
        client.write_all(request.as_bytes()).await.unwrap();
        let mut got = Vec::new();
        client.read_to_end(&mut got).await.unwrap();
        assert_eq!(
            String::from_utf8_lossy(&got),
            "HTTP/1.1 200 Connection established\r\n\r\nping"
        );
        let mut denied = TcpStream::connect(("127.0.0.1", proxy.port()))
            .await
            .unwrap();
        denied
            .write_all(b"GET http://127.0.0.1:1/ HTTP/1.1\r\n\r\n")
            .await
            .unwrap();
        let mut answer = String::new();
        denied.read_to_string(&mut answer).await.unwrap();
        assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
        let (denials, more) = proxy.take_denials();
        assert_eq!(
            denials,
            [Denial {
                host: "127.0.0.1".to_owned(),
                port: 1
            }]
        );
        assert_eq!(more, 0);
        assert!(proxy.take_denials().0.is_empty());
    }
}
