//! The metrics endpoint (`capture --metrics`, `monitor`): a listener served by a few threads of its own that
//! answer every `GET /metrics` with the exposition the capture last published (once a second). Scrapes,
//! however many and however slow, never reach the engine; at most [`WORKERS`] are answered at a time, each
//! from the one shared copy of the text: its memory is that copy and a request head per worker, whatever the
//! clients do (a client that sends nothing holds one worker for [`CLIENT_TIMEOUT`] at most).
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::report::metrics::CONTENT_TYPE;

/// The longest request head read; the rest of a longer one is not.
const HEAD_MAX: usize = 8192;
/// How long a client may take to send its request or read the answer.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(2);
/// Connections answered at once.
pub const WORKERS: usize = 4;

/// The text served: replaced whole at each publication, shared by the answers under way.
type Shared = Arc<Mutex<Arc<str>>>;

/// Where the capture publishes the text the endpoint serves.
#[derive(Debug, Clone)]
pub struct Endpoint {
    text: Shared,
    addr: SocketAddr,
}

impl Endpoint {
    /// Listens on `addr` and serves from a thread of its own until the process ends; before the first
    /// publication it serves an empty exposition.
    pub fn serve(addr: SocketAddr) -> io::Result<Endpoint> {
        let listener = TcpListener::bind(addr)?;
        let addr = listener.local_addr()?;
        let text: Shared = Arc::new(Mutex::new(Arc::from("# EOF\n")));
        for _ in 0..WORKERS {
            let listener = listener.try_clone()?;
            let served = Arc::clone(&text);
            std::thread::Builder::new()
                .name("metrics".into())
                .stack_size(256 * 1024)
                .spawn(move || {
                    for stream in listener.incoming().flatten() {
                        // A client that fails is that client's problem.
                        let _ = answer(stream, &served);
                    }
                })?;
        }
        Ok(Endpoint { text, addr })
    }

    /// The address it listens on (the port the system chose for port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn publish(&self, text: String) {
        if let Ok(mut t) = self.text.lock() {
            *t = Arc::from(text);
        }
    }
}

fn answer(mut stream: TcpStream, text: &Mutex<Arc<str>>) -> io::Result<()> {
    stream.set_read_timeout(Some(CLIENT_TIMEOUT))?;
    stream.set_write_timeout(Some(CLIENT_TIMEOUT))?;
    let head = read_head(&mut stream)?;
    let line = head.lines().next().unwrap_or("");
    let mut words = line.split(' ');
    let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    let (status, body, kind) = match (method, path) {
        ("GET" | "HEAD", "/metrics") => {
            let body = text
                .lock()
                .map(|t| Arc::clone(&t))
                .unwrap_or_else(|_| Arc::from(""));
            ("200 OK", body, CONTENT_TYPE)
        }
        ("GET" | "HEAD", _) => (
            "404 Not Found",
            Arc::from("metrics are at /metrics\n"),
            "text/plain",
        ),
        _ => (
            "405 Method Not Allowed",
            Arc::from("GET /metrics\n"),
            "text/plain",
        ),
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    if method != "HEAD" {
        stream.write_all(body.as_bytes())?;
    }
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

    /// A storm: clients that connect and say nothing hold fewer workers than there are, while 16 clients
    /// scrape a 2 MB exposition 8 times each and another publication lands meanwhile: every scrape gets a
    /// whole exposition, the one published before or the one after.
    #[test]
    fn a_scrape_storm_gets_whole_expositions() {
        let e = Endpoint::serve("127.0.0.1:0".parse().unwrap()).unwrap();
        let old = format!("{}# EOF\n", "x_total 1\n".repeat(200_000));
        let new = format!("{}# EOF\n", "y_total 2\n".repeat(200_000));
        e.publish(old.clone());
        let silent: Vec<TcpStream> = (0..WORKERS - 1)
            .map(|_| TcpStream::connect(e.addr()).unwrap())
            .collect();
        let addr = e.addr();
        let scrapers: Vec<_> = (0..16)
            .map(|_| {
                std::thread::spawn(move || {
                    (0..8)
                        .map(|_| {
                            let r = get(addr, "GET /metrics HTTP/1.1\r\n\r\n");
                            let body = r.split_once("\r\n\r\n").map(|(_, b)| b.to_string());
                            body.unwrap_or_default()
                        })
                        .collect::<Vec<String>>()
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(50));
        e.publish(new.clone());
        let bodies: Vec<String> = scrapers
            .into_iter()
            .flat_map(|s| s.join().unwrap())
            .collect();
        drop(silent);
        assert_eq!(bodies.len(), 128);
        assert!(bodies.iter().all(|b| *b == old || *b == new));
        assert_eq!(
            get(addr, "GET /metrics HTTP/1.1\r\n\r\n")
                .split_once("\r\n\r\n")
                .unwrap()
                .1,
            new
        );
    }
}
