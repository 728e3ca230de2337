use super::*;

const V4: fn([u8; 4]) -> Addr = Addr::V4;

/// NCCL 2.20.5 on node0 of the public ring run (testdata/public/ring2_node0.log, NCCL_DEBUG_SUBSYS with NET).
#[test]
fn a_real_nccl_2_20_log() {
    let log = read(
        "ring2_node0.log",
        include_str!("../../../testdata/public/ring2_node0.log"),
    );
    assert_eq!(log.processes.len(), 1);
    let p = &log.processes[0];
    assert_eq!(
        (p.library, p.host.as_str(), p.pid, p.version.as_deref()),
        (Library::Nccl, "node0", 4744, Some("2.20.5+cuda12.4"))
    );
    assert_eq!((p.rank, p.nranks), (Some(0), Some(3)));
    assert_eq!(p.oob, Some(V4([172, 30, 0, 25])));
    assert_eq!(
        p.devices,
        vec![Device {
            index: 0,
            name: "rxe0".into(),
            port: 1,
            link: "RoCE".into()
        }]
    );
    assert_eq!(p.nccl_version(), Some((2, 20)));
    // The log's two sending connections (lines 41 and 48), each with the QP line after it and the remote
    // QPN its set_ece line names.
    let qp = |qpn, remote, peer, line| Qp {
        process: 0,
        side: Side::Send,
        channel: Some(0),
        peer_rank: Some(peer),
        device: Some("rxe0".into()),
        port: Some(1),
        qpn,
        remote_qpn: Some(remote),
        addr: Some(V4([172, 30, 0, 25])),
        peer_addr: None,
        mtu: Some(1024),
        traffic_class: None,
        line,
    };
    assert_eq!(log.qps, vec![qp(34, 35, 1, 43), qp(36, 42, 2, 50)]);
    assert!(log.failures.is_empty());
}

/// The default subsystems (nccl_node0.log) print no QP, but the GID index set by the environment.
#[test]
fn without_net_lines_no_qps() {
    let log = read(
        "nccl_node0.log",
        include_str!("../../../testdata/public/nccl_node0.log"),
    );
    assert!(log.qps.is_empty());
    assert_eq!(log.processes[0].settings.gid_index, Some(1));
    assert_eq!(log.processes[0].rank, Some(0));
}

#[test]
fn the_version_line_goes_to_every_process_of_its_file() {
    let text = "h:1:1 [0] NCCL INFO cudaDriverVersion 13000\nNCCL version 2.29.7+cuda13.0\n\
                h:2:2 [1] NCCL INFO cudaDriverVersion 13000\n";
    let log = read("x", text);
    assert_eq!(log.processes.len(), 2);
    assert!(
        log.processes
            .iter()
            .all(|p| p.nccl_version() == Some((2, 29)))
    );
}

/// NCCL 2.12-2.18's QP line (`Dev`, no IbDev), an IPv4-mapped GID `::ffff:10.0.0.1` printed as the
/// little-endian halves 0 / 0x0100000AFFFF0000, and the traffic class the environment set.
#[test]
fn nccl_2_12_lines() {
    let text = "a:7:8 [0] NCCL INFO NCCL_IB_TC set by environment to 106.\n\
                a:7:8 [0] NCCL INFO NCCL_IB_SL set by environment to 3.\n\
                a:7:8 [0] NCCL INFO NCCL_IB_TIMEOUT set by environment to 22.\n\
                a:7:8 [0] NCCL INFO NCCL_IB_RETRY_CNT set by environment to 5.\n\
                a:7:8 [0] NCCL INFO Channel 02/0 : 4[1a000] -> 5[1b000] [send] via NET/IB/1/GDRDMA\n\
                a:7:9 [0] NCCL INFO NET/IB: Dev 1 Port 1 qpn 1234 mtu 5 GID 3 (0/0100000AFFFF0000)\n";
    let log = read("x", text);
    let s = log.processes[0].settings;
    assert_eq!(
        (s.traffic_class, s.service_level, s.timeout, s.retry_count),
        (Some(106), Some(3), Some(22), Some(5))
    );
    let q = &log.qps[0];
    assert_eq!(
        (q.qpn, q.channel, q.peer_rank, q.addr, q.mtu, q.remote_qpn),
        (
            1234,
            Some(2),
            Some(5),
            Some(V4([10, 0, 0, 1])),
            Some(4096),
            None
        )
    );
}

