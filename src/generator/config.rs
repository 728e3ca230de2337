//! What a `gen` run is asked to do, as plain configuration (src/cli/gen.rs makes it from the command line,
//! whose defaults are the ones written here).

use super::plan::Rate;
use super::records::{Fault, Op};

pub enum Command {
    Loopback(LoopbackConfig),
    Server(ServerConfig),
    Client(ClientConfig),
    Agent(AgentConfig),
    Mesh(MeshConfig),
}

/// `gen agent`: serves peers' requesters as `gen server` does (several at once, until stopped) and runs the
/// requesters `gen mesh` asks for against other agents.
#[derive(Clone)]
pub struct AgentConfig {
    pub serve: ServerConfig,
    /// Seconds a task's requester keeps trying to reach the peer's agent.
    pub connect_timeout: f64,
    /// `--capture IFACE`: each task's fabric check on this interface.
    pub capture: Option<String>,
}

/// `gen mesh`: the pattern's pairs run by the hosts' agents, round after round, judged and located.
pub struct MeshConfig {
    pub hosts: std::path::PathBuf,
    pub topology: Option<std::path::PathBuf>,
    pub pattern: rocescope::mesh::plan::Pattern,
    /// Pairs a host takes part in at a time (`pairs`).
    pub per_host: usize,
    pub expect: rocescope::mesh::verdict::Expect,
    /// The agents' TCP port, where the hosts file gives none.
    pub tcp_port: u16,
    /// The heat map's file.
    pub svg: Option<std::path::PathBuf>,
    /// The `mesh` table's file.
    pub parquet: Option<std::path::PathBuf>,
    /// Seconds to keep trying to reach an agent.
    pub connect_timeout: f64,
    /// `--probe`: low-rate probes window after window instead of the pattern.
    pub probe: Option<Probe>,
    pub work: WorkConfig,
}

/// `gen mesh --probe`.
pub struct Probe {
    /// Seconds per window.
    pub window: f64,
    /// Windows to run (0: until stopped).
    pub windows: u64,
    /// Probes a second per target.
    pub rate: f64,
    /// Targets each host probes at once.
    pub targets: usize,
}

/// `gen loopback`: the requester on `device`, the responder on `peer_device`, in this process.
pub struct LoopbackConfig {
    pub device: String,
    pub peer_device: String,
    /// The responder's RNR NAK timer, IBTA's 5-bit encoding (`--min-rnr-timer`).
    pub min_rnr_timer: u8,
    pub port: PortConfig,
    pub work: WorkConfig,
}

impl LoopbackConfig {
    /// 0.64 ms: as two-host runs set it.
    pub const DEFAULT_MIN_RNR_TIMER: u8 = crate::generator::verbs::MIN_RNR_TIMER;
}

/// `gen client HOST`: the requester, against `gen server` on `host`.
pub struct ClientConfig {
    pub host: String,
    /// None: the first device with a RoCE v2 IPv4-mapped GID on the port.
    pub device: Option<String>,
    pub tcp_port: u16,
    /// Seconds to keep trying to reach the server.
    pub connect_timeout: f64,
    pub port: PortConfig,
    pub work: WorkConfig,
}

impl ClientConfig {
    pub const DEFAULT_CONNECT_TIMEOUT: f64 = 10.0;
}

/// `gen server`: the responder of `runs` client runs (0: until stopped).
#[derive(Clone)]
pub struct ServerConfig {
    /// None: the first device with a RoCE v2 IPv4-mapped GID on the port.
    pub device: Option<String>,
    pub tcp_port: u16,
    pub bind: String,
    pub runs: u32,
    pub port: PortConfig,
    /// Seconds without a completion or a word from the client before a run is given up.
    pub timeout: f64,
    pub json: bool,
}

impl ServerConfig {
    pub const DEFAULT_BIND: &str = "0.0.0.0";
    pub const DEFAULT_RUNS: u32 = 1;
    pub const DEFAULT_TIMEOUT: f64 = 10.0;
}

/// The TCP port of the out-of-band exchange.
pub const DEFAULT_TCP_PORT: u16 = 18516;

/// Where the traffic starts and ends on a device.
#[derive(Clone)]
pub struct PortConfig {
    pub ib_port: u8,
    /// None: the RoCE v2 GID with an IPv4-mapped address.
    pub gid_index: Option<u8>,
}

impl PortConfig {
    pub const DEFAULT: PortConfig = PortConfig {
        ib_port: 1,
        gid_index: None,
    };
}

