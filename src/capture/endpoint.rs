//! The metrics endpoint (`capture --metrics`, `monitor`): a listener on a thread of its own that answers
//! every `GET /metrics` with the exposition the capture last published (once a second). Scrapes, however
//! many and however slow, never reach the engine, and they are answered one at a time: its memory is one
//! copy of the text and one request head, whatever the clients do.
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::report::metrics::CONTENT_TYPE;

/// The longest request head read; the rest of a longer one is not.
const HEAD_MAX: usize = 8192;
/// How long a client may take to send its request or read the answer.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(2);

/// Where the capture publishes the text the endpoint serves.
#[derive(Debug, Clone)]
pub struct Endpoint {
    text: Arc<Mutex<String>>,
    addr: SocketAddr,
}

impl Endpoint {
    /// Listens on `addr` and serves from a thread of its own until the process ends; before the first
    /// publication it serves an empty exposition.
    pub fn serve(addr: SocketAddr) -> io::Result<Endpoint> {
        let listener = TcpListener::bind(addr)?;
        let addr = listener.local_addr()?;
        let text = Arc::new(Mutex::new("# EOF\n".to_string()));
        let served = Arc::clone(&text);
        std::thread::Builder::new()
            .name("metrics".into())
            .spawn(move || {
                for stream in listener.incoming().flatten() {
                    // A client that fails is that client's problem.
                    let _ = answer(stream, &served);
                }
            })?;
        Ok(Endpoint { text, addr })
    }

    /// The address it listens on (the port the system chose for port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn publish(&self, text: String) {
        if let Ok(mut t) = self.text.lock() {
            *t = text;
        }
    }
}

fn answer(mut stream: TcpStream, text: &Mutex<String>) -> io::Result<()> {
    stream.set_read_timeout(Some(CLIENT_TIMEOUT))?;
    stream.set_write_timeout(Some(CLIENT_TIMEOUT))?;
    let head = read_head(&mut stream)?;
    let line = head.lines().next().unwrap_or("");
    let mut words = line.split(' ');
    let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    let (status, body, kind) = match (method, path) {
        ("GET" | "HEAD", "/metrics") => {
            let body = text.lock().map(|t| t.clone()).unwrap_or_default();
            ("200 OK", body, CONTENT_TYPE)
        }
        ("GET" | "HEAD", _) => (
            "404 Not Found",
            "metrics are at /metrics\n".into(),
            "text/plain",
        ),
        _ => (
            "405 Method Not Allowed",
            "GET /metrics\n".into(),
            "text/plain",
        ),
    };
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    if method != "HEAD" {
        out.push_str(&body);
    }
    stream.write_all(out.as_bytes())?;
    stream.flush()
}

/// The request head, up to its blank line or [`HEAD_MAX`] bytes.
fn read_head(stream: &mut TcpStream) -> io::Result<String> {
    let mut head = Vec::with_capacity(512);
    let mut buf = [0u8; 1024];
    while head.len() < HEAD_MAX && !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut buf)?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buf[..n]);
    }
    Ok(String::from_utf8_lossy(&head).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(addr: SocketAddr, request: &str) -> String {
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(request.as_bytes()).unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    }

    #[test]
    fn serves_what_was_published_at_metrics_and_nothing_elsewhere() {
        let e = Endpoint::serve("127.0.0.1:0".parse().unwrap()).unwrap();
        e.publish("x_total 1\n# EOF\n".into());
        let ok = get(e.addr(), "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(ok.starts_with("HTTP/1.1 200 OK\r\n"), "{ok}");
        assert!(
            ok.contains(&format!("Content-Type: {CONTENT_TYPE}\r\n")),
            "{ok}"
        );
        assert!(ok.ends_with("\r\n\r\nx_total 1\n# EOF\n"), "{ok}");
        assert!(get(e.addr(), "GET / HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 404"));
        assert!(get(e.addr(), "POST /metrics HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 405"));
        // A client that sends nothing and goes does not stop the endpoint.
        drop(TcpStream::connect(e.addr()).unwrap());
        assert!(get(e.addr(), "GET /metrics?x=1 HTTP/1.0\r\n\r\n").contains("x_total 1"));
    }
}