/// An InfiniBand QP line gives the port's LID as its address.
#[test]
fn an_infiniband_qp_has_its_lid() {
    let text = "a:7:8 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0\n\
                a:7:9 [0] NCCL INFO NET/IB: NCCL Dev 0 IbDev 0 Port 1 qpn 99 mtu 5 LID 12 subnet-prefix 65152  \
                FLID 0 fifoRkey=0x1 fifoLkey=0x1\n";
    assert_eq!(read("x", text).qps[0].addr, Some(Addr::Lid(12)));
}

/// Two QPs a connection (NCCL_IB_QPS_PER_CONNECTION=2): both go to the first channel, the next line's to the
/// second; each set_ece line (2.20) names a remote QPN, which the QPs take in order.
#[test]
fn several_qps_a_connection() {
    let text = "a:7:8 [0] NCCL INFO NCCL_IB_QPS_PER_CONNECTION set by environment to 2.\n\
                a:7:8 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0\n\
                a:7:8 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[0] [send] via NET/IB/0\n\
                a:7:9 [0] NCCL INFO NET/IB: NCCL Dev 0 IbDev 0 Port 1 qpn 20 mtu 3 query_ece={supported=0} GID 1 \
                (0/0100000AFFFF0000)\n\
                a:7:9 [0] NCCL INFO NET/IB: NCCL Dev 0 IbDev 0 Port 1 qpn 21 mtu 3 query_ece={supported=0} GID 1 \
                (0/0100000AFFFF0000)\n\
                a:7:9 [0] NCCL INFO NET/IB: IbDev 0 Port 1 qpn 50 set_ece={supported=0}\n\
                a:7:9 [0] NCCL INFO NET/IB: IbDev 0 Port 1 qpn 51 set_ece={supported=0}\n\
                a:7:9 [0] NCCL INFO NET/IB: NCCL Dev 0 IbDev 0 Port 1 qpn 22 mtu 3 GID 1 (0/0100000AFFFF0000)\n";
    let log = read("x", text);
    let got: Vec<_> = log
        .qps
        .iter()
        .map(|q| (q.qpn, q.channel, q.remote_qpn))
        .collect();
    assert_eq!(
        got,
        vec![
            (20, Some(0), Some(50)),
            (21, Some(0), Some(51)),
            (22, Some(1), None)
        ]
    );
}

/// 2.20.3-2.26.6 (the QP line holds `IbDev` and `query_ece=`): set_ece names the remote QP even when it has
/// the local one's number (two hosts that number their QPs alike: the lab's loopback pairs, QP 50 to QP 50).
#[test]
fn a_remote_qp_numbered_as_the_local_one() {
    let text = "a:7:8 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0\n\
                a:7:9 [0] NCCL INFO NET/IB: NCCL Dev 0 IbDev 0 Port 1 qpn 50 mtu 3 query_ece={supported=0, \
                vendor_id=0x0, options=0x0, comp_mask=0x0} GID 1 (0/100000AFFFF0000) fifoRkey=0x1 fifoLkey=0x1\n\
                a:7:9 [0] NCCL INFO NET/IB: IbDev 0 Port 1 qpn 50 set_ece={supported=0}\n";
    assert_eq!(read("x", text).qps[0].remote_qpn, Some(50));
}