/// What the requester posts, and how: shared by `gen loopback` and `gen client`.
pub struct WorkConfig {
    pub op: Op,
    /// Bytes per message as asked (the atomics always move 8: [`WorkConfig::message_size`]).
    pub size: u32,
    /// Messages per QP pair, unless `duration` is given.
    pub iters: u64,
    /// Seconds of posting instead of `iters` messages.
    pub duration: Option<f64>,
    pub rate: Option<Rate>,
    pub qps: u32,
    /// Messages in flight at most per QP.
    pub depth: u32,
    /// None: the smaller active MTU of the two ports.
    pub mtu: Option<u32>,
    pub tclass: u8,
    /// `--source-port`: the UDP source ports of the QPs, through the GRH flow label.
    pub source_ports: Option<SourcePorts>,
    pub qp_timeout: u8,
    pub retry_count: u8,
    pub rnr_retry: u8,
    /// Seconds without a completion before the run is given up.
    pub timeout: f64,
    pub json: bool,
    pub fault: Option<Fault>,
    /// The fabric check's interface.
    pub capture: Option<String>,
    /// Seconds the fabric check keeps capturing after the last completion.
    pub capture_grace: f64,
}

impl WorkConfig {
    pub const DEFAULT: WorkConfig = WorkConfig {
        op: Op::Write,
        size: 65536,
        iters: 1000,
        duration: None,
        rate: None,
        qps: 1,
        depth: 16,
        mtu: None,
        tclass: 0,
        source_ports: None,
        qp_timeout: 17,
        retry_count: 7,
        rnr_retry: 7,
        timeout: 10.0,
        json: false,
        fault: None,
        capture: None,
        capture_grace: 0.5,
    };

    /// Bytes per message on the wire: the atomics move one 8-byte word.
    pub fn message_size(&self) -> u32 {
        if self.op.is_atomic() { 8 } else { self.size }
    }

    /// Messages per QP pair: `iters`, or None (until the duration is up) with --duration.
    pub fn iters_limit(&self) -> Option<u64> {
        self.duration.is_none().then_some(self.iters)
    }

    /// Is `--fault` possible with the rest of the run? `loopback`: `gen loopback`, whose responder QP is in
    /// this process (`gen client` cannot make `gen server` post no receives, and connects to the QPs the
    /// server offered).
    pub fn check_fault(&self, loopback: bool) -> Result<(), ConfigError> {
        if self.source_ports.is_some() && !loopback {
            return Err(ConfigError::SourcePortNeedsLoopback);
        }
        let Some(f) = self.fault else {
            return Ok(());
        };
        match f {
            Fault::BadRkey if self.duration.is_some() => Err(ConfigError::BadRkeyNeedsIters),
            Fault::BadRkey if self.op == Op::Send => Err(ConfigError::BadRkeyNeedsRkey),
            Fault::WrongQpn | Fault::NoReceive if !loopback => {
                Err(ConfigError::FaultNeedsLoopback { fault: f.name() })
            }
            Fault::NoReceive if !self.op.consumes_receive() => {
                Err(ConfigError::NoReceiveNeedsReceives {
                    op: op_flag(self.op),
                })
            }
            _ => Ok(()),
        }
    }

    /// Checks what every requester shares; returns the buffer length of `slots` messages.
    pub fn buffer_len(&self, slots: u64) -> Result<usize, ConfigError> {
        if !(self.timeout > 0.0 && self.timeout.is_finite()) {
            return Err(ConfigError::Timeout {
                timeout: self.timeout,
            });
        }
        // the atomics move one 8-byte word: the remote one at offset 0 of the responder's buffer (8-byte
        // aligned), the original values into the requester's slots
        let buf_len = u64::from(self.message_size())
            .checked_mul(slots)
            .filter(|&l| l <= 1 << 32)
            .ok_or(ConfigError::Buffers {
                size: self.size,
                slots,
            })?;
        Ok(buf_len as usize)
    }
}

/// `--source-port FIRST[-LAST]`: QP pair i sends from FIRST + i, wrapping past LAST (one port: every QP on
/// it). Set through the GRH flow label, which the kernel's `rdma_flow_label_to_udp_sport` turns into the
/// port 0xC000 | ((label & 0x3FFF) ^ ((label & 0xFC000) >> 14)) and rxe takes (`rxe_modify_qp`); a label of
/// 0 means none (the port then hashes the two QPNs). Ports are 49152-65535.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SourcePorts {
    pub first: u16,
    pub last: u16,
}

impl SourcePorts {
    /// The lowest port a flow label gives (IB_ROCE_UDP_ENCAP_VALID_PORT_MIN).
    pub const MIN: u16 = 0xC000;

    /// QP pair `i`'s port.
    pub fn port(&self, i: u32) -> u16 {
        let span = u32::from(self.last - self.first) + 1;
        self.first + (i % span) as u16
    }

    /// The GRH flow label that gives QP pair `i` its port: bit 14 set (never 0, which is no label) and the
    /// port's low 14 bits XOR 1 below it, which the kernel's fold gives back.
    pub fn flow_label(&self, i: u32) -> u32 {
        0x4000 | u32::from((self.port(i) & 0x3FFF) ^ 1)
    }
}

