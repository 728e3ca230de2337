//! `gen client HOST` and `gen server`: the two-host run. The client is the requester (as in `gen loopback`),
//! the server the responder; they agree on QPNs, PSNs, GIDs, the path MTU, R_Keys and buffer addresses over
//! TCP (src/generator/oob.rs) and the server reports what it received and found in its memory at the end.

use std::io::{self, BufReader, BufWriter};
use std::net::{Ipv6Addr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use sideway::ibverbs::address::Gid;
use sideway::ibverbs::device::DeviceList;
use sideway::ibverbs::queue_pair::QueuePair;

use rocescope::report::format::error_line;

use super::config::{ClientConfig, ConfigError, PortConfig, ServerConfig, WorkConfig};
use super::oob::{self, Invalid, OobError};
use super::output::print_server_report;
use super::pattern;
use super::plan::{self, MtuTooLarge, PathEnd};
use super::port_counters::PortReading;
use super::records::{
    CheckStatus, ClientQp, Connect, DataCheck, Done, Endpoint, Hello, Msg, Op, Report, ServerQp,
    ServerReport, Summary, Welcome,
};
use super::run::{self, Pair, Peer, RemoteQp, Setup};
use super::verbs::{
    self, ConnectParams, Queues, Side, VerbsError, connect, endpoint, open_side, post_recv,
};

/// What ends a `gen client` run before its report.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("cannot resolve '{host}'")]
    Resolve {
        host: String,
        #[source]
        source: io::Error,
    },
    /// `last`: the last connect's error, in the middle of the line before what to do (not a source).
    #[error(
        "cannot reach gen server at {host}:{port} ({}): start `rocescope gen server` there first, or give \
         its port with -p",
        .last.as_ref().map_or("no address".to_string(), |e| e.to_string())
    )]
    Unreachable {
        host: String,
        port: u16,
        last: Option<io::Error>,
    },
    /// The exchange with the server: what it said, or did not say.
    #[error("gen server {host}:{port}")]
    Server {
        host: String,
        port: u16,
        #[source]
        source: OobError,
    },
    #[error("gen server {host}:{port}")]
    Socket {
        host: String,
        port: u16,
        #[source]
        source: io::Error,
    },
    /// A GID of the server's offer that is not one.
    #[error(transparent)]
    Offer(#[from] Invalid),
    #[error(transparent)]
    Mtu(#[from] MtuTooLarge),
    #[error(transparent)]
    Verbs(#[from] VerbsError),
    #[error(transparent)]
    Config(#[from] ConfigError),
}

/// What ends one client's run on the server (said to the client when it is still there).
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error(transparent)]
    Socket(io::Error),
    #[error(transparent)]
    Oob(#[from] OobError),
    /// The client asked for what this server refuses.
    #[error(transparent)]
    Refused(#[from] Invalid),
    #[error(transparent)]
    Mtu(#[from] MtuTooLarge),
    #[error(transparent)]
    Verbs(#[from] VerbsError),
    #[error("the server was interrupted")]
    Interrupted,
    /// Nothing arrived for --timeout seconds; `done`: the client had said it is done.
    #[error(
        "nothing for {timeout:.1} s: {received} messages received{}",
        if *.done { ", fewer than the client posted" } else { ", and the client has not said it is done" }
    )]
    Stalled {
        timeout: f64,
        received: u64,
        done: bool,
    },
    #[error("the client reported: {message}")]
    ClientReported { message: String },
    #[error("unexpected message during the run")]
    Unexpected,
    #[error(
        "{dev}: QP {qpn:#x}: receive {wr_id} completed with {} (status {status})",
        plan::wc_status_name(*.status)
    )]
    ReceiveStatus {
        dev: String,
        qpn: u32,
        wr_id: u64,
        status: u32,
    },
    #[error("receive completion out of order: wr_id {wr_id}, expected {expected}")]
    ReceiveOrder { wr_id: u64, expected: u64 },
}

/// Why `gen server` stops serving.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// `why` is in the middle of the line, before what to do: not a source.
    #[error("cannot listen on {bind}:{port}: {why} (another gen server? choose another with -p)")]
    Listen {
        bind: String,
        port: u16,
        why: io::Error,
    },
    #[error("cannot listen")]
    Nonblocking(#[source] io::Error),
    #[error(transparent)]
    Verbs(#[from] VerbsError),
    #[error("accept")]
    Accept(#[source] io::Error),
}

fn gid_of(text: &str) -> Result<Gid, Invalid> {
    text.parse::<Ipv6Addr>()
        .map(Gid::from)
        .map_err(|_| Invalid::Gid {
            text: text.to_string(),
        })
}

/// Tells the peer why this end gives up (best effort: it may be gone), and hands the reason on.
fn fail<E: std::error::Error>(wr: &mut BufWriter<TcpStream>, e: E) -> E {
    let message = error_line(&e);
    let _ = oob::send(wr, &Msg::Error { message });
    e
}

fn connect_params(c: &Connect, port: u8) -> ConnectParams {
    ConnectParams {
        port,
        mtu: c.mtu,
        timeout: c.qp_timeout,
        rd_atomic: c.rd_atomic,
        tclass: c.tclass,
        flow_label: 0,
        retry_count: c.retry_count,
        rnr_retry: c.rnr_retry,
        min_rnr_timer: super::verbs::MIN_RNR_TIMER,
    }
}

/// `gen client HOST`.
pub fn client(cfg: &ClientConfig, stop: &AtomicBool) -> Result<Report, ClientError> {
    let w = &cfg.work;
    w.check_fault(false)?;
    let buf_len = w.buffer_len(u64::from(w.depth))?;
    let list = verbs::devices()?;
    let dev = verbs::device_name(&list, cfg.device.as_deref(), &cfg.port)?;
    let q = Queues {
        send: w.depth,
        recv: 1,
        cqe: w.depth * 2 + 2,
    };
    let mut sides = Vec::with_capacity(w.qps as usize);
    for _ in 0..w.qps {
        sides.push(open_side(&list, &dev, &cfg.port, buf_len, &q)?);
    }
    let mut server = ToServer::connect(cfg)?;
    let hello = Hello {
        version: oob::VERSION,
        op: w.op,
        size: w.message_size(),
        qps: w.qps,
        depth: w.depth,
        slots: oob::slots_for(w.op, w.message_size(), w.depth, w.iters_limit()),
        iters: w.iters_limit(),
    };
    let welcome = server.welcome(&hello, sides.len())?;
    let (setup, cp) = server.agree(cfg, &sides, &welcome)?;
    let mut pairs = server.connect_pairs(&cp, w, sides, welcome, hello.slots)?;
    server.expect("ready", |m| matches!(m, Msg::Ready).then_some(()))?;
    let mut report = run::run(&mut pairs, w, &setup, stop).map_err(|e| server.fail(e))?;
    server.summary(&mut report, &pairs);
    Ok(report)
}

fn tcp_connect(host: &str, port: u16, patience: Duration) -> Result<TcpStream, ClientError> {
    let t0 = Instant::now();
    loop {
        let addrs: Vec<_> = (host, port)
            .to_socket_addrs()
            .map_err(|source| ClientError::Resolve {
                host: host.to_string(),
                source,
            })?
            .collect();
        let mut last = None;
        for a in &addrs {
            match TcpStream::connect_timeout(a, Duration::from_secs(2)) {
                Ok(s) => return Ok(s),
                Err(e) => last = Some(e),
            }
        }
        if t0.elapsed() >= patience {
            return Err(ClientError::Unreachable {
                host: host.to_string(),
                port,
                last,
            });
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The client's out-of-band connection to `gen server`; its errors name the server.
struct ToServer {
    rd: BufReader<TcpStream>,
    wr: BufWriter<TcpStream>,
    host: String,
    port: u16,
}

impl ToServer {
    fn connect(cfg: &ClientConfig) -> Result<ToServer, ClientError> {
        let patience = Duration::from_secs_f64(cfg.connect_timeout);
        let stream = tcp_connect(&cfg.host, cfg.tcp_port, patience)?;
        let ctx = |source| ClientError::Socket {
            host: cfg.host.clone(),
            port: cfg.tcp_port,
            source,
        };
        // each reply is due within --timeout
        stream
            .set_read_timeout(Some(Duration::from_secs_f64(cfg.work.timeout)))
            .map_err(ctx)?;
        let _ = stream.set_nodelay(true);
        let rd = BufReader::new(stream.try_clone().map_err(ctx)?);
        Ok(ToServer {
            rd,
            wr: BufWriter::new(stream),
            host: cfg.host.clone(),
            port: cfg.tcp_port,
        })
    }

    /// `e` as this server's.
    fn ctx(&self, e: impl Into<OobError>) -> ClientError {
        ClientError::Server {
            host: self.host.clone(),
            port: self.port,
            source: e.into(),
        }
    }

    fn fail<E: std::error::Error>(&mut self, e: E) -> E {
        fail(&mut self.wr, e)
    }

    fn send(&mut self, m: &Msg) -> Result<(), ClientError> {
        oob::send(&mut self.wr, m).map_err(|e| self.ctx(e))
    }

    fn expect<T>(
        &mut self,
        due: &'static str,
        pick: impl FnOnce(Msg) -> Option<T>,
    ) -> Result<T, ClientError> {
        oob::expect(&mut self.rd, due, pick).map_err(|e| self.ctx(e))
    }

    /// Hello, and the server's offer for `qps` QPs.
    fn welcome(&mut self, hello: &Hello, qps: usize) -> Result<Welcome, ClientError> {
        self.send(&Msg::Hello(hello.clone()))?;
        let welcome = self.expect("welcome", |m| match m {
            Msg::Welcome(x) => Some(x),
            _ => None,
        })?;
        welcome.validate(qps).map_err(|e| {
            let e = self.ctx(e);
            self.fail(e)
        })?;
        Ok(welcome)
    }

    /// The path MTU and the QP parameters, sent to the server with the client's QPs.
    fn agree(
        &mut self,
        cfg: &ClientConfig,
        sides: &[Side],
        welcome: &Welcome,
    ) -> Result<(Setup, ConnectParams), ClientError> {
        let w = &cfg.work;
        let a = &sides[0];
        let ends = [a.path_end(), server_end(&welcome.qps[0].endpoint)];
        let (mtu, mtu_source) = plan::path_mtu(w.mtu, &ends).map_err(|e| self.fail(e))?;
        let setup = Setup {
            port: cfg.port.ib_port,
            mtu,
            mtu_source,
            rd_atomic: plan::rd_atomic(w.depth, a.max_rd_atom, welcome.max_rd_atom),
        };
        let c = Connect {
            mtu,
            rd_atomic: setup.rd_atomic,
            qp_timeout: w.qp_timeout,
            retry_count: w.retry_count,
            rnr_retry: w.rnr_retry,
            tclass: w.tclass,
            qps: sides
                .iter()
                .map(|s| ClientQp {
                    qpn: s.qp.qp_number(),
                    psn: s.sq_psn,
                    gid: Ipv6Addr::from(s.gid.gid).to_string(),
                })
                .collect(),
        };
        self.send(&Msg::Connect(c.clone()))?;
        Ok((setup, connect_params(&c, cfg.port.ib_port)))
    }

    /// Each side connected to its server QP (`slots` message slots each).
    fn connect_pairs(
        &mut self,
        cp: &ConnectParams,
        w: &WorkConfig,
        sides: Vec<Side>,
        welcome: Welcome,
        slots: u64,
    ) -> Result<Vec<Pair>, ClientError> {
        let limit = w.iters_limit().unwrap_or(u64::MAX);
        let mut pairs = Vec::with_capacity(sides.len());
        for (mut s, sq) in sides.into_iter().zip(welcome.qps) {
            let e = &sq.endpoint;
            let gid = gid_of(&e.gid).map_err(|e| self.fail(e))?;
            connect(&mut s, e.qpn, &gid, e.sq_psn, cp).map_err(|e| self.fail(e))?;
            let (bq, bpsn, ip) = (e.qpn, e.sq_psn, e.ip.clone());
            let remote = RemoteQp {
                endpoint: sq.endpoint,
                addr: sq.addr,
                rkey: sq.rkey,
                slots,
            };
            pairs.push(Pair::new(
                s,
                Peer::Remote(remote),
                bq,
                bpsn,
                ip,
                limit,
                w.depth,
            ));
        }
        Ok(pairs)
    }

    /// Done, and the server's summary merged into the report (or, failing that, the run's error).
    fn summary(&mut self, report: &mut Report, pairs: &[Pair]) {
        let done = Done {
            posted: pairs.iter().map(|p| p.posted).collect(),
            completed: pairs.iter().map(|p| p.completed).collect(),
        };
        let summary = oob::send(&mut self.wr, &Msg::Done(done)).and_then(|_| {
            oob::expect(&mut self.rd, "summary", |m| match m {
                Msg::Summary(s) => Some(s),
                _ => None,
            })
        });
        match summary {
            Ok(s) => merge_summary(report, s),
            Err(e) => {
                if report.error.is_none() {
                    report.error = Some(format!(
                        "gen server {}:{}: no summary after the run: {}",
                        self.host,
                        self.port,
                        error_line(&e)
                    ));
                }
            }
        }
    }
}

/// The server's port as one end of the path MTU choice.
fn server_end(e: &Endpoint) -> PathEnd {
    PathEnd {
        source: format!("the server's {}", e.device),
        device: format!("{} on the server", e.device),
        active_mtu: e.active_mtu,
        netdev: e.netdev.clone(),
        netdev_mtu: e.netdev_mtu,
    }
}

/// The server's findings join the client's data check; its error becomes the run's if there was none.
fn merge_summary(r: &mut Report, s: Summary) {
    let (c, sc) = (&mut r.data_check, &s.data_check);
    c.checked += sc.checked;
    c.mismatches += sc.mismatches;
    if c.first_mismatch.is_none() {
        c.first_mismatch = sc.first_mismatch.clone();
    }
    // failed over incomplete over passed
    if sc.status != CheckStatus::Passed && c.status != CheckStatus::Failed {
        c.status = sc.status;
    }
    if r.error.is_none()
        && let Some(e) = &s.error
    {
        r.error = Some(format!("gen server: {e}"));
    }
    r.server = Some(s);
    r.fail_on_data_check();
}

/// The listening socket (non-blocking, for `accept`), the device list and the device: checked now, so that
/// a bad -d is said at once, not when the first client comes.
pub(super) fn listen(cfg: &ServerConfig) -> Result<(TcpListener, DeviceList, String), ServeError> {
    let listener =
        TcpListener::bind((cfg.bind.as_str(), cfg.tcp_port)).map_err(|why| ServeError::Listen {
            bind: cfg.bind.clone(),
            port: cfg.tcp_port,
            why,
        })?;
    listener
        .set_nonblocking(true)
        .map_err(ServeError::Nonblocking)?;
    let list = verbs::devices()?;
    let dev = verbs::device_name(&list, cfg.device.as_deref(), &cfg.port)?;
    Ok((listener, list, dev))
}

/// `gen server`: serves --runs clients one after the other. Exit status 1 if any run failed.
pub fn serve(cfg: &ServerConfig, stop: &AtomicBool) -> Result<bool, ServeError> {
    let (listener, list, dev) = listen(cfg)?;
    eprintln!(
        "gen server: {dev} port {}, waiting for gen client on {}:{}",
        cfg.port.ib_port, cfg.bind, cfg.tcp_port
    );
    let mut all_ok = true;
    let mut served = 0u32;
    while cfg.runs == 0 || served < cfg.runs {
        let Some(stream) = accept(&listener, stop)? else {
            return Ok(all_ok);
        };
        served += 1;
        let client = stream
            .peer_addr()
            .map_or_else(|_| "?".to_string(), |a| a.to_string());
        let r = serve_one(cfg, &list, &dev, stream, &client, stop);
        all_ok &= r.summary.error.is_none() && r.summary.data_check.status == CheckStatus::Passed;
        print_server_report(&r, cfg.json);
    }
    Ok(all_ok)
}

/// The next client, or None once stopped.
pub(super) fn accept(
    listener: &TcpListener,
    stop: &AtomicBool,
) -> Result<Option<TcpStream>, ServeError> {
    loop {
        if stop.load(Ordering::Relaxed) {
            return Ok(None);
        }
        match listener.accept() {
            Ok((s, _)) => return Ok(Some(s)),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(50))
            }
            Err(e) => return Err(ServeError::Accept(e)),
        }
    }
}

/// One responder QP of a server run.
struct Responder {
    side: Side,
    /// The client's QPN.
    cq: u32,
    recv_posted: u64,
    received: u64,
    /// Receives to expect in all: -n, then what the client says it posted.
    expect: u64,
}

/// What a server run has found so far.
struct ServerRun {
    report: ServerReport,
    check: DataCheck,
    t0: Instant,
}

fn serve_one(
    cfg: &ServerConfig,
    list: &DeviceList,
    dev: &str,
    stream: TcpStream,
    client: &str,
    stop: &AtomicBool,
) -> ServerReport {
    serve_connection(cfg, list, dev, BufReader::new(stream), None, client, stop)
}

/// One client's run on its connection, whose Hello may have been read already (`gen agent` reads the first
/// message to tell a client from a controller).
pub fn serve_connection(
    cfg: &ServerConfig,
    list: &DeviceList,
    dev: &str,
    rd: BufReader<TcpStream>,
    hello: Option<Hello>,
    client: &str,
    stop: &AtomicBool,
) -> ServerReport {
    let mut run = ServerRun {
        report: ServerReport {
            client: client.to_string(),
            op: None,
            size: 0,
            slots: 0,
            qps: Vec::new(),
            client_qpns: Vec::new(),
            mtu: 0,
            posted_by_client: Vec::new(),
            summary: Summary {
                received: 0,
                memory_checked: 0,
                data_check: DataCheck::passed(),
                error: None,
                counters: Default::default(),
            },
            seconds: 0.0,
        },
        check: DataCheck::passed(),
        t0: Instant::now(),
    };
    let result = respond(cfg, list, dev, rd, hello, &mut run, stop);
    let mut r = run.report;
    r.seconds = run.t0.elapsed().as_secs_f64();
    r.summary.data_check = run.check;
    if let Err(e) = result {
        r.summary.error = Some(format!("client {client}: {}", error_line(&e)));
        if r.summary.data_check.status == CheckStatus::Passed {
            r.summary.data_check.status = CheckStatus::Incomplete;
        }
    }
    r
}

/// The server's side of one client run: the handshake, then the traffic.
fn respond(
    cfg: &ServerConfig,
    list: &DeviceList,
    dev: &str,
    mut rd: BufReader<TcpStream>,
    hello: Option<Hello>,
    run: &mut ServerRun,
    stop: &AtomicBool,
) -> Result<(), ServerError> {
    let writer = rd.get_ref().try_clone().map_err(ServerError::Socket)?;
    rd.get_ref()
        .set_read_timeout(Some(Duration::from_secs_f64(cfg.timeout)))
        .map_err(ServerError::Socket)?;
    let _ = writer.set_nodelay(true);
    let hello = match hello {
        Some(h) => h,
        None => oob::expect(&mut rd, "hello", |m| match m {
            Msg::Hello(h) => Some(h),
            _ => None,
        })?,
    };
    let mut serving =
        Serving::handshake(cfg, list, dev, hello, &mut rd, BufWriter::new(writer), run)?;
    let msgs = read_in_background(rd);
    serving.traffic(cfg, &msgs, run, stop)
}

/// The client's messages during the run, read on a thread of their own; the last one is the reader's error.
fn read_in_background(mut rd: BufReader<TcpStream>) -> mpsc::Receiver<Result<Msg, OobError>> {
    let (tx, msgs) = mpsc::channel();
    std::thread::spawn(move || {
        while let Ok(m) = oob::recv(&mut rd).map_err(|e| {
            let _ = tx.send(Err(e));
        }) {
            if tx.send(Ok(m)).is_err() {
                break;
            }
        }
    });
    msgs
}

/// A server run once the client's workload is known: its QPs and the writing half of the connection.
struct Serving {
    hello: Hello,
    qps: Vec<Responder>,
    wr: BufWriter<TcpStream>,
    /// The client said it is done: how many it posted and completed.
    done: Option<Done>,
    /// The port's counters from the handshake on, for the summary.
    reading: Option<PortReading>,
}

impl Serving {
    fn fail<E: std::error::Error>(&mut self, e: E) -> E {
        fail(&mut self.wr, e)
    }

    /// Hello -> Welcome, Connect -> Ready: the QPs created, connected and (SEND, WRITE with immediate)
    /// their receives posted.
    fn handshake(
        cfg: &ServerConfig,
        list: &DeviceList,
        dev: &str,
        hello: Hello,
        rd: &mut BufReader<TcpStream>,
        mut wr: BufWriter<TcpStream>,
        run: &mut ServerRun,
    ) -> Result<Serving, ServerError> {
        hello.validate().map_err(|e| fail(&mut wr, e))?;
        run.report.op = Some(hello.op);
        run.report.size = hello.size;
        run.report.slots = hello.slots;
        let qps = open_responders(&cfg.port, list, dev, &hello).map_err(|e| fail(&mut wr, e))?;
        let mut s = Serving {
            hello,
            qps,
            wr,
            done: None,
            reading: PortReading::start(dev, cfg.port.ib_port),
        };
        let port = cfg.port.ib_port;
        let welcome = Msg::Welcome(s.welcome(port));
        oob::send(&mut s.wr, &welcome)?;
        let c = oob::expect(rd, "connect", |m| match m {
            Msg::Connect(c) => Some(c),
            _ => None,
        })?;
        s.check(&c).map_err(|e| s.fail(e))?;
        run.report.mtu = c.mtu;
        s.connect(&c, port).map_err(|e| s.fail(e))?;
        run.report.client_qpns = c.qps.iter().map(|q| q.qpn).collect();
        run.report.qps = s
            .qps
            .iter()
            .zip(&c.qps)
            .map(|(r, cq)| endpoint(&r.side, port, cq.psn))
            .collect();
        oob::send(&mut s.wr, &Msg::Ready)?;
        Ok(s)
    }

    fn welcome(&self, port: u8) -> Welcome {
        Welcome {
            qps: self
                .qps
                .iter()
                .map(|r| ServerQp {
                    endpoint: endpoint(&r.side, port, 0),
                    addr: r.side.buf.addr(0),
                    rkey: r.side.mr.rkey(),
                })
                .collect(),
            max_rd_atom: self
                .qps
                .iter()
                .map(|r| r.side.max_rd_atom)
                .min()
                .unwrap_or(1),
        }
    }

    /// The client's QPs and choices, against what this server's QPs can do.
    fn check(&self, c: &Connect) -> Result<(), ServerError> {
        c.validate(self.qps.len())?;
        for r in &self.qps {
            let s = &r.side;
            plan::check_netdev_mtu(&s.name, s.gid.netdev.as_deref(), s.netdev_mtu, c.mtu)?;
        }
        Ok(())
    }

    /// Each QP's memory laid out, connected to its client QP, its receives posted.
    fn connect(&mut self, c: &Connect, port: u8) -> Result<(), ServerError> {
        let cp = connect_params(c, port);
        let h = &self.hello;
        for (r, cq) in self.qps.iter_mut().zip(&c.qps) {
            let gid = gid_of(&cq.gid)?;
            r.cq = cq.qpn;
            lay_out_memory(&mut r.side, h, cq.qpn);
            connect(&mut r.side, cq.qpn, &gid, cq.psn, &cp)?;
            while h.op.consumes_receive() && r.recv_posted < h.slots.min(r.expect) {
                post_recv(&mut r.side, r.recv_posted, h.size, h.slots as u32)?;
                r.recv_posted += 1;
            }
        }
        Ok(())
    }

    /// Receives (and checks) until the client says it is done and everything it posted arrived; then the
    /// memory check and the summary.
    fn traffic(
        &mut self,
        cfg: &ServerConfig,
        msgs: &mpsc::Receiver<Result<Msg, OobError>>,
        run: &mut ServerRun,
        stop: &AtomicBool,
    ) -> Result<(), ServerError> {
        let timeout = Duration::from_secs_f64(cfg.timeout);
        let receives = self.hello.op.consumes_receive();
        let mut last_progress = Instant::now();
        loop {
            if stop.load(Ordering::Relaxed) {
                return Err(self.fail(ServerError::Interrupted));
            }
            let mut progressed = self.on_message(msgs, run)?;
            if receives {
                progressed |= self.poll_receives(run)?;
            }
            if let Some(d) = &self.done
                && (!receives || self.qps.iter().all(|r| r.received >= r.expect))
            {
                run.report.summary.received = self.qps.iter().map(|r| r.received).sum();
                check_memory(&self.hello, &self.qps, d, run);
                run.report.summary.data_check = run.check.clone();
                run.report.summary.counters = self
                    .reading
                    .as_ref()
                    .map(PortReading::moved)
                    .unwrap_or_default();
                let summary = run.report.summary.clone();
                return Ok(oob::send(&mut self.wr, &Msg::Summary(summary))?);
            }
            if progressed {
                last_progress = Instant::now();
            } else if last_progress.elapsed() > timeout {
                run.report.summary.received = self.qps.iter().map(|r| r.received).sum();
                let e = ServerError::Stalled {
                    timeout: cfg.timeout,
                    received: run.report.summary.received,
                    done: self.done.is_some(),
                };
                return Err(self.fail(e));
            } else {
                std::thread::sleep(Duration::from_micros(50));
            }
        }
    }

    /// The client's word during the run, if any: only Done is due. Returns whether it said something.
    fn on_message(
        &mut self,
        msgs: &mpsc::Receiver<Result<Msg, OobError>>,
        run: &mut ServerRun,
    ) -> Result<bool, ServerError> {
        match msgs.try_recv() {
            Ok(Ok(Msg::Done(d))) => {
                d.validate(self.qps.len()).map_err(|e| self.fail(e))?;
                for (r, &p) in self.qps.iter_mut().zip(&d.posted) {
                    r.expect = p;
                }
                run.report.posted_by_client = d.posted.clone();
                self.done = Some(d);
                Ok(true)
            }
            Ok(Ok(Msg::Error { message })) => Err(ServerError::ClientReported { message }),
            Ok(Ok(_)) => Err(self.fail(ServerError::Unexpected)),
            // the reader ended: with the client gone, nothing more will be said
            Ok(Err(e)) => Err(e.into()),
            Err(_) => Ok(false),
        }
    }

    /// Checks what arrived and posts the receives again; returns whether anything did.
    fn poll_receives(&mut self, run: &mut ServerRun) -> Result<bool, ServerError> {
        let mut progressed = false;
        for i in 0..self.qps.len() {
            let r = &mut self.qps[i];
            let Ok(poller) = r.side.recv_cq.start_poll() else {
                continue;
            };
            let wcs: Vec<(u64, u32, u32, u32)> = poller
                .map(|wc| (wc.wr_id(), wc.status(), wc.byte_len(), wc.imm_data()))
                .collect();
            for wc in wcs {
                progressed = true;
                receive(&mut self.qps[i], &self.hello, wc, run)
                    .map_err(|e| fail(&mut self.wr, e))?;
            }
        }
        Ok(progressed)
    }
}

/// Opens one responder QP per client QP on `dev`, with room for the client's slots.
fn open_responders(
    port: &PortConfig,
    list: &DeviceList,
    dev: &str,
    hello: &Hello,
) -> Result<Vec<Responder>, VerbsError> {
    let recv_depth = if hello.op.consumes_receive() {
        hello.slots as u32
    } else {
        1
    };
    let q = Queues {
        send: 1,
        recv: recv_depth,
        cqe: recv_depth + 2,
    };
    let buf_len = (u64::from(hello.size) * hello.slots) as usize;
    let mut qps = Vec::with_capacity(hello.qps as usize);
    for _ in 0..hello.qps {
        qps.push(Responder {
            side: open_side(list, dev, port, buf_len, &q)?,
            cq: 0,
            recv_posted: 0,
            received: 0,
            expect: hello.iters.unwrap_or(u64::MAX),
        });
    }
    Ok(qps)
}

/// What the client of QP `cq` will find: READ slot j holds message j's pattern, the atomic word starts its
/// sequence, the rest is zero.
fn lay_out_memory(side: &mut Side, h: &Hello, cq: u32) {
    let size = h.size as usize;
    for j in 0..h.slots {
        let off = j as usize * size;
        // SAFETY: nothing is posted on this QP yet.
        unsafe {
            match h.op {
                Op::Read => pattern::fill(side.buf.slice_mut(off, size), cq, j),
                Op::FetchAdd | Op::CmpSwap if j == 0 => side
                    .buf
                    .slice_mut(0, 8)
                    .copy_from_slice(&pattern::atomic_value(cq, 0).to_ne_bytes()),
                _ => side.buf.slice_mut(off, size).fill(0),
            }
        }
    }
}

/// Receive completion `(wr_id, status, byte_len, immediate)` on `r`: in order, its data checked, the
/// receive posted again.
fn receive(
    r: &mut Responder,
    h: &Hello,
    (wr_id, status, byte_len, imm): (u64, u32, u32, u32),
    run: &mut ServerRun,
) -> Result<(), ServerError> {
    let k = r.received;
    if status != 0 {
        return Err(ServerError::ReceiveStatus {
            dev: r.side.name.clone(),
            qpn: r.side.qp.qp_number(),
            wr_id,
            status,
        });
    }
    if wr_id != k {
        return Err(ServerError::ReceiveOrder { wr_id, expected: k });
    }
    let size = h.size as usize;
    let off = (k % h.slots) as usize * size;
    run.check.checked += 1;
    // SAFETY: this receive has completed; its slot is posted again only below.
    let slot = unsafe { r.side.buf.slice(off, size) };
    if let Some(what) = pattern::received_mismatch(h.op, slot, byte_len, imm, r.cq, k) {
        run.check.mismatch(format!("QP {:#x}: {what}", r.cq));
    }
    r.received += 1;
    if r.recv_posted < r.expect {
        post_recv(&mut r.side, r.recv_posted, h.size, h.slots as u32)?;
        r.recv_posted += 1;
    }
    Ok(())
}

/// After the run: the WRITE slots no later message overwrote, and the atomic word.
fn check_memory(hello: &Hello, qps: &[Responder], d: &Done, run: &mut ServerRun) {
    let size = hello.size as usize;
    for ((r, &posted), &completed) in qps.iter().zip(&d.posted).zip(&d.completed) {
        match hello.op {
            Op::Write => {
                // message k is still in slot k % slots unless a later posted message took it
                for k in posted.saturating_sub(hello.slots)..completed {
                    let off = (k % hello.slots) as usize * size;
                    run.check.checked += 1;
                    run.report.summary.memory_checked += 1;
                    // SAFETY: the client has finished; nothing targets this buffer any more.
                    if let Some(at) =
                        pattern::check(unsafe { r.side.buf.slice(off, size) }, r.cq, k)
                    {
                        run.check
                            .mismatch(format!("QP {:#x}: message {k}: byte {at} differs", r.cq));
                    }
                }
            }
            Op::FetchAdd | Op::CmpSwap if posted == completed => {
                let mut w = [0u8; 8];
                // SAFETY: as above.
                w.copy_from_slice(unsafe { r.side.buf.slice(0, 8) });
                run.check.checked += 1;
                if let Some(what) =
                    pattern::atomic_word_mismatch(u64::from_ne_bytes(w), r.cq, completed)
                {
                    run.check.mismatch(what);
                }
            }
            _ => {}
        }
    }
}