/// 2.19 (`Dev`, no `IbDev`) and 2.27+ (no `query_ece=` on the QP line): set_ece names the QP's own QPN, not
/// the remote one.
#[test]
fn a_set_ece_of_the_qp_itself_is_no_remote() {
    for qp_line in [
        "NET/IB: Dev 0 Port 1 qpn 20 mtu 3 query_ece={supported=1} GID 1 (0/0100000AFFFF0000)",
        "NET/IB: NCCL Dev 0 IbDev 0 Port 1 qpn 20 mtu 3 GID 1 (0/0100000AFFFF0000) fifoRkey=0x1 fifoLkey=0x1",
    ] {
        let text = format!(
            "a:7:8 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0\n\
             a:7:9 [0] NCCL INFO {qp_line}\n\
             a:7:9 [0] NCCL INFO NET/IB: IbDev 0 Port 1 qpn 20 query_ece={{supported=1}}\n\
             a:7:9 [0] NCCL INFO NET/IB: IbDev 0 Port 1 qpn 20 set_ece={{supported=1}}\n"
        );
        let log = read("x", &text);
        assert_eq!(log.qps.len(), 1);
        assert_eq!(log.qps[0].remote_qpn, None, "{qp_line}");
    }
}

/// 2.29.7+: both sides say `QP created` (the receiver's with the receiving channel's peer), and the
/// sender's connect line adds its GID to the QP it created.
#[test]
fn nccl_2_29_qp_created() {
    let text = "b:5:6 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE [RO]; OOB eth0:10.9.0.2<0>\n\
                b:5:6 [0] NCCL INFO Channel 00/0 : 3[0] -> 2[0] [receive] via NET/IB/1\n\
                b:5:6 [0] NCCL INFO Channel 00/0 : 2[0] -> 1[0] [send] via NET/IB/0\n\
                b:5:7 [0] NCCL INFO NET/IB: ncclIbReceiverQpsCreateToRts: QP created: port=1 dev=1 devName=mlx5_1 \
                ndevs=1 nmdevs=1 qp_num=301 pkey=0 pd=0x55 oooRq=0\n\
                b:5:7 [0] NCCL INFO NET/IB: ncclIbSenderQpsCreate: QP created: port=1 dev=0 devName=mlx5_0 ndevs=1 \
                nmdevs=1 qp_num=300 pkey=0 pd=0x55 oooRq=0\n\
                b:5:7 [0] NCCL INFO NET/IB: ncclIbConnect: NCCL Dev 0 IbDev 0 Port 1 qp_num 300 mtu 5 GID 3 \
                (0/0200090AFFFF0000) ctsFifoRkey=0x1 ctsFifoLkey=0x1\n\
                b:5:7 [0] NCCL INFO NET/IB: ncclIbConnect: Set ECE: IbDev 0 Port 1 qp_num 300 set_ece={supported=1}\n\
                b:5:7 [0] NCCL INFO NET/IB: ncclIbFlush: Flush QP created: port=1 dev=0 devName=mlx5_0 ndevs=1 \
                nmdevs=1 qp_num=302 pkey=0 pd=0x55\n";
    let log = read("x", text);
    let p = &log.processes[0];
    assert_eq!(p.oob, Some(V4([10, 9, 0, 2])));
    assert_eq!(p.devices.len(), 2);
    let got: Vec<_> = log
        .qps
        .iter()
        .map(|q| {
            (
                q.qpn,
                q.side,
                q.peer_rank,
                q.device.as_deref(),
                q.addr,
                q.remote_qpn,
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (301, Side::Receive, Some(3), Some("mlx5_1"), None, None),
            (
                300,
                Side::Send,
                Some(1),
                Some("mlx5_0"),
                Some(V4([10, 9, 0, 2])),
                None
            ),
        ]
    );
}

/// The completion-with-error WARN in each version's words.
#[test]
fn nccl_failures_of_each_version() {
    let gids = (Some(V4([10, 0, 0, 1])), Some(V4([10, 0, 0, 2])));
    let cases = [
        // 2.12-2.17
        (
            "\nh:1:2 [0] transport/net_ib.cc:1198 NCCL WARN NET/IB : Got completion from peer \
             10.0.0.2<54321> with error 12, opcode 0, len 0, vendor err 129",
            (Some(12), Some(129), None, (None, None), None),
        ),
        // 2.20-2.21: `remoteGids` and the GID glued together
        (
            "h:1:2 [0] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<54321> \
             with status=12 opcode=0 len=0 vendor err 129 (Send) localGid ::ffff:10.0.0.1 \
             remoteGids::ffff:10.0.0.2",
            (Some(12), Some(129), None, gids, None),
        ),
        // 2.28.7: names with the numbers, and the HCA
        (
            "h:1:2 [0] transport/net_ib.cc:2543 NCCL WARN NET/IB: Got completion from peer 10.0.0.2<54321> \
             with status=IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_RDMA_WRITE(1) reqSize=8 vendor_err=129 \
             req_type=Send localGid ::ffff:10.0.0.1 remoteGids::ffff:10.0.0.2 hca mlx5_0",
            (Some(12), Some(129), None, gids, Some("mlx5_0")),
        ),
    ];
    for (line, (status, vendor, qpn, (local, remote), hca)) in cases {
        let log = read("x", line);
        let f = &log.failures[0];
        assert_eq!(
            (
                f.status,
                f.vendor_err,
                f.qpn,
                f.local_gid,
                f.remote_gid,
                f.device.as_deref()
            ),
            (status, vendor, qpn, local, remote, hca),
            "{line}"
        );
        assert_eq!(f.peer, Some(V4([10, 0, 0, 2])), "{line}");
        assert_eq!(f.line, if line.starts_with('\n') { 2 } else { 1 });
    }
}

/// 2.29.7+: the failing QP on the WARN before (with the date stamp of 2.26+; 2.30.7's `(function)`).
#[test]
fn nccl_2_29_names_the_failing_qp() {
    for prefix in [
        "[2026-03-01 10:00:00] h:1:2 [0] transport/net_ib/p2p.cc:786 NCCL WARN",
        "[2026-03-01 10:00:00] h:1:2 [0] transport/net_ib/p2p.cc:854 (ncclIbTest) NCCL WARN",
    ] {
        let text = format!(
            "{prefix} NET/IB: ncclIbTest: Got CQE with error (devIndex=0, req=0x7f01, comm=0x7f02 (send), \
             wr_id=7, qp_num=300)\n{prefix} NET/IB: Got completion from peer 10.0.0.2<54321> with \
             status=IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_RDMA_WRITE(1) vendor_err=129  localGid \
             ::ffff:10.0.0.1 remoteGids::ffff:10.0.0.2 hca mlx5_0\n"
        );
        let log = read("x", &text);
        assert_eq!(log.failures.len(), 1, "{prefix}");
        assert_eq!((log.failures[0].qpn, log.failures[0].line), (Some(300), 2));
        assert_eq!(log.processes[0].host, "h");
    }
}

/// UCX 1.16+: the environment's traffic class, and a completion with error on two lines (each with its
/// prefix): the local QP, the remote one, its GID and traffic class.
#[test]
fn ucx_lines() {
    let text = "[1700000000.100000] [gpu7:2201 :0]          parser.c:2587 UCX  INFO  UCX_* env variables: \
                UCX_IB_TRAFFIC_CLASS=106 UCX_NET_DEVICES=mlx5_0:1\n\
                [1700000001.123456] [gpu7:2201 :0]     ib_mlx5_log.c:179  UCX  ERROR Transport retry count \
                exceeded on mlx5_0:1/RoCE (synd 0x15 vend 0x81 hw_synd 0/0)\n\
                [1700000001.123456] [gpu7:2201 :0]     ib_mlx5_log.c:179  UCX  ERROR RC QP 0x1b2 wqe[12]: \
                RDMA_WRITE s-- [rva 0x7f00 rkey 0x5] [va 0x7f10 len 8 lkey 0x6] [rqpn 0x1b5 dlid=0 sl=0 port=1 \
                src_path_bits=0 dgid=::ffff:10.0.0.2 flow_label=0x0 sgid_index=3 traffic_class=0]\n";
    let log = read("x", text);
    let p = &log.processes[0];
    assert_eq!(
        (p.library, p.host.as_str(), p.pid),
        (Library::Ucx, "gpu7", 2201)
    );
    assert_eq!(p.settings.traffic_class, Some(106));
    let f = &log.failures[0];
    assert_eq!(
        (
            f.status,
            f.vendor_err,
            f.qpn,
            f.remote_qpn,
            f.remote_gid,
            f.traffic_class,
            f.device.as_deref()
        ),
        (
            Some(12),
            Some(0x81),
            Some(0x1b2),
            Some(0x1b5),
            Some(V4([10, 0, 0, 2])),
            Some(0),
            Some("mlx5_0")
        )
    );
    let q = &log.qps[0];
    assert_eq!(
        (q.qpn, q.remote_qpn, q.peer_addr, q.traffic_class),
        (0x1b2, Some(0x1b5), Some(V4([10, 0, 0, 2])), Some(0))
    );
}

#[test]
fn ucx_dci_line() {
    let text = "[1.000001] [h:9 :0]     ib_mlx5_log.c:179  UCX  ERROR Remote access error on mlx5_1:1/RoCE \
                (synd 0x13 vend 0x88 hw_synd 0/0)\n\
                [1.000001] [h:9 :0]     ib_mlx5_log.c:179  UCX  ERROR DCI QP 0x2c wqe[3]: RDMA_READ s-- [rqpn \
                0x99 rmac 01:02:03:04:05:06 sgix 3 dgid ::ffff:10.1.1.1 tc 34] [rva 0x1 rkey 0x2]\n";
    let f = &read("x", text).failures[0];
    assert_eq!(
        (f.status, f.qpn, f.remote_qpn, f.remote_gid, f.traffic_class),
        (
            Some(10),
            Some(0x2c),
            Some(0x99),
            Some(V4([10, 1, 1, 1])),
            Some(34)
        )
    );
}

/// Lines that only look like the formats are skipped, values out of range left out, and the counts kept
/// bounded.
#[test]
fn hostile_lines() {
    let text = "NCCL INFO NET/IB: qpn 5 mtu 3\n\
                x:y:z [0] NCCL INFO NET/IB: NCCL Dev 0 IbDev 0 Port 1 qpn 5 mtu 3\n\
                h:1:1 [0] NCCL INFO NET/IB: NCCL Dev 0 IbDev 0 Port 1 qpn 16777216 mtu 3\n\
                h:1:1 [0] NCCL INFO NET/IB: NCCL Dev 0 IbDev 0 Port 999 qpn 7 mtu 9 GID 1 (zz/yy)\n\
                h:1:1 [0] NCCL INFO NCCL_IB_TC set by environment to 4000.\n\
                h:1:1 [0] NCCL INFO Channel 00/0 : x[0] -> 1[0] [send] via NET/IB/0\n\
                h:1:1 [0] NCCL INFO NET/IB : Using [0]=:/ [x]a:b/RoCE [1]ok:1/IB\n\
                [1] [h:1 :0] x.c:1 UCX ERROR RC QP zz wqe[1]\n";
    let log = read("x", text);
    assert_eq!(log.processes.len(), 1, "{:?}", log.processes);
    let p = &log.processes[0];
    assert_eq!(p.settings.traffic_class, None);
    assert_eq!(p.devices.len(), 1);
    assert_eq!(log.qps.len(), 1);
    let q = &log.qps[0];
    assert_eq!(
        (q.qpn, q.port, q.mtu, q.addr, q.channel),
        (7, None, None, None, None)
    );
    let many =
        "h:1:1 [0] x.cc:1 NCCL WARN NET/IB : Got completion from peer 1.2.3.4<1> with error 12,\n"
            .repeat(MAX_FAILURES + 10);
    assert_eq!(read("x", &many).failures.len(), MAX_FAILURES);
    let long = format!(
        "h:1:1 [0] x.cc:1 NCCL WARN NET/IB : Got completion from peer {}",
        "é".repeat(10_000)
    );
    assert!(read("x", &long).failures[0].text.len() <= MAX_TEXT);
}
