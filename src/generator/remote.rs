//! `gen client HOST` and `gen server`: the two-host run. The client is the requester (as in `gen loopback`),
//! the server the responder; they agree on QPNs, PSNs, GIDs, the path MTU, R_Keys and buffer addresses over
//! TCP (src/generator/oob.rs) and the server reports what it received and found in its memory at the end.

use std::io::{BufReader, BufWriter};
use std::net::{Ipv6Addr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::Serialize;
use sideway::ibverbs::address::Gid;

use super::loopback::{rd_atomic, work_sizes};
use super::oob::{self, Msg};
use super::run::{self, DataCheck, Endpoint, Pair, Peer, RemoteQp, Report, Setup};
use sideway::ibverbs::queue_pair::QueuePair;

use super::verbs::{self, ConnectParams, Queues, Side, connect, endpoint, open_side, post_recv};
use super::{ClientArgs, Op, ServerArgs, pattern, plan};

pub const DEFAULT_PORT: u16 = 18516;

fn gid_of(text: &str) -> Result<Gid, String> {
    text.parse::<Ipv6Addr>()
        .map(Gid::from)
        .map_err(|_| format!("the peer sent '{text}' as a GID"))
}

/// Tells the peer why this end gives up (best effort: it may be gone), and hands the reason on.
fn fail(wr: &mut BufWriter<TcpStream>, e: String) -> String {
    let _ = oob::send(wr, &Msg::Error { message: e.clone() });
    e
}

fn tcp_connect(host: &str, port: u16, patience: Duration) -> Result<TcpStream, String> {
    let t0 = Instant::now();
    loop {
        let addrs: Vec<_> = (host, port)
            .to_socket_addrs()
            .map_err(|e| format!("cannot resolve '{host}': {e}"))?
            .collect();
        let mut last = None;
        for a in &addrs {
            match TcpStream::connect_timeout(a, Duration::from_secs(2)) {
                Ok(s) => return Ok(s),
                Err(e) => last = Some(e),
            }
        }
        if t0.elapsed() >= patience {
            return Err(format!(
                "cannot reach gen server at {host}:{port} ({}): start `rocescope gen server` there first, \
                 or give its port with -p",
                last.map_or("no address".to_string(), |e| e.to_string())
            ));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// `gen client HOST`.
pub fn client(args: &ClientArgs, stop: &AtomicBool) -> Result<Report, String> {
    let w = &args.work;
    let (size32, buf_len) = work_sizes(w, u64::from(w.depth))?;
    let list = verbs::devices()?;
    let dev = verbs::device_name(&list, args.device.as_deref(), &args.port)?;
    let q = Queues {
        send: w.depth,
        recv: 1,
        cqe: w.depth * 2 + 2,
    };
    let mut sides = Vec::with_capacity(w.qps as usize);
    for _ in 0..w.qps {
        sides.push(open_side(&list, &dev, &args.port, buf_len, &q)?);
    }
    let stream = tcp_connect(
        &args.host,
        args.tcp_port,
        Duration::from_secs_f64(args.connect_timeout),
    )?;
    let peer = format!("gen server {}:{}", args.host, args.tcp_port);
    let ctx = |e: String| format!("{peer}: {e}");
    // each reply is due within --timeout
    stream
        .set_read_timeout(Some(Duration::from_secs_f64(w.timeout)))
        .map_err(|e| ctx(e.to_string()))?;
    let _ = stream.set_nodelay(true);
    let mut rd = BufReader::new(stream.try_clone().map_err(|e| ctx(e.to_string()))?);
    let mut wr = BufWriter::new(stream);
    let iters = w.duration.is_none().then_some(w.iters);
    let hello = oob::Hello {
        version: oob::VERSION,
        op: w.op,
        size: size32,
        qps: w.qps,
        depth: w.depth,
        slots: oob::slots_for(w.op, size32, w.depth, iters),
        iters,
    };
    oob::send(&mut wr, &Msg::Hello(hello.clone())).map_err(ctx)?;
    let welcome = oob::expect(&mut rd, "welcome", |m| match m {
        Msg::Welcome(x) => Some(x),
        _ => None,
    })
    .map_err(ctx)?;
    welcome
        .validate(sides.len())
        .map_err(|e| fail(&mut wr, ctx(e)))?;
    // path MTU: both ports' active MTU unless given; never more than either network device carries
    let a = &sides[0];
    let srv = &welcome.qps[0].endpoint;
    let (mtu, mtu_source) = match w.mtu {
        Some(m) => (m, "--mtu".to_string()),
        None => (
            a.active_mtu.min(srv.active_mtu),
            format!(
                "active MTU of {} ({}) and the server's {} ({})",
                a.name, a.active_mtu, srv.device, srv.active_mtu
            ),
        ),
    };
    verbs::check_netdev_mtu(&a.name, a.gid.netdev.as_deref(), a.netdev_mtu, mtu)
        .and_then(|_| {
            verbs::check_netdev_mtu(
                &format!("{} on the server", srv.device),
                srv.netdev.as_deref(),
                srv.netdev_mtu,
                mtu,
            )
        })
        .map_err(|e| fail(&mut wr, e))?;
    let setup = Setup {
        port: args.port.ib_port,
        mtu,
        mtu_source,
        rd_atomic: rd_atomic(w.depth, a.max_rd_atom, welcome.max_rd_atom),
    };
    let params = oob::Connect {
        mtu,
        rd_atomic: setup.rd_atomic,
        qp_timeout: w.qp_timeout,
        retry_count: w.retry_count,
        rnr_retry: w.rnr_retry,
        tclass: w.tclass,
        qps: sides
            .iter()
            .map(|s| oob::ClientQp {
                qpn: s.qp.qp_number(),
                psn: s.sq_psn,
                gid: Ipv6Addr::from(s.gid.gid).to_string(),
            })
            .collect(),
    };
    oob::send(&mut wr, &Msg::Connect(params.clone())).map_err(ctx)?;
    let cp = connect_params(&params, args.port.ib_port);
    let limit = iters.unwrap_or(u64::MAX);
    let mut pairs = Vec::with_capacity(sides.len());
    for (mut s, sq) in sides.into_iter().zip(welcome.qps) {
        let gid = gid_of(&sq.endpoint.gid).map_err(|e| fail(&mut wr, e))?;
        connect(&mut s, sq.endpoint.qpn, &gid, sq.endpoint.sq_psn, &cp)
            .map_err(|e| fail(&mut wr, e))?;
        let (bq, bpsn, ip) = (sq.endpoint.qpn, sq.endpoint.sq_psn, sq.endpoint.ip.clone());
        let remote = RemoteQp {
            endpoint: sq.endpoint,
            addr: sq.addr,
            rkey: sq.rkey,
            slots: hello.slots,
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
    oob::expect(&mut rd, "ready", |m| matches!(m, Msg::Ready).then_some(())).map_err(ctx)?;

    let mut report = run::run(&mut pairs, w, &setup, stop).map_err(|e| fail(&mut wr, e))?;
    let done = oob::Done {
        posted: pairs.iter().map(|p| p.posted).collect(),
        completed: pairs.iter().map(|p| p.completed).collect(),
    };
    let summary = oob::send(&mut wr, &Msg::Done(done)).and_then(|_| {
        oob::expect(&mut rd, "summary", |m| match m {
            Msg::Summary(s) => Some(s),
            _ => None,
        })
    });
    match summary {
        Ok(s) => merge_summary(&mut report, s),
        Err(e) => {
            if report.error.is_none() {
                report.error = Some(ctx(format!("no summary after the run: {e}")));
            }
        }
    }
    Ok(report)
}

/// The server's findings join the client's data check; its error becomes the run's if there was none.
fn merge_summary(r: &mut Report, s: oob::Summary) {
    let (c, sc) = (&mut r.data_check, &s.data_check);
    c.checked += sc.checked;
    c.mismatches += sc.mismatches;
    if c.first_mismatch.is_none() {
        c.first_mismatch = sc.first_mismatch.clone();
    }
    for bad in ["failed", "incomplete"] {
        if sc.status == bad && c.status != "failed" {
            c.status = bad.to_string();
        }
    }
    if r.error.is_none()
        && let Some(e) = &s.error
    {
        r.error = Some(format!("gen server: {e}"));
    }
    r.server = Some(s);
    r.fail_on_data_check();
}

fn connect_params(c: &oob::Connect, port: u8) -> ConnectParams {
    ConnectParams {
        port,
        mtu: c.mtu,
        timeout: c.qp_timeout,
        rd_atomic: c.rd_atomic,
        tclass: c.tclass,
        retry_count: c.retry_count,
        rnr_retry: c.rnr_retry,
    }
}

/// One server run, as printed and in JSON.
#[derive(Serialize)]
pub struct ServerReport {
    pub client: String,
    pub op: Option<Op>,
    pub size: u32,
    pub slots: u64,
    pub qps: Vec<Endpoint>,
    /// The client's QPNs, in the order of `qps`.
    pub client_qpns: Vec<u32>,
    pub mtu: u32,
    pub posted_by_client: Vec<u64>,
    #[serde(flatten)]
    pub summary: oob::Summary,
    pub seconds: f64,
}

/// `gen server`: serves --runs clients one after the other. Exit status 1 if any run failed.
pub fn serve(args: &ServerArgs, stop: &AtomicBool) -> Result<bool, String> {
    let listener = TcpListener::bind((args.bind.as_str(), args.tcp_port)).map_err(|e| {
        format!(
            "cannot listen on {}:{}: {e} (another gen server? choose another with -p)",
            args.bind, args.tcp_port
        )
    })?;
    listener
        .set_nonblocking(true)
        .map_err(|e| format!("cannot listen: {e}"))?;
    // check the device now: a bad -d is said at once, not when the first client comes
    let list = verbs::devices()?;
    let dev = verbs::device_name(&list, args.device.as_deref(), &args.port)?;
    eprintln!(
        "gen server: {dev} port {}, waiting for gen client on {}:{}",
        args.port.ib_port, args.bind, args.tcp_port
    );
    let mut all_ok = true;
    let mut served = 0u32;
    while args.runs == 0 || served < args.runs {
        let stream = loop {
            if stop.load(Ordering::Relaxed) {
                return Ok(all_ok);
            }
            match listener.accept() {
                Ok((s, _)) => break s,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(50))
                }
                Err(e) => return Err(format!("accept: {e}")),
            }
        };
        served += 1;
        let client = stream
            .peer_addr()
            .map_or_else(|_| "?".to_string(), |a| a.to_string());
        let r = serve_one(args, &list, &dev, stream, &client, stop);
        let ok = r.summary.error.is_none() && r.summary.data_check.status == "passed";
        all_ok &= ok;
        print_server_report(&r, args.json);
    }
    Ok(all_ok)
}

fn print_server_report(r: &ServerReport, json: bool) {
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(r).expect("report serializes")
        );
    } else {
        for (e, c) in r.qps.iter().zip(&r.client_qpns) {
            println!(
                "{} port {}: QPN {:#08x}, GID index {} {}, SQ PSN {}, RQ PSN {}; client QPN {c:#08x}",
                e.device, e.port, e.qpn, e.gid_index, e.gid, e.sq_psn, e.rq_psn
            );
        }
        println!(
            "client {}: {} x {} bytes per QP posted {:?}, path MTU {}, {} slots per QP",
            r.client,
            r.op.map_or("?", |o| o.name()),
            r.size,
            r.posted_by_client,
            r.mtu,
            r.slots
        );
        let c = &r.summary.data_check;
        println!(
            "received {} messages; memory checked for {} WRITEs; data check: {} ({} checked, {} mismatches)",
            r.summary.received, r.summary.memory_checked, c.status, c.checked, c.mismatches
        );
    }
    if let Some(e) = &r.summary.error {
        eprintln!("rocescope: gen server: {e}");
    }
}

/// One responder QP of a server run.
struct Responder {
    side: Side,
    cq: u32,
    recv_posted: u64,
    received: u64,
    /// Receives to expect in all: -n, then what the client says it posted.
    expect: u64,
}

struct Run {
    report: ServerReport,
    check: DataCheck,
    t0: Instant,
}

impl Run {
    fn mismatch(&mut self, what: String) {
        self.check.mismatches += 1;
        self.check.status = "failed".to_string();
        if self.check.first_mismatch.is_none() {
            self.check.first_mismatch = Some(what);
        }
    }
}

fn serve_one(
    args: &ServerArgs,
    list: &sideway::ibverbs::device::DeviceList,
    dev: &str,
    stream: TcpStream,
    client: &str,
    stop: &AtomicBool,
) -> ServerReport {
    let mut run = Run {
        report: ServerReport {
            client: client.to_string(),
            op: None,
            size: 0,
            slots: 0,
            qps: Vec::new(),
            client_qpns: Vec::new(),
            mtu: 0,
            posted_by_client: Vec::new(),
            summary: oob::Summary {
                received: 0,
                memory_checked: 0,
                data_check: DataCheck {
                    status: "passed".to_string(),
                    checked: 0,
                    mismatches: 0,
                    first_mismatch: None,
                },
                error: None,
            },
            seconds: 0.0,
        },
        check: DataCheck {
            status: "passed".to_string(),
            checked: 0,
            mismatches: 0,
            first_mismatch: None,
        },
        t0: Instant::now(),
    };
    let writer = stream.try_clone();
    let result = writer
        .map_err(|e| e.to_string())
        .and_then(|w| responder_run(args, list, dev, stream, w, &mut run, stop));
    let mut r = run.report;
    r.seconds = run.t0.elapsed().as_secs_f64();
    r.summary.data_check = run.check;
    if let Err(e) = result {
        r.summary.error = Some(format!("client {client}: {e}"));
        if r.summary.data_check.status == "passed" {
            r.summary.data_check.status = "incomplete".to_string();
        }
    }
    r
}

fn responder_run(
    args: &ServerArgs,
    list: &sideway::ibverbs::device::DeviceList,
    dev: &str,
    stream: TcpStream,
    writer: TcpStream,
    run: &mut Run,
    stop: &AtomicBool,
) -> Result<(), String> {
    let timeout = Duration::from_secs_f64(args.timeout);
    stream
        .set_read_timeout(Some(timeout))
        .map_err(|e| e.to_string())?;
    let _ = writer.set_nodelay(true);
    let mut rd = BufReader::new(stream);
    let mut wr = BufWriter::new(writer);
    let hello = oob::expect(&mut rd, "hello", |m| match m {
        Msg::Hello(h) => Some(h),
        _ => None,
    })?;
    hello.validate().map_err(|e| fail(&mut wr, e))?;
    run.report.op = Some(hello.op);
    run.report.size = hello.size;
    run.report.slots = hello.slots;
    let receives = hello.op.consumes_receive();
    let recv_depth = if receives { hello.slots as u32 } else { 1 };
    let q = Queues {
        send: 1,
        recv: recv_depth,
        cqe: recv_depth + 2,
    };
    let buf_len = (u64::from(hello.size) * hello.slots) as usize;
    let mut qps = Vec::with_capacity(hello.qps as usize);
    for _ in 0..hello.qps {
        let side = open_side(list, dev, &args.port, buf_len, &q).map_err(|e| fail(&mut wr, e))?;
        qps.push(Responder {
            side,
            cq: 0,
            recv_posted: 0,
            received: 0,
            expect: hello.iters.unwrap_or(u64::MAX),
        });
    }
    let max_rd_atom = qps.iter().map(|r| r.side.max_rd_atom).min().unwrap_or(1);
    let welcome = oob::Welcome {
        qps: qps
            .iter()
            .map(|r| oob::ServerQp {
                endpoint: endpoint(&r.side, args.port.ib_port, 0),
                addr: r.side.buf.addr(0),
                rkey: r.side.mr.rkey(),
            })
            .collect(),
        max_rd_atom,
    };
    oob::send(&mut wr, &Msg::Welcome(welcome))?;
    let c = oob::expect(&mut rd, "connect", |m| match m {
        Msg::Connect(c) => Some(c),
        _ => None,
    })?;
    c.validate(qps.len()).map_err(|e| fail(&mut wr, e))?;
    for r in &qps {
        verbs::check_netdev_mtu(
            &r.side.name,
            r.side.gid.netdev.as_deref(),
            r.side.netdev_mtu,
            c.mtu,
        )
        .map_err(|e| fail(&mut wr, e))?;
    }
    run.report.mtu = c.mtu;
    let cp = connect_params(&c, args.port.ib_port);
    let size = hello.size as usize;
    for (r, cq) in qps.iter_mut().zip(&c.qps) {
        let gid = gid_of(&cq.gid).map_err(|e| fail(&mut wr, e))?;
        r.cq = cq.qpn;
        // what the client will find: READ slot j holds message j's pattern, the atomic word starts its sequence
        for j in 0..hello.slots {
            let off = j as usize * size;
            // SAFETY: nothing is posted on this QP yet.
            unsafe {
                match hello.op {
                    Op::Read => pattern::fill(r.side.buf.slice_mut(off, size), cq.qpn, j),
                    Op::FetchAdd | Op::CmpSwap if j == 0 => r
                        .side
                        .buf
                        .slice_mut(0, 8)
                        .copy_from_slice(&pattern::atomic_value(cq.qpn, 0).to_ne_bytes()),
                    _ => r.side.buf.slice_mut(off, size).fill(0),
                }
            }
        }
        connect(&mut r.side, cq.qpn, &gid, cq.psn, &cp).map_err(|e| fail(&mut wr, e))?;
        while receives && r.recv_posted < hello.slots.min(r.expect) {
            post_recv(&mut r.side, r.recv_posted, hello.size, hello.slots as u32)
                .map_err(|e| fail(&mut wr, e))?;
            r.recv_posted += 1;
        }
    }
    run.report.client_qpns = c.qps.iter().map(|q| q.qpn).collect();
    run.report.qps = qps
        .iter()
        .zip(&c.qps)
        .map(|(r, cq)| endpoint(&r.side, args.port.ib_port, cq.psn))
        .collect();
    oob::send(&mut wr, &Msg::Ready)?;

    // the traffic: receive (and check) until the client says it is done and everything it posted arrived
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
    let mut done: Option<oob::Done> = None;
    let mut last_progress = Instant::now();
    loop {
        if stop.load(Ordering::Relaxed) {
            return Err(fail(&mut wr, "the server was interrupted".to_string()));
        }
        let mut progressed = false;
        match msgs.try_recv() {
            Ok(Ok(Msg::Done(d))) => {
                d.validate(qps.len()).map_err(|e| fail(&mut wr, e))?;
                for (r, &p) in qps.iter_mut().zip(&d.posted) {
                    r.expect = p;
                }
                run.report.posted_by_client = d.posted.clone();
                done = Some(d);
                progressed = true;
            }
            Ok(Ok(Msg::Error { message })) => {
                return Err(format!("the client reported: {message}"));
            }
            Ok(Ok(_)) => {
                return Err(fail(
                    &mut wr,
                    "unexpected message during the run".to_string(),
                ));
            }
            // the reader ended: with the client gone, nothing more will be said
            Ok(Err(e)) => return Err(e),
            Err(_) => {}
        }
        if receives {
            for r in qps.iter_mut() {
                let Ok(poller) = r.side.recv_cq.start_poll() else {
                    continue;
                };
                let wcs: Vec<(u64, u32, u32, u32)> = poller
                    .map(|wc| (wc.wr_id(), wc.status(), wc.byte_len(), wc.imm_data()))
                    .collect();
                for (wr_id, status, byte_len, imm) in wcs {
                    progressed = true;
                    let k = r.received;
                    if status != 0 {
                        return Err(fail(
                            &mut wr,
                            format!(
                                "{}: QP {:#x}: receive {wr_id} completed with {} (status {status})",
                                r.side.name,
                                r.side.qp.qp_number(),
                                plan::wc_status_name(status)
                            ),
                        ));
                    }
                    if wr_id != k {
                        return Err(fail(
                            &mut wr,
                            format!("receive completion out of order: wr_id {wr_id}, expected {k}"),
                        ));
                    }
                    let off = (k % hello.slots) as usize * size;
                    run.check.checked += 1;
                    // SAFETY: this receive has completed; its slot is posted again only below.
                    let slot = unsafe { r.side.buf.slice(off, size) };
                    if let Some(what) =
                        run::received_mismatch(hello.op, slot, byte_len, imm, r.cq, k)
                    {
                        run.mismatch(format!("QP {:#x}: {what}", r.cq));
                    }
                    r.received += 1;
                    if r.recv_posted < r.expect {
                        post_recv(&mut r.side, r.recv_posted, hello.size, hello.slots as u32)
                            .map_err(|e| fail(&mut wr, e))?;
                        r.recv_posted += 1;
                    }
                }
            }
        }
        if let Some(d) = &done
            && (!receives || qps.iter().all(|r| r.received >= r.expect))
        {
            run.report.summary.received = qps.iter().map(|r| r.received).sum();
            check_memory(&hello, &qps, d, run);
            run.report.summary.data_check = run.check.clone();
            let summary = run.report.summary.clone();
            oob::send(&mut wr, &Msg::Summary(summary))?;
            return Ok(());
        }
        if progressed {
            last_progress = Instant::now();
        } else if last_progress.elapsed() > timeout {
            run.report.summary.received = qps.iter().map(|r| r.received).sum();
            return Err(fail(
                &mut wr,
                format!(
                    "nothing for {:.1} s: {} messages received{}",
                    args.timeout,
                    run.report.summary.received,
                    if done.is_some() {
                        ", fewer than the client posted"
                    } else {
                        ", and the client has not said it is done"
                    }
                ),
            ));
        } else {
            std::thread::sleep(Duration::from_micros(50));
        }
    }
}

/// After the run: the WRITE slots no later message overwrote, and the atomic word.
fn check_memory(hello: &oob::Hello, qps: &[Responder], d: &oob::Done, run: &mut Run) {
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
                        run.mismatch(format!("QP {:#x}: message {k}: byte {at} differs", r.cq));
                    }
                }
            }
            Op::FetchAdd | Op::CmpSwap if posted == completed => {
                let mut w = [0u8; 8];
                // SAFETY: as above.
                w.copy_from_slice(unsafe { r.side.buf.slice(0, 8) });
                run.check.checked += 1;
                if let Some(what) =
                    run::atomic_word_mismatch(u64::from_ne_bytes(w), r.cq, completed)
                {
                    run.mismatch(what);
                }
            }
            _ => {}
        }
    }
}