/// A run the options ask for that cannot be done.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum ConfigError {
    #[error("--fault bad-rkey needs -n (the faulty message is the last one)")]
    BadRkeyNeedsIters,
    #[error("--fault bad-rkey needs --op write, write-imm or read (a SEND carries no R_Key)")]
    BadRkeyNeedsRkey,
    #[error("--fault {fault} needs gen loopback (the responder QP here is gen server's)")]
    FaultNeedsLoopback { fault: &'static str },
    #[error("--source-port needs gen loopback (gen server sets its own QPs' ports)")]
    SourcePortNeedsLoopback,
    #[error("--fault no-receive needs --op send or write-imm (--op {op} consumes no receive)")]
    NoReceiveNeedsReceives { op: &'static str },
    #[error("--timeout {timeout} is not a positive number of seconds")]
    Timeout { timeout: f64 },
    #[error("{flag} is not for gen mesh (each pair runs as gen client runs, without it)")]
    NotInMesh { flag: &'static str },
    #[error("-s {size} x {slots} message slots is more than 4 GiB of buffers")]
    Buffers { size: u32, slots: u64 },
}

/// `--op`'s value for `op`.
fn op_flag(op: Op) -> &'static str {
    match op {
        Op::Write => "write",
        Op::WriteImm => "write-imm",
        Op::Send => "send",
        Op::Read => "read",
        Op::FetchAdd => "fetch-add",
        Op::CmpSwap => "cmp-swap",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn work(op: Op, fault: Fault) -> WorkConfig {
        WorkConfig {
            op,
            fault: Some(fault),
            ..WorkConfig::DEFAULT
        }
    }

    /// The kernel's rdma_flow_label_to_udp_sport (include/rdma/ib_verbs.h).
    fn kernel_port(label: u32) -> u16 {
        let low = label & 0x3FFF;
        let high = (label & 0xFC000) >> 14;
        ((low ^ high) as u16) | 0xC000
    }

    #[test]
    fn source_ports_wrap_and_are_flow_labels() {
        let s = SourcePorts {
            first: 49200,
            last: 49202,
        };
        let ports: Vec<u16> = (0..5).map(|i| s.port(i)).collect();
        assert_eq!(ports, [49200, 49201, 49202, 49200, 49201]);
        for port in [49152, 49153, 49201, 65535] {
            let one = SourcePorts {
                first: port,
                last: port,
            };
            let label = one.flow_label(3);
            assert_ne!(label, 0, "0 is no label");
            assert!(label < 1 << 20, "20 bits");
            assert_eq!(kernel_port(label), port);
        }
        let client = WorkConfig {
            source_ports: Some(s),
            ..WorkConfig::DEFAULT
        };
        assert_eq!(
            client.check_fault(false),
            Err(ConfigError::SourcePortNeedsLoopback)
        );
        assert_eq!(client.check_fault(true), Ok(()));
    }

    #[test]
    fn faults_and_what_they_need() {
        assert_eq!(WorkConfig::DEFAULT.check_fault(false), Ok(()));
        assert_eq!(work(Op::Write, Fault::WrongQpn).check_fault(true), Ok(()));
        assert_eq!(work(Op::Read, Fault::WrongQpn).check_fault(true), Ok(()));
        assert_eq!(work(Op::Send, Fault::NoReceive).check_fault(true), Ok(()));
        assert_eq!(
            work(Op::WriteImm, Fault::NoReceive).check_fault(true),
            Ok(())
        );
        assert_eq!(work(Op::Read, Fault::BadRkey).check_fault(false), Ok(()));
        assert_eq!(
            work(Op::Write, Fault::NoReceive).check_fault(true),
            Err(ConfigError::NoReceiveNeedsReceives { op: "write" })
        );
        assert_eq!(
            work(Op::FetchAdd, Fault::NoReceive)
                .check_fault(true)
                .unwrap_err()
                .to_string(),
            "--fault no-receive needs --op send or write-imm (--op fetch-add consumes no receive)"
        );
        for f in [Fault::WrongQpn, Fault::NoReceive] {
            assert_eq!(
                work(Op::Send, f)
                    .check_fault(false)
                    .unwrap_err()
                    .to_string(),
                format!(
                    "--fault {} needs gen loopback (the responder QP here is gen server's)",
                    f.name()
                )
            );
        }
        assert!(
            work(Op::Send, Fault::BadRkey)
                .check_fault(true)
                .unwrap_err()
                .to_string()
                .contains("a SEND carries no R_Key")
        );
        // the R_Key goes wrong on the last of -n messages; the other faults take --duration too
        let timed = |f| WorkConfig {
            duration: Some(1.0),
            ..work(Op::Send, f)
        };
        assert!(
            timed(Fault::BadRkey)
                .check_fault(true)
                .unwrap_err()
                .to_string()
                .contains("needs -n")
        );
        assert_eq!(timed(Fault::NoReceive).check_fault(true), Ok(()));
        assert_eq!(timed(Fault::WrongQpn).check_fault(true), Ok(()));
    }
}
