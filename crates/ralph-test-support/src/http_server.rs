//! The HTTP/1.1 core of the tests' fake servers (`model_server`, `github_server`, ...): a
//! listener on a free port of 127.0.0.1, one thread per connection, one request and one response
//! per connection (`connection: close`, which every client the tests drive handles). What to
//! answer is the server's business; this reads the request (line, headers, a body by
//! `content-length` or chunked) and writes the reply. Standard library only. `ralph-rest`'s
//! tests use it alone.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use serde_json::Value;

/// One request a server received.
#[derive(Debug, Clone)]
pub struct Request {
    /// `GET`, `POST`, ...
    pub method: String,
    /// The path with its query, as sent.
    pub path: String,
    /// Names in lower case, in the order sent.
    pub headers: Vec<(String, String)>,
    /// The body, decoded from chunks if it came in them (lossy UTF-8).
    pub body: String,
    /// When its request line arrived.
    pub at: std::time::Instant,
}

impl Request {
    /// The body as JSON (`Null` when it is not).
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }

    /// The first header named `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// `METHOD path`.
    pub fn line(&self) -> String {
        format!("{} {}", self.method, self.path)
    }
}

/// One HTTP response.
#[derive(Debug, Clone)]
pub struct Reply {
    /// The HTTP status.
    pub status: u16,
    /// Headers beside `content-length` and `connection`.
    pub headers: Vec<(String, String)>,
    /// The whole body.
    pub body: Vec<u8>,
    /// How the body ends: whole, or after its first bytes.
    pub ending: Ending,
}

/// How a reply's body ends (its `content-length` always says the whole body).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// Written whole.
    Whole,
    /// The first `n` bytes are written, then nothing more: the connection stays open, silent,
    /// as a model that stopped mid-stream leaves it (for ten minutes).
    Stall(usize),
    /// The first `n` bytes are written, then the connection is closed: a stream cut short.
    Cut(usize),
}

impl Reply {
    /// A JSON body with `status`.
    pub fn json(status: u16, body: &Value) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.to_string().into_bytes(),
            ending: Ending::Whole,
        }
    }

    /// A server-sent event stream: each `(event name, data)` in order (no name: data only).
    pub fn sse(events: &[(Option<&str>, Value)]) -> Self {
        let mut body = String::new();
        for (name, data) in events {
            if let Some(name) = name {
                body.push_str(&format!("event: {name}\n"));
            }
            body.push_str(&format!("data: {data}\n\n"));
        }
        Self {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            body: body.into_bytes(),
            ending: Ending::Whole,
        }
    }

    /// The same reply stopping after its first server-sent event (or its first `n` bytes,
    /// when it has none), as `ending` says: `Ending::Stall(0)` or `Ending::Cut(0)`.
    pub fn after_first_event(mut self, ending: Ending) -> Self {
        let first = memchr_event_end(&self.body);
        self.ending = match ending {
            Ending::Whole => Ending::Whole,
            Ending::Stall(_) => Ending::Stall(first),
            Ending::Cut(_) => Ending::Cut(first),
        };
        self
    }

    /// The same reply with one more header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }
}

/// What a server answers: given its port and a request, the reply, or `None` to close the
/// connection with no answer at all.
type Answer = dyn Fn(u16, Request) -> Option<Reply> + Send + Sync;

/// A listening server; dropping it stops it listening (connections already accepted finish).
pub struct HttpServer {
    port: u16,
    stopping: Arc<AtomicBool>,
    accepting: Option<JoinHandle<()>>,
}

impl HttpServer {
    /// A server on a free port of 127.0.0.1 answering every request with `answer`.
    pub fn start(answer: impl Fn(u16, Request) -> Option<Reply> + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let port = listener.local_addr().unwrap().port();
        let stopping = Arc::new(AtomicBool::new(false));
        let answer: Arc<Answer> = Arc::new(answer);
        let stop = Arc::clone(&stopping);
        let accepting = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let answer = Arc::clone(&answer);
                std::thread::spawn(move || {
                    let _ = serve(stream, port, &*answer);
                });
            }
        });
        Self {
            port,
            stopping,
            accepting: Some(accepting),
        }
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.stopping.store(true, Ordering::SeqCst);
        // `accept` returns only for a connection: one of our own wakes it to see the flag.
        if TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
            if let Some(accepting) = self.accepting.take() {
                let _ = accepting.join();
            }
        }
    }
}

fn serve(stream: TcpStream, port: u16, answer: &Answer) -> std::io::Result<()> {
    let request = read_request(&mut BufReader::new(stream.try_clone()?))?;
    match answer(port, request) {
        Some(reply) => write_reply(stream, &reply),
        None => Ok(()),
    }
}

fn read_request(reader: &mut impl BufRead) -> std::io::Result<Request> {
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let arrived = std::time::Instant::now();
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_owned();
    let path = parts.next().unwrap_or_default().to_owned();
    let mut headers = Vec::new();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 || line.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            headers.push((name.trim().to_lowercase(), value.trim().to_owned()));
        }
    }
    let mut request = Request {
        method,
        path,
        headers,
        body: String::new(),
        at: arrived,
    };
    let mut body = Vec::new();
    if request
        .header("transfer-encoding")
        .is_some_and(|v| v.contains("chunked"))
    {
        loop {
            line.clear();
            reader.read_line(&mut line)?;
            let size = usize::from_str_radix(line.trim(), 16).unwrap_or(0);
            // Each chunk ends in CRLF, the last (empty) one too.
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk)?;
            if size == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..size]);
        }
    } else if let Some(length) = request
        .header("content-length")
        .and_then(|v| v.parse().ok())
    {
        body.resize(length, 0);
        reader.read_exact(&mut body)?;
    }
    request.body = String::from_utf8_lossy(&body).into_owned();
    Ok(request)
}

/// Where the body's first server-sent event ends (after its blank line), or the whole body.
fn memchr_event_end(body: &[u8]) -> usize {
    body.windows(2)
        .position(|w| w == b"\n\n")
        .map_or(body.len(), |i| i + 2)
}

fn write_reply(mut stream: TcpStream, reply: &Reply) -> std::io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {} {}\r\ncontent-length: {}\r\nconnection: close\r\n",
        reply.status,
        reason(reply.status),
        reply.body.len()
    );
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    match reply.ending {
        Ending::Whole => stream.write_all(&reply.body)?,
        Ending::Stall(n) => {
            stream.write_all(&reply.body[..n.min(reply.body.len())])?;
            stream.flush()?;
            std::thread::sleep(std::time::Duration::from_secs(600));
        }
        Ending::Cut(n) => stream.write_all(&reply.body[..n.min(reply.body.len())])?,
    }
    stream.flush()
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        529 => "Overloaded",
        _ => "Status",
    }
}

/// The value of `name` in `path`'s query string, percent-decoded (`+` as a space).
pub(crate) fn query(path: &str, name: &str) -> Option<String> {
    let (_, query) = path.split_once('?')?;
    query.split('&').find_map(|pair| {
        let (key, value) = pair.split_once('=')?;
        (key == name).then(|| decode(value))
    })
}

fn decode(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let Ok(b) = u8::from_str_radix(&value[i + 1..i + 3], 16) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(if bytes[i] == b'+' { b' ' } else { bytes[i] });
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
