# Scenarios of the Soft-RoCE lab, sourced by the guest's /init (busybox ash).
# A scenario is a shell function sc_NAME; lab/run NAME runs it. Inside it:
#   perf_pair TOOL "ARGS..." ["SERVER-ONLY ARGS"] ["CLIENT-ONLY ARGS"]
#       runs the perftest TOOL as server on rxe1 and client on rxe0 (RoCEv2 GID index 1, out-of-band
#       exchange over 127.0.0.1) and prints both command lines and outputs.
#   netem DEV ARGS...   adds a root netem qdisc on DEV (removed after the scenario)
#   PT_WRAP="PROGRAM ARGS --"   (set before perf_pair) runs the client command under PROGRAM; PT_JSON=FILE moves
#                       the client output's JSON report (from a line "{" on) to FILE
#   conn_pair LISTEN "SERVER" "CLIENT"   any server/client pair (rping, ibv_rc_pingpong, perftest -R); cm_rules adds
#                       the policy rules RDMA CM needs here (removed after the scenario)
#   lab_return FILE     sends FILE back to the host: lab/out/<scenario>/<basename> (gzip + base64 on the data
#                       channel between "@@@ LAB-FILE name size md5" and "@@@ LAB-FILE-END name" lines)
# The client (rxe0, 10.0.0.1, eth0) is the requester; the host-side capture is taken on eth0's cable end.
# run_scenario sends marker pings (10.0.0.1 -> 10.0.0.2, payload size 1200+2*index (+1 at the end), pattern
# 0xa5) around each scenario so that the host can cut the cable capture into one file per scenario.

QP_TIMEOUT=17       # ~0.5 s; rxe's retransmit timer misfires on a slow emulated guest with the default 14
PT_COMMON="-F -x 1 -u $QP_TIMEOUT"

# Sizes are kept small so that each cable capture stays well under 500 KB.
sc_write()      { perf_pair ib_write_bw  "-s 4096 -n 32"; }
sc_send()       { perf_pair ib_send_bw   "-s 4096 -n 32"; }
sc_read()       { perf_pair ib_read_bw   "-s 4096 -n 32"; }
sc_atomic()     { perf_pair ib_atomic_bw "-A FETCH_AND_ADD -n 100"; }
# 3% random loss on eth0's egress (requests); -t 4 bounds the go-back-N window (4 messages = 16 packets)
sc_write_loss() { netem eth0 loss 3% && perf_pair ib_write_bw "-s 4096 -n 50 -t 4"; }
# traffic class 2 = ECT(0) in the IP header; netem marks 5% of ECT packets CE instead of dropping them
sc_write_ecn()  { netem eth0 loss 5% ecn && perf_pair ib_write_bw "-s 4096 -n 32 --tclass 2"; }
# a tiny receive queue on the receiver (-r 1; perftest 4.5 reports "RX depth: 2"): SENDs that find no
# receive WQE posted get RNR NAKs
sc_send_rnr()   { perf_pair ib_send_bw "-s 1024 -n 50 -t 4" "-r 1"; }
# issue scenario 5: a perftest pair (TOOL -s 4096 -n 32, as sc_write/sc_send/sc_read) under the project's own live
# capture, taken inside the guest on eth0 (the requester's end of the cable; needs EXTRA_BINARIES=.../rocescope):
# capture_perf TOOL runs the client as `rocescope capture -i eth0 -q -w own.pcapng --json -- TOOL ...` and returns
# own.pcapng (rocescope's -w), capture.json (its --json report) and client.log (TOOL's output) next to the host's
# cable.pcap of the same cable. ARGS (default "-s 4096 -n 32") go to both sides.
capture_perf() {
    local r f
    [ -x /usr/local/bin/rocescope ] || { echo "no /usr/local/bin/rocescope: run with EXTRA_BINARIES=target/.../rocescope"; return 1; }
    mkdir -p /tmp/ret
    # rocescope's stdout gets the tool's output (the command inherits it), then the JSON report ("{" alone on a
    # line, serde's pretty printer); -q: no status lines on stderr to interleave with the tool's output.
    PT_WRAP="/usr/local/bin/rocescope capture -i eth0 -q -w /tmp/ret/own.pcapng --json --"
    perf_pair "$1" "${2:--s 4096 -n 32}"
    r=$?
    PT_WRAP=""
    awk '/^\{$/ { j = 1 } { print > (j ? "/tmp/ret/capture.json" : "/tmp/ret/client.log") }' /tmp/client.log
    for f in own.pcapng capture.json client.log; do lab_return /tmp/ret/$f || r=1; done
    rm -rf /tmp/ret
    return $r
}
sc_capture_write() { capture_perf ib_write_bw; }
# two capture points around a lossy hop (a points_* run: lab/relay.py drops every 25th RoCE frame from eth0 to
# eth1 and every 5th back): the guest's own capture on eth0, the host's dumps of both cable ends and the
# hop's drops.pcap
sc_points_write() { capture_perf ib_write_bw "-s 4096 -n 50 -t 4"; }
sc_capture_send()  { capture_perf ib_send_bw; }
sc_capture_read()  { capture_perf ib_read_bw; }
# the project's own verbs generator (needs EXTRA_BINARIES=.../rocescope): two RC QPs, rxe0 (requester) ->
# rxe1, in one process. gen_run ARGS... runs `rocescope gen loopback -d rxe0 --peer-device rxe1 ARGS --json`
# and returns gen.json (its report: QPNs, PSN ranges, data check) and gen.log (its standard error, with the
# exit status on the last line) to lab/out/<scenario>/; with GEN_TAG=T set, gen-T.json and gen-T.log (several
# runs in one scenario).
gen_run() {
    local r f
    [ -x /usr/local/bin/rocescope ] || { echo "no /usr/local/bin/rocescope: run with EXTRA_BINARIES=target/.../rocescope"; return 1; }
    f=gen${GEN_TAG:+-$GEN_TAG}
    mkdir -p /tmp/ret
    echo "+ rocescope gen loopback -d rxe0 --peer-device rxe1 $* --json"
    timeout 120 /usr/local/bin/rocescope gen loopback -d rxe0 --peer-device rxe1 "$@" --json \
        > /tmp/ret/$f.json 2> /tmp/ret/$f.log
    r=$?
    echo "exit $r" >> /tmp/ret/$f.log
    echo "--- gen standard error"; cat /tmp/ret/$f.log
    echo "--- gen standard output"; cat /tmp/ret/$f.json
    lab_return /tmp/ret/$f.json
    lab_return /tmp/ret/$f.log
    cp /tmp/ret/$f.log /tmp/gen-last.log
    rm -rf /tmp/ret
    return $r
}
sc_gen_write() { gen_run --op write -s 4096 -n 32; }
sc_gen_send()  { gen_run --op send -s 4096 -n 32 -x 1; }
sc_gen_read()  { gen_run --op read -s 4096 -n 32; }
# the 8-byte atomics, each under the fabric check: 32 FETCH_ADDs (the returned originals must be the sequence of
# the remote word), then 32 COMPARE_SWAPs (compare = the expected current value, swap = the next: all succeed);
# returns gen-fetch-add.json/.log and gen-cmp-swap.json/.log (two QP pairs, one after the other, on one cable)
sc_gen_atomic() {
    local r=0
    GEN_TAG=fetch-add; gen_run --op fetch-add -n 32 --capture eth0 || r=1
    GEN_TAG=cmp-swap; gen_run --op cmp-swap -n 32 --capture eth0 || r=1
    GEN_TAG=""
    return $r
}
# the text report (no --json): 8 SENDs of 3000 bytes (not a multiple of the MTU), depth 2; returns gen.txt
sc_gen_text() {
    local r
    mkdir -p /tmp/ret
    echo "+ rocescope gen loopback -d rxe0 --peer-device rxe1 --op send -s 3000 -n 8 --depth 2"
    timeout 120 /usr/local/bin/rocescope gen loopback -d rxe0 --peer-device rxe1 --op send -s 3000 -n 8 --depth 2 \
        > /tmp/ret/gen.txt 2>&1
    r=$?
    echo "exit $r" >> /tmp/ret/gen.txt
    cat /tmp/ret/gen.txt
    lab_return /tmp/ret/gen.txt
    rm -rf /tmp/ret
    return $r
}
# 4 QP pairs (-q 4), each with its own PSNs and 32 WRITEs of 1024 bytes (posted round-robin), under the fabric
# check: 8 flows (4 requester, 4 responder) on eth0, each as posted; returns gen.json/gen.log
sc_gen_multi() { gen_run --op write -s 1024 -n 32 -q 4 --capture eth0; }
# -q with the other ops under the fabric check, 3 QP pairs x 32 messages each, small so that the guest's own capture
# keeps up: 1024-byte SENDs and READs (one packet each at MTU 1024), 8-byte FETCH_ADDs; 6 flows each, as posted;
# returns gen.json/gen.log
sc_gen_multi_send()   { gen_run --op send -s 1024 -n 32 -q 3 --capture eth0; }
sc_gen_multi_read()   { gen_run --op read -s 1024 -n 32 -q 3 --capture eth0; }
sc_gen_multi_atomic() { gen_run --op fetch-add -n 32 -q 3 --capture eth0; }
# ECMP entropy: 8 QP pairs of 8 1024-byte WRITEs each, every QP's UDP source port set through the GRH flow label
# (gen --source-port): all on 49152, then swept over 49200-49207 (pair i on 49200 + i); returns gen.json/gen.log
sc_gen_source_port()  { gen_run --op write -s 1024 -n 8 -q 8 --source-port 49152 --capture eth0; }
sc_gen_source_sweep() { gen_run --op write -s 1024 -n 8 -q 8 --source-port 49200-49207 --capture eth0; }
# One message at a time (--depth 1): each WRITE waits for its ACK before the next is posted (no fabric check: a slow
# guest's rxe may resend one on its timer, which the protocol allows); returns gen.json/gen.log
# two QP pairs with traffic class 106 (DSCP 26, ECT(0)): the NCCL logs tests/gen.rs writes for them hold it
sc_gen_tclass() { gen_run --op write -s 1024 -n 16 -q 2 --tclass 106; }
sc_gen_depth1() { gen_run --op write -s 1024 -n 32 --depth 1; }
# gen mesh over the two NICs as two hosts (a: rxe0 at 10.0.0.1, b: rxe1 at 10.0.0.2), each with its gen agent
# bound to its address and capturing its NIC (--capture: each pair's fabric check) (the agents' TCP goes over lo, the RDMA traffic over the cable); every pair one at a time;
# returns mesh.json/mesh.log and the agents' logs; exit: gen mesh's
mesh_run() {
    local R=/usr/local/bin/rocescope D=/tmp/ret r a b f
    [ -x $R ] || { echo "no $R: run with EXTRA_BINARIES=target/.../rocescope"; return 1; }
    mkdir -p $D
    printf 'a 10.0.0.1\nb 10.0.0.2\n' > $D/hosts
    $R gen agent -d rxe0 --bind 10.0.0.1 --capture eth0 > $D/agent-a.log 2>&1 &
    a=$!
    $R gen agent -d rxe1 --bind 10.0.0.2 --capture eth1 > $D/agent-b.log 2>&1 &
    b=$!
    echo "+ $R gen mesh --hosts hosts $* --json"
    timeout 120 $R gen mesh --hosts $D/hosts "$@" --json > $D/mesh.json 2> $D/mesh.log
    r=$?
    echo "exit $r" >> $D/mesh.log
    kill -INT $a $b
    wait $a $b
    cat $D/mesh.log $D/agent-a.log $D/agent-b.log
    for f in mesh.json mesh.log agent-a.log agent-b.log; do lab_return $D/$f; done
    rm -rf $D
    return $r
}
# A fabric of four hosts on one switch, inside the guest: hosts h1-h4 on veths (veth_hosts_up), their peers bp1-bp4
# ports of bridge br0; a gen agent per host. The cable is not used.
FABRIC_HOSTS="1 2 3 4"
fabric_up() {
    local i
    # four veths and a bridge in 2 vCPUs: a long backlog (1000 by default), so that a busy guest drops less on
    # its own (a "clean" pair once lost a request beside a build; where, the run did not say)
    sysctl -qw net.core.netdev_max_backlog=30000
    $IP link add br0 type bridge || return 1
    $IP link set br0 up
    veth_hosts_up "$FABRIC_HOSTS" || return 1
    for i in $FABRIC_HOSTS; do $IP link set bp$i master br0; done
}
fabric_down() {
    veth_hosts_down "$FABRIC_HOSTS"
    $IP link del br0
}
# Hosts on veths, HOSTS their numbers: host hN is veth vhN (10.0.1.N/32, MAC 52:54:00:00:01:0N, rxe_hN on it),
# whose peer bpN the caller joins to the others (a bridge, a bump); traffic from 10.0.1.N leaves through vhN (ip
# rule from 10.0.1.N, before the local table), with static neighbours; no IPv6 (its chatter is not the test's)
veth_hosts_up() {   # veth_hosts_up "1 2 ..."
    local i j n=0
    for i in $1; do
        $IP link add vh$i address 52:54:00:00:01:0$i type veth peer name bp$i || return 1
        sysctl -qw net.ipv6.conf.bp$i.disable_ipv6=1 net.ipv6.conf.vh$i.disable_ipv6=1
        $IP link set bp$i up
        $IP link set vh$i up
        sysctl -qw net.ipv4.conf.vh$i.rp_filter=0 net.ipv4.conf.vh$i.accept_local=1
        $IP addr add 10.0.1.$i/32 dev vh$i
        $IP route add 10.0.1.0/24 dev vh$i src 10.0.1.$i table 11$i
        $IP rule add pref 1$i iif lo from 10.0.1.$i lookup 11$i
        /usr/bin/rdma link add rxe_h$i type rxe netdev vh$i || return 1
    done
    for i in $1; do
        for j in $1; do
            [ $i = $j ] || $IP neigh replace 10.0.1.$j lladdr 52:54:00:00:01:0$j dev vh$i nud permanent
        done
        until grep -q "ffff:0a00:010$i" /sys/class/infiniband/rxe_h$i/ports/1/gids/1 2>/dev/null; do
            n=$((n + 1)); [ $n -lt 100 ] || { echo "no GID on rxe_h$i"; return 1; }
            sleep 0.1
        done
    done
}
veth_hosts_down() {   # veth_hosts_down "1 2 ..."
    local i
    for i in $1; do
        /usr/bin/rdma link delete rxe_h$i
        $IP rule del pref 1$i
        $IP route flush table 11$i
        $IP link del vh$i
    done
}
# the four-host mesh (every pair one at a time, --lossless, the topology: one switch br0) clean, then with 10% of
# h3's link lost both ways (netem on bp3, towards h3, and on vh3, from it), and one probe window of 3 s (every
# host probing the three others at once, 20 a second) on the lossy fabric; each agent captures its veth (every
# pair's fabric check: with several pairs at a time a port's counters cannot tell them apart, the capture can).
# The probes' QPs wait 4.3 s for an ACK (--qp-timeout 20): twelve probing tasks in the 2-vCPU guest kept
# rxe's responders past 0.5 s (gen's 17), and a clean pair's requester resent once on its timer. Then h4 made
# slow, and an incast into a link slow one way (below). Returns clean.json, lossy.json, probe.json, slow.json,
# incast.json and each agent's log
sc_fabric4() {
    local R=/usr/local/bin/rocescope D=/tmp/ret r=0 i pids="" M
    [ -x $R ] || { echo "no $R: run with EXTRA_BINARIES=target/.../rocescope"; return 1; }
    mkdir -p $D
    fabric_up || return 1
    : > $D/hosts
    printf '{"hosts": {' > $D/topology.json
    for i in $FABRIC_HOSTS; do
        echo "h$i 10.0.1.$i" >> $D/hosts
        $R gen agent -d rxe_h$i --bind 10.0.1.$i --capture vh$i > $D/agent-h$i.log 2>&1 &
        pids="$pids $!"
        printf '%s"h%s": {"nic": "rxe_h%s", "tor": "br0"}' "$([ $i = 1 ] || echo ,)" $i $i >> $D/topology.json
    done
    echo '}}' >> $D/topology.json
    M="$R gen mesh --hosts $D/hosts --topology $D/topology.json --pattern pairs --op write -s 4096 -n 32 --lossless --json"
    echo "+ $M  (clean)"
    timeout 150 $M > $D/clean.json 2> $D/clean.log
    echo "exit $?" >> $D/clean.log
    netem bp3 loss 10% && netem vh3 loss 10% || r=1
    echo "+ $M  (h3's link lossy)"
    timeout 150 $M > $D/lossy.json 2> $D/lossy.log
    echo "exit $?" >> $D/lossy.log
    P="$R gen mesh --hosts $D/hosts --topology $D/topology.json --probe --window 3 --windows 1 --probe-rate 20 --qp-timeout 20 --json"
    echo "+ $P  (h3's link lossy)"
    timeout 60 $P > $D/probe.json 2> $D/probe.log
    echo "exit $?" >> $D/probe.log
    netem_clear
    # h4 made slow: its link at 512 kbit/s both ways (tbf on its veth and on its bridge port, a queue of 2 s so
    # that nothing is dropped, the QPs waiting 4.3 s for an ACK so that the queue sets off no timer), every pair
    # held to 1.5 Mb/s, which the others make twice over and more in this guest even beside a build (3-62 Mb/s
    # seen)
    for i in vh4 bp4; do
        echo "+ /usr/sbin/tc qdisc add dev $i root tbf rate 512kbit burst 32kbit latency 2s"
        /usr/sbin/tc qdisc add dev $i root tbf rate 512kbit burst 32kbit latency 2s || r=1
    done
    S="$R gen mesh --hosts $D/hosts --topology $D/topology.json --pattern pairs --op write -s 4096 -n 32 --qp-timeout 20 --expect-gbps 0.0015 --json"
    echo "+ $S  (h4 slow)"
    timeout 150 $S > $D/slow.json 2> $D/slow.log
    echo "exit $?" >> $D/slow.log
    /usr/sbin/tc -s qdisc show dev vh4
    /usr/sbin/tc qdisc del dev vh4 root
    # then only toward h4 (its bridge port), and an incast: the three others into each host in turn, at once
    # (4 messages each: 48 KiB at once fit the port's queue of 2 s, 128 KiB, so nothing is dropped)
    I="$R gen mesh --hosts $D/hosts --topology $D/topology.json --pattern incast-3:1 --op write -s 4096 -n 4 --qp-timeout 20 --expect-gbps 0.0015 --json"
    echo "+ $I  (h4's link slow toward h4)"
    timeout 150 $I > $D/incast.json 2> $D/incast.log
    echo "exit $?" >> $D/incast.log
    /usr/sbin/tc -s qdisc show dev bp4
    /usr/sbin/tc qdisc del dev bp4 root
    kill -INT $pids
    wait $pids
    cat $D/clean.log $D/lossy.log $D/probe.log $D/slow.log $D/incast.log $D/topology.json
    for f in clean.json clean.log lossy.json lossy.log probe.json probe.log slow.json slow.log incast.json \
        incast.log agent-h1.log agent-h2.log agent-h3.log agent-h4.log; do lab_return $D/$f || r=1; done
    rm -rf $D
    fabric_down
    return $r
}
# A bump in the wire: hosts h1 and h2 on veths (veth_hosts_up), their peers bp1 and bp2 joined by nothing but
# `rocescope inject --bridge bp1,bp2` (as a Linux box between a NIC under test and its peer). The cable is not used.
bump_up() { veth_hosts_up "1 2"; }
bump_down() { veth_hosts_down "1 2"; }
# 32 one-packet WRITEs h1 -> h2 through the bump, captured on both sides of it: vh1 (h1's requests before the
# bump, the answers after it) and vh2 (the requests after, the answers before); the bump drops one request and
# the first ACK, marks one CE, corrupts one, duplicates one. Returns both captures, the injection log and what
# the commands said
sc_inject_bump() {
    local R=/usr/local/bin/rocescope D=/tmp/ret r=0 f
    [ -x $R ] || { echo "no $R: run with EXTRA_BINARIES=target/.../rocescope"; return 1; }
    mkdir -p $D
    bump_up || return 1
    set -- $R capture -i vh1 -q -w $D/before.pcap -- \
        $R capture -i vh2 -q -w $D/after.pcap -- \
        $R inject --bridge bp1,bp2 --log $D/bump.jsonl --rule 'req psn=+5 drop' --rule 'resp class=ack drop' \
            --rule 'req psn=+9 ce' --rule 'req psn=+13 corrupt' --rule 'req psn=+17 duplicate' -- \
        $R gen loopback -d rxe_h1 --peer-device rxe_h2 --op write -s 1024 -n 32 --json
    echo "+ $*"
    timeout 120 "$@" > $D/gen.json 2> $D/bump.log
    echo "exit $?" >> $D/bump.log
    cat $D/bump.log
    for f in before.pcap after.pcap bump.jsonl gen.json bump.log; do lab_return $D/$f || r=1; done
    rm -rf $D
    bump_down
    return $r
}
# a clean cable: both pairs pass --lossless (exit 0)
sc_mesh_clean() { mesh_run --pattern pairs --op write -s 4096 -n 256 --lossless; }
# probes: two windows of 2 s, each host sending 64-byte WRITEs to the other at 10 a second (one JSON line a
# window in mesh.json)
sc_mesh_probe() { mesh_run --probe --window 2 --windows 2 --probe-rate 10 --expect-p99-us 1000000; }
# the ring of two: a->b and b->a at once (each agent serving and requesting at the same time); WRITEs: with SENDs
# a busy guest's responder reposts its receives late, and the RNR NAKs fail the fabric check
sc_mesh_ring() { mesh_run --pattern ring --op write -s 4096 -n 256; }
# 3% of eth0's egress dropped (a's requests, a's ACKs to b): a->b resends, so the mesh fails (exit 3)
sc_mesh_loss() {
    local r
    netem eth0 loss 3% || return 1
    mesh_run --pattern pairs --op write -s 4096 -n 256 --lossless
    r=$?
    [ $r -eq 3 ]
}
# ECN: traffic class 2 (rxe puts it in the IP TOS: ECT(0)), netem on eth0 marks 5% of the ECT requests CE instead
# of dropping them; the fabric check reports the CE marks as congestion signals and passes (exit 0); returns
# gen.json/gen.log
sc_gen_ecn() { netem eth0 loss 5% ecn && gen_run --op write -s 4096 -n 64 --tclass 2 --capture eth0; }
# a path MTU of 4096 on 1500-byte NICs: rxe would send nothing and never complete; gen must refuse it (exit 1,
# the scenario succeeds when it does)
sc_gen_bad_mtu() { ! gen_run --op write -s 4096 -n 4 --mtu 4096; }
# a wrong R_Key on the last of 4 WRITEs (gen --fault bad-rkey): rxe1 answers with a NAK (remote access error)
# and the requester's completion is IBV_WC_REM_ACCESS_ERR; gen must exit 1 naming it (the scenario succeeds
# when it does)
sc_gen_bad_rkey() { ! gen_run --op write -s 4096 -n 4 --fault bad-rkey; }
# every request dropped on eth0 (netem loss 100%): rxe 6.1 retransmits forever (its completer_retry_err climbs,
# no IBV_WC_RETRY_EXC_ERR ever comes, even with a short QP timeout), so only gen's own deadline (--timeout 1)
# ends the run: exit 1 naming it (the scenario succeeds when it does)
sc_gen_deadline() { netem eth0 loss 100% && ! gen_run --op write -s 4096 -n 4 --timeout 1; }
# The failures of a requester that gives up (retry counts below 7: rxe, like the IBTA, retries for ever with 7).
# Each scenario succeeds when gen ends as the fault must make it end: exit 1, one error line naming the
# completion status. Each prints rxe's hw_counters before and after (all of them: "rxeN counter value"; the
# lines "rxe hw_counters that changed" at the end of the log are the differences over the whole scenario),
# then, after gen has ended, waits and sends one end-of-capture ping (tail_ping): the capture's last two frames
# (ICMP echo 10.0.0.1 -> 10.0.0.2 and its reply, 64 data bytes of 0x5a) come after that silence, so that the
# capture shows the requester silent from its last frame to them.
# gen_fails_with WORDS ARGS...: gen_run ARGS must exit 1 with one error line that contains WORDS
gen_fails_with() {
    local want=$1 r
    shift
    gen_run "$@"
    r=$?
    [ $r -eq 1 ] || { echo "gen_fails_with: gen exited $r, not 1"; return 1; }
    [ "$(grep -c '' /tmp/gen-last.log)" -eq 2 ] || { echo "gen_fails_with: not one error line"; return 1; }
    grep -q "$want" /tmp/gen-last.log || { echo "gen_fails_with: gen's error line does not say $want"; return 1; }
}
counters_now() {   # counters_now WHEN: every hw_counter of rxe0 and rxe1, and the guest's uptime
    local u
    read -r u _ < /proc/uptime
    echo "--- rxe hw_counters $1 (uptime $u)"
    counters
}
tail_ping() {   # tail_ping SECONDS: silence, then the end-of-capture ping
    local u
    sleep "$1"
    read -r u _ < /proc/uptime
    echo "+ ping -c 1 -s 64 -p 5a -I 10.0.0.1 10.0.0.2 (end of capture; uptime $u, $1 s after gen ended)"
    ping -c 1 -W 2 -s 64 -p 5a -I 10.0.0.1 10.0.0.2 > /dev/null 2>&1 || echo "tail_ping: no reply"
}
# --fault wrong-qpn: the requester QP (rxe0) is connected to rxe1's QPN + 0x100, which no QP has: rxe1 drops
# every request without an answer; rxe0 resends the 32 packets of the 8 WRITEs (go-back-N from the oldest
# unacknowledged PSN) each time its QP timer (14: 4.096 us * 2^14, ~67 ms) expires, 3 times (--retry-count 3),
# then completes the first WRITE with IBV_WC_RETRY_EXC_ERR (and flushes the others); returns gen.json/gen.log
sc_gen_wrong_qpn() {
    local r=0
    counters_now before
    gen_fails_with IBV_WC_RETRY_EXC_ERR --op write -s 4096 -n 8 --retry-count 3 --qp-timeout 14 --fault wrong-qpn \
        || r=1
    counters_now after
    dmesg | grep -i 'rxe' | tail -n 5
    tail_ping 1
    return $r
}
# --fault no-receive: rxe1's QP posts no receive: each SEND finds none and rxe1 answers with an RNR NAK (timer:
# gen's min_rnr_timer 12, 0.64 ms); rxe0 waits and resends, 3 times (--rnr-retry 3; the 4th RNR NAK ends it),
# then completes the first SEND with IBV_WC_RNR_RETRY_EXC_ERR; returns gen.json/gen.log
# The local ACK timer against the QP's settings: five requesters whose one 1024-byte WRITE goes to a QPN no QP
# has, each with its own timeout exponent and retry count (T R): resent R times, 4.096 us x 2^T apart, then
# IBV_WC_RETRY_EXC_ERR (gen's error_after_s: when the QP gave up); returns gen-tT-rR.json/.log for each
sc_gen_timers() {
    local r=0 tc
    for tc in 14:3 15:2 16:6 17:3 18:1; do
        GEN_TAG=t${tc%:*}-r${tc#*:}
        gen_fails_with IBV_WC_RETRY_EXC_ERR --op write -s 1024 -n 1 --qp-timeout ${tc%:*} --retry-count ${tc#*:} \
            --fault wrong-qpn || r=1
    done
    GEN_TAG=
    return $r
}
sc_gen_no_receive() {
    local r=0
    counters_now before
    gen_fails_with IBV_WC_RNR_RETRY_EXC_ERR --op send -s 1024 -n 4 --rnr-retry 3 --fault no-receive || r=1
    counters_now after
    tail_ping 1
    return $r
}
# A responder that dies mid-transfer: gen server on rxe1 and gen client on rxe0 in this guest (the out-of-band
# exchange over 127.0.0.1, the RDMA traffic over the cable), 1024-byte WRITEs (one packet each) paced at 100
# messages/s, at most 4 in flight, --retry-count 3, --qp-timeout 17 (~0.54 s). Once rxe1 has received
# KILL_AFTER packets the server gets kill -9 (its QP goes with it: rxe1 drops what comes next without an
# answer); the client resends the unacknowledged WRITEs on its timer, 3 times, then completes the oldest with
# IBV_WC_RETRY_EXC_ERR. The log has the guest uptime of the begin marker (SC_T0), of the kill and of the
# server's reaping (its QP destroyed by then: on a loaded machine the killed process may take 100 ms and more to
# go, answering all the while). Returns
# gen.json/gen.log (the client: its report and standard error, exit status last) and server.log.
KILL_AFTER=40
sc_gen_responder_killed() {
    local R=/usr/local/bin/rocescope D=/tmp/ret r=0 s c p0 v i=0 t1 t2 F=/sys/class/infiniband/rxe1/ports/1/hw_counters/rcvd_pkts
    [ -x $R ] || { echo "no $R: run with EXTRA_BINARIES=target/.../rocescope"; return 1; }
    mkdir -p $D
    counters_now before
    echo "+ $R gen server -d rxe1 --bind 127.0.0.1 -p 18620 --runs 1 --timeout 30 --json &"
    # not under timeout(1): $! must be the server itself (it ends on its own after --timeout 30 anyway)
    $R gen server -d rxe1 --bind 127.0.0.1 -p 18620 --runs 1 --timeout 30 --json > $D/server.json 2> $D/server.log &
    s=$!
    wait_listen 18620 || r=1
    read -r p0 < $F
    echo "+ $R gen client 127.0.0.1 -p 18620 -d rxe0 --op write -s 1024 --depth 4 --duration 30 --rate 100 --retry-count 3 --qp-timeout 17 --json &"
    timeout 120 $R gen client 127.0.0.1 -p 18620 -d rxe0 --op write -s 1024 --depth 4 --duration 30 --rate 100 \
        --retry-count 3 --qp-timeout 17 --json > $D/gen.json 2> $D/gen.log &
    c=$!
    # kill -9 the server once rxe1 has received KILL_AFTER packets (read: no fork per poll)
    while read -r v < $F && [ $((v - p0)) -lt $KILL_AFTER ] && [ $i -lt 1500 ]; do sleep 0.02; i=$((i + 1)); done
    read -r t1 _ < /proc/uptime
    kill -9 $s
    read -r t2 _ < /proc/uptime
    echo "+ kill -9 <the gen server> (rxe1 had received $((v - p0)) packets, at least $KILL_AFTER)"
    echo "killed the server (kill -9) at guest uptime $t1..$t2 s, after rxe1 received $((v - p0)) packets; begin marker SC_T0=$SC_T0"
    wait $s
    echo "server: exit $? (137: killed)" >> $D/server.log
    # a process's files (its QP with them) are closed before its parent's wait returns: rxe1 answers nothing
    # generated after this
    read -r t3 _ < /proc/uptime
    echo "the server was reaped at guest uptime $t3 (its QP gone)"
    wait $c
    echo "exit $?" >> $D/gen.log
    read -r t1 _ < /proc/uptime
    echo "client ended at guest uptime $t1"
    echo "--- gen client standard error"; cat $D/gen.log
    echo "--- gen client standard output"; cat $D/gen.json
    echo "--- gen server standard error"; cat $D/server.log
    counters_now after
    dmesg | grep -i 'rxe' | tail -n 5
    [ "$(tail -n 1 $D/gen.log)" = "exit 1" ] || { echo "the client did not exit 1"; r=1; }
    [ "$(grep -c '' $D/gen.log)" -eq 2 ] && grep -q IBV_WC_RETRY_EXC_ERR $D/gen.log \
        || { echo "the client's error is not one IBV_WC_RETRY_EXC_ERR line"; r=1; }
    for f in gen.json gen.log server.log; do lab_return $D/$f || r=1; done
    rm -rf $D
    tail_ping 2
    return $r
}
# the one-line fabric check: gen --capture eth0 (eth0 sees both directions of the cable) captures from before the
# first work request to 0.5 s after the last completion and checks the flows, PSN ranges and request counts it
# posted, with no gap, NAK or retransmission. gen_check: clean, the text report (returns gen.txt: standard
# output; gen.log: standard error and the exit status); exit 0 with "FABRIC CHECK: PASS" last.
sc_gen_check() {
    local r
    [ -x /usr/local/bin/rocescope ] || { echo "no /usr/local/bin/rocescope: run with EXTRA_BINARIES=target/.../rocescope"; return 1; }
    mkdir -p /tmp/ret
    echo "+ rocescope gen loopback -d rxe0 --peer-device rxe1 --op write -s 4096 -n 32 --capture eth0"
    timeout 120 /usr/local/bin/rocescope gen loopback -d rxe0 --peer-device rxe1 --op write -s 4096 -n 32 \
        --capture eth0 > /tmp/ret/gen.txt 2> /tmp/ret/gen.log
    r=$?
    echo "exit $r" >> /tmp/ret/gen.log
    cat /tmp/ret/gen.txt /tmp/ret/gen.log
    lab_return /tmp/ret/gen.txt
    lab_return /tmp/ret/gen.log
    rm -rf /tmp/ret
    return $r
}
# the same with 3% loss on eth0's egress (requests, dropped before the wire and before eth0's capture): RC
# recovers (NAK, go-back-N; --depth 4 bounds the window), the data check passes, the fabric check fails with
# gaps, NAKs and retransmissions: exit 3 (the scenario succeeds when it does); gen.json has the `capture` key
sc_gen_check_loss() { netem eth0 loss 3% && { gen_run --op write -s 4096 -n 64 --depth 4 --capture eth0; [ $? -eq 3 ]; }; }
# issue scenario 6, a benchmark (not pass/fail on the figures): perftest's ib_write_bw (-s 65536 -n 200, rxe0 ->
# rxe1 as perf_pair runs it; its default TX depth is 128) and then the generator with the same size, count and
# window, in the same guest one after the other; returns perftest-client.log / perftest-server.log (perftest's
# output: BW average in MB/sec = MiB/s) and gen.json / gen.log (gen's report: gbps, data check)
sc_gen_vs_perftest() {
    local r=0
    [ -x /usr/local/bin/rocescope ] || { echo "no /usr/local/bin/rocescope: run with EXTRA_BINARIES=target/.../rocescope"; return 1; }
    perf_pair ib_write_bw "-s 65536 -n 200" || r=1
    mkdir -p /tmp/ret
    cp /tmp/client.log /tmp/ret/perftest-client.log
    cp /tmp/server.log /tmp/ret/perftest-server.log
    lab_return /tmp/ret/perftest-client.log
    lab_return /tmp/ret/perftest-server.log
    rm -rf /tmp/ret
    gen_run --op write -s 65536 -n 200 --depth 128 || r=1
    return $r
}
# --duration and --rate: 4096-byte WRITEs paced at 500 messages/s for 1 s, then the window drains; returns
# gen.json / gen.log (stopped_by "duration", about 500 messages, the rate achieved)
sc_gen_paced() { gen_run --op write -s 4096 --duration 1 --rate 500; }
# pacing under the fabric check: 4096-byte WRITEs at 200 messages/s for 1 s with --capture eth0 (PASS, exit 0);
# returns gen.json / gen.log
sc_gen_paced_check() { gen_run --op write -s 4096 --duration 1 --rate 200 --capture eth0; }
# Connections (issue 12): the RDMA CM handshake (REQ, REP, RTU, REJ, DREQ, DREP: MADs on QP 1, RoCEv2 UD SEND
# ONLY frames on the cable) and the QPNs and PSNs the tools print, for a connection table to be checked against.
# The rdma_cm user-space tools need rdma_ucm (/dev/infiniband/rdma_cm) and librdmacm (lab/build-initramfs), and two
# more policy rules in this one-guest topology (cm_rules, removed after the scenario):
#  - pref 98 `oif eth1 from 10.0.0.2 to 10.0.0.1 lookup 101`: the passive side checks a REQ with a FIB lookup from
#    its address to the client's with oif = the receiving netdev and no iif (rdma_cm's validate_net_dev), which
#    the `iif lo` rules of lab/guest/init do not match: without it rdma_cm rejects every REQ (REJ reason 28,
#    consumer defined) and the server never sees it;
#  - pref 99 `iif lo to 10.0.0.2 lookup 100`: a client that resolves 10.0.0.2 with no source address (perftest -R
#    does, whatever --source_ip says) gets eth0 and rxe0 instead of the local route, which would bind it to rxe1
#    and keep its traffic inside rxe1 (nothing on the cable).
# rping binds its client to 10.0.0.1 with -I. The CM picks the QPs' starting PSNs (perftest -R prints PSNs of its
# own that the QPs do not use) and their ACK timeout (the REQ's primary local ACK timeout, 19: perftest 4.5 -R sets
# no ACK timeout option, so -u does not apply).
CM_RULES=""
cm_rules() {
    [ "$LAB_ROLE" = single ] || return 0
    echo "+ /usr/sbin/ip rule add pref 98 oif eth1 from 10.0.0.2 to 10.0.0.1 lookup 101"
    /usr/sbin/ip rule add pref 98 oif eth1 from 10.0.0.2 to 10.0.0.1 lookup 101 || return 1
    CM_RULES="98"
    echo "+ /usr/sbin/ip rule add pref 99 iif lo to 10.0.0.2 lookup 100"
    /usr/sbin/ip rule add pref 99 iif lo to 10.0.0.2 lookup 100 || return 1
    CM_RULES="98 99"
}
cm_rules_clear() {
    for p in $CM_RULES; do /usr/sbin/ip rule del pref "$p"; done
    CM_RULES=""
}
wait_tcp_listen() {   # wait_tcp_listen PORT: until a TCP socket (IPv4 or IPv6) listens on PORT (10 s at most)
    local i=0
    until listening "$1"; do
        i=$((i + 1)); [ $i -lt 100 ] || { echo "nothing listens on TCP port $1"; return 1; }
        sleep 0.1
    done
}
wait_cm_listen() {   # wait_cm_listen PORT: until an RDMA CM id listens on PORT (10 s at most)
    local i=0
    until /usr/bin/rdma res show cm_id 2>/dev/null | grep "state LISTEN" | grep -q ":$1 "; do
        i=$((i + 1)); [ $i -lt 100 ] || { echo "no RDMA CM id listens on port $1"; return 1; }
        sleep 0.1
    done
}
# conn_pair LISTEN "SERVER COMMAND" "CLIENT COMMAND": the server in the background until it listens (LISTEN:
# tcp:PORT, a TCP socket, or cm:PORT, an RDMA CM id), then the client (60 s at most), then the server's end (10 s at
# most); prints both command lines, then "--- server output (exit N)" and "--- client output (exit N)" with each
# one's output (kept in /tmp/server.log and /tmp/client.log; the exit statuses in CONN_SRC and CONN_CRC); returns 0
# when both exited 0
CONN_SRC=""; CONN_CRC=""
conn_pair() {
    local listen=$1 scmd=$2 ccmd=$3 spid src crc n=0
    echo "+ server: $scmd"
    echo "+ client: $ccmd"
    $scmd > /tmp/server.log 2>&1 &
    spid=$!
    case $listen in
        cm:*) wait_cm_listen "${listen#cm:}" ;;
        tcp:*) wait_tcp_listen "${listen#tcp:}" ;;
    esac || { kill $spid; wait $spid; echo "--- server output"; cat /tmp/server.log; return 1; }
    timeout 60 $ccmd > /tmp/client.log 2>&1
    crc=$?
    while kill -0 $spid 2>/dev/null && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
    kill -0 $spid 2>/dev/null && { echo "server still running: killing it"; kill $spid; }
    wait $spid
    src=$?
    echo "--- server output (exit $src)"; cat /tmp/server.log
    echo "--- client output (exit $crc)"; cat /tmp/client.log
    CONN_SRC=$src; CONN_CRC=$crc
    [ $crc -eq 0 ] && [ $src -eq 0 ]
}
# qpn_skew DEV N: DEV hands out its next N QP numbers to a program that exits (ibv_srq_pingpong -q N, killed
# while it waits for its client), so that the two ends of the next connection get different QPNs (rxe numbers QPs
# per device, upwards; rxe0 and rxe1 otherwise stay in step in this guest, and both ends would have the same QPN).
# The conn_* scenarios with a server call it first.
qpn_skew() {
    local pid
    echo "+ ibv_srq_pingpong -d $1 -g 1 -q $2 -p 18529 & (killed once it listens: $1's QPNs move on by $2)"
    ibv_srq_pingpong -d "$1" -g 1 -q "$2" -p 18529 > /tmp/skew.log 2>&1 &
    pid=$!
    wait_tcp_listen 18529 || { kill $pid; cat /tmp/skew.log; return 1; }
    kill $pid
    wait $pid
    return 0
}
# rping (librdmacm's example): server on rxe1's address, client bound to rxe0's (-I), 4 pings of 64 bytes, the data
# checked on both sides (-V), printed by the client (-v). One RC connection: REQ, REP, RTU, then per ping the client's
# SEND (its buffer's address and R_Key), the server's RDMA READ of it, the server's SEND, the client's SEND, the
# server's RDMA WRITE, the server's SEND; then DREQ and DREP (the client disconnects). rping's client exits 255 now
# and then after all its pings (1 run in 4 here) with "rdma_get_cm_event: Bad file descriptor": its CM event thread
# still reads the event channel that the main thread destroys as it ends (rdma-core 44) and calls exit(-1); the
# traffic is complete, and the scenario takes that exit as a success, with all the pings printed.
sc_conn_rping() {
    cm_rules || return 1
    qpn_skew rxe1 2 || return 1
    conn_pair cm:7174 "rping -s -a 10.0.0.2 -p 7174 -C 4 -S 64 -V" \
        "rping -c -a 10.0.0.2 -I 10.0.0.1 -p 7174 -C 4 -S 64 -v -V" && return 0
    [ "$CONN_SRC" = 0 ] && [ "$CONN_CRC" = 255 ] && grep -qx 'rdma_get_cm_event: Bad file descriptor' /tmp/client.log \
        && [ "$(grep -c '^ping data: rdma-ping-' /tmp/client.log)" = 4 ] \
        && echo "rping's client: exit 255 after its 4 pings, its CM event thread's teardown race: taken as a success"
}
# ib_write_bw with RDMA CM (-R): the server listens on every device (0.0.0.0), the client connects to 10.0.0.2. Two
# RC connections, each with its REQ, REP and RTU: perftest's own exchange (SENDs both ways, then more after the
# test) and the test's QP (the WRITEs); then DREQs and DREPs for both.
sc_conn_write_cm() {
    cm_rules || return 1
    qpn_skew rxe1 2 || return 1
    conn_pair cm:18540 "ib_write_bw -R -d rxe1 $PT_COMMON -s 4096 -n 16 -p 18540" \
        "ib_write_bw -R -d rxe0 $PT_COMMON -s 4096 -n 16 -p 18540 10.0.0.2"
}
# A REQ to a port nobody listens on: rping's client to port 7999, then ib_write_bw -R's to port 18541; ib_cm on rxe1
# finds no listener for the service ID and answers each with a REJ (reason 8, invalid service ID). Succeeds when
# both clients fail (rping: exit 255; perftest: exit 1).
sc_conn_reject() {
    local r=0 c
    cm_rules || return 1
    echo "+ client: rping -c -a 10.0.0.2 -I 10.0.0.1 -p 7999 -C 1 -S 64 -v (no server)"
    timeout 30 rping -c -a 10.0.0.2 -I 10.0.0.1 -p 7999 -C 1 -S 64 -v > /tmp/client.log 2>&1
    c=$?
    echo "--- client output (exit $c)"; cat /tmp/client.log
    [ $c -ne 0 ] || { echo "rping connected to a port without a server"; r=1; }
    echo "+ client: ib_write_bw -R -d rxe0 $PT_COMMON -s 4096 -n 16 -p 18541 10.0.0.2 (no server)"
    timeout 30 ib_write_bw -R -d rxe0 $PT_COMMON -s 4096 -n 16 -p 18541 10.0.0.2 > /tmp/client.log 2>&1
    c=$?
    echo "--- client output (exit $c)"; cat /tmp/client.log
    [ $c -ne 0 ] || { echo "ib_write_bw connected to a port without a server"; r=1; }
    return $r
}
# perftest without CM (its out-of-band exchange over TCP on 127.0.0.1, the QPNs and PSNs it prints are the ones its
# QPs use) under the project's own live capture (issue scenario 5, as capture_perf; needs EXTRA_BINARIES): the client
# runs as `rocescope capture -i eth0 -q -w own.pcapng --json -- ib_write_bw ...`; rocescope's JSON report goes to
# capture.json (returned), not into the log; returns capture.json and own.pcapng
sc_conn_write() {
    local r
    [ -x /usr/local/bin/rocescope ] || { echo "no /usr/local/bin/rocescope: run with EXTRA_BINARIES=target/.../rocescope"; return 1; }
    qpn_skew rxe1 2 || return 1
    mkdir -p /tmp/ret
    PT_WRAP="/usr/local/bin/rocescope capture -i eth0 -q -w /tmp/ret/own.pcapng --json --"
    PT_JSON=/tmp/ret/capture.json
    perf_pair ib_write_bw "-s 4096 -n 16"
    r=$?
    PT_WRAP=""; PT_JSON=""
    lab_return /tmp/ret/capture.json || r=1
    lab_return /tmp/ret/own.pcapng || r=1
    rm -rf /tmp/ret
    return $r
}
# ibv_rc_pingpong (rdma-core's example; out-of-band exchange over TCP on 127.0.0.1): 8 round trips of 1024 bytes
# (one SEND each way per iteration); it prints its own QPN and PSN ("  local address:  LID 0x0000, QPN 0x000011, PSN
# 0x2b7c8d, GID ::ffff:10.0.0.1") and its peer's ("  remote address: ..."); its QP timeout is 14 (~67 ms, fixed)
sc_conn_rc_pingpong() {
    qpn_skew rxe1 2 || return 1
    conn_pair tcp:18545 "ibv_rc_pingpong -d rxe1 -g 1 -s 1024 -n 8 -p 18545" \
        "ibv_rc_pingpong -d rxe0 -g 1 -s 1024 -n 8 -p 18545 127.0.0.1"
}
# no traffic: devices, GIDs, and the --version of every extra binary (lab/build-initramfs EXTRA_BINARIES)
# gen server / gen client against peers that lie (busybox nc plays the other end on 127.0.0.1; needs
# EXTRA_BINARIES): a "server" answering with a line that is not a gen message, one whose welcome claims an
# active MTU of 0, a "client" asking for 256 GiB of buffers, and one that connects and says nothing. Each
# rocescope must end with one line and exit 1; returns hostile-N.log (its standard error, exit status last)
# and, for the servers, what the fake client received (hostile-N.got).
HOSTILE_WELCOME='{"msg":"welcome","qps":[{"endpoint":{"device":"rxe9","port":1,"netdev":null,"netdev_mtu":null,"active_mtu":0,"gid_index":1,"gid":"::ffff:10.0.0.2","gid_type":"RoCE v2","gid_choice":"","ip":"10.0.0.2","qpn":17,"sq_psn":1,"rq_psn":0},"addr":0,"rkey":0}],"max_rd_atom":16}'
HOSTILE_HELLO='{"msg":"hello","version":1,"op":"write","size":1073741824,"qps":64,"depth":16,"slots":4096,"iters":1}'
wait_listen() {   # wait_listen PORT: until a TCP socket listens on PORT (10 s at most); a test connection
    local hex i=0  # would count as the server's client, so /proc/net/tcp is read instead
    hex=$(printf '%04X' "$1")
    until grep -q ":$hex 00000000:0000 0A" /proc/net/tcp 2>/dev/null; do
        i=$((i + 1)); [ $i -lt 100 ] || { echo "nothing listens on port $1"; return 1; }
        sleep 0.1
    done
}
sc_gen_hostile_peer() {
    local R=/usr/local/bin/rocescope r=0 i
    [ -x $R ] || { echo "no $R: run with EXTRA_BINARIES=target/.../rocescope"; return 1; }
    mkdir -p /tmp/ret
    # 1 and 2: fake servers
    for i in 1 2; do
        if [ $i -eq 1 ]; then reply='HTTP/1.0 200 OK'; else reply=$HOSTILE_WELCOME; fi
        { sleep 2; echo "$reply"; } | nc -l -p $((18600 + i)) > /tmp/ret/hostile-$i.got &
        sleep 0.3
        echo "+ $R gen client 127.0.0.1 -p $((18600 + i)) -d rxe0 --op write -s 4096 -n 4"
        timeout 60 $R gen client 127.0.0.1 -p $((18600 + i)) -d rxe0 --op write -s 4096 -n 4 --connect-timeout 10 \
            > /dev/null 2> /tmp/ret/hostile-$i.log
        echo "exit $?" >> /tmp/ret/hostile-$i.log
        wait
    done
    # 3 and 4: fake clients
    for i in 3 4; do
        echo "+ $R gen server -d rxe1 -p $((18600 + i)) --runs 1 --timeout 2"
        timeout 60 $R gen server -d rxe1 -p $((18600 + i)) --runs 1 --timeout 2 > /dev/null 2> /tmp/ret/hostile-$i.log &
        s=$!
        wait_listen $((18600 + i)) || r=1
        if [ $i -eq 3 ]; then
            { echo "$HOSTILE_HELLO"; sleep 3; } | nc 127.0.0.1 $((18600 + i)) > /tmp/ret/hostile-$i.got
        else
            sleep 5 | nc 127.0.0.1 $((18600 + i)) > /tmp/ret/hostile-$i.got
        fi
        wait $s
        echo "exit $?" >> /tmp/ret/hostile-$i.log
    done
    for i in 1 2 3 4; do
        cat /tmp/ret/hostile-$i.log
        lab_return /tmp/ret/hostile-$i.log || r=1
    done
    for i in 3 4; do lab_return /tmp/ret/hostile-$i.got || r=1; done
    rm -rf /tmp/ret
    return $r
}
# Two guests (lab/run boots two for duo_* scenarios; LAB_ROLE is a or b): `gen server` on b (10.0.0.2),
# `gen client 10.0.0.2` on a (10.0.0.1) with the fabric check on eth0, once per operation in DUO_OPS; the
# out-of-band TCP exchange crosses the cable too. a returns client-OP.json / client-OP.log (stderr, exit status
# last), b returns server.json (one JSON document per client run) and server.log as b-server.*. A last client
# run (WRITE, --duration 60 at 50 messages/s) gets SIGINT after 3 s: client-sigint.json / .log. Its QP timeout
# is 20 (~4.3 s): rxe 6.1 arms the retransmit timer once and does not push it back, so a requester that stays
# busy longer than the timeout retransmits with nothing lost (seen here with 17 after 2.5 s at 50/s). Then the
# peer that disappears: b kills its next server (-9) once that client's traffic flows; the client (--timeout 3)
# must end on its own with one line: client-gone.json / .log.
DUO_OPS="write write-imm send read fetch-add"
sc_duo_gen() {
    local r=0 op n
    [ -x /usr/local/bin/rocescope ] || { echo "no /usr/local/bin/rocescope: run with EXTRA_BINARIES=target/.../rocescope"; return 1; }
    mkdir -p /tmp/ret
    n=$(($(echo $DUO_OPS | wc -w) + 1))
    if [ "$LAB_ROLE" = b ]; then
        echo "+ rocescope gen server -d rxe0 --runs $n --timeout 60 --json"
        timeout 200 /usr/local/bin/rocescope gen server -d rxe0 --runs "$n" --timeout 60 --json \
            > /tmp/ret/server.json 2> /tmp/ret/server.log
        r=$?
        echo "exit $r" >> /tmp/ret/server.log
        cat /tmp/ret/server.log
        lab_return /tmp/ret/server.json || r=1
        lab_return /tmp/ret/server.log || r=1
        # the peer that disappears: a server killed (-9) once the next client's traffic flows
        echo "+ rocescope gen server -d rxe0 --runs 1 & ; kill -9 once 200 more packets arrived"
        /usr/local/bin/rocescope gen server -d rxe0 --runs 1 --timeout 60 > /dev/null 2> /tmp/ret/killed.log &
        c=$!
        p0=$(cat /sys/class/infiniband/rxe0/ports/1/hw_counters/rcvd_pkts)
        i=0
        while [ $(($(cat /sys/class/infiniband/rxe0/ports/1/hw_counters/rcvd_pkts) - p0)) -lt 200 ] && [ $i -lt 600 ]; do
            sleep 0.1; i=$((i + 1))
        done
        kill -9 $c
        wait $c
        echo "killed: exit $? after $i polls" >> /tmp/ret/killed.log
        cat /tmp/ret/killed.log
    else
        for op in $DUO_OPS; do
            echo "+ rocescope gen client 10.0.0.2 -d rxe0 --op $op -s 4096 -n 32 --capture eth0 --json"
            timeout 120 /usr/local/bin/rocescope gen client 10.0.0.2 -d rxe0 --op "$op" -s 4096 -n 32 \
                --connect-timeout 90 --capture eth0 --json > /tmp/ret/client-$op.json 2> /tmp/ret/client-$op.log
            c=$?
            echo "exit $c" >> /tmp/ret/client-$op.log
            cat /tmp/ret/client-$op.log
            [ $c -eq 0 ] || r=1
            lab_return /tmp/ret/client-$op.json || r=1
            lab_return /tmp/ret/client-$op.log || r=1
        done
        echo "+ rocescope gen client 10.0.0.2 -d rxe0 --op write -s 4096 --duration 60 --rate 50 --json &; kill -INT after 3 s"
        /usr/local/bin/rocescope gen client 10.0.0.2 -d rxe0 --op write -s 4096 --duration 60 --rate 50 --qp-timeout 20 \
            --connect-timeout 90 --json > /tmp/ret/client-sigint.json 2> /tmp/ret/client-sigint.log &
        c=$!
        sleep 3
        kill -INT $c
        wait $c
        echo "exit $?" >> /tmp/ret/client-sigint.log
        cat /tmp/ret/client-sigint.log
        lab_return /tmp/ret/client-sigint.json || r=1
        lab_return /tmp/ret/client-sigint.log || r=1
        echo "+ rocescope gen client 10.0.0.2 -d rxe0 --op write -s 4096 --duration 60 --rate 50 --timeout 3 --json (the server is killed)"
        timeout 120 /usr/local/bin/rocescope gen client 10.0.0.2 -d rxe0 --op write -s 4096 --duration 60 --rate 50 \
            --timeout 3 --connect-timeout 90 --json > /tmp/ret/client-gone.json 2> /tmp/ret/client-gone.log
        echo "exit $?" >> /tmp/ret/client-gone.log
        cat /tmp/ret/client-gone.log
        lab_return /tmp/ret/client-gone.json || r=1
        lab_return /tmp/ret/client-gone.log || r=1
    fi
    rm -rf /tmp/ret
    return $r
}
sc_info() {
    for c in "ibv_devices" "ibv_devinfo" "/usr/bin/rdma link" "/usr/bin/rdma dev"; do echo "+ $c"; $c; done
    for b in /usr/local/bin/*; do [ -x "$b" ] && { echo "+ $b --version"; "$b" --version; }; done
    true
}

# rocescope doctor and counters (needs EXTRA_BINARIES=.../rocescope).
# doctor_run TAG ARGS...: `rocescope doctor ARGS --json` into doctor-TAG.json (its exit status in doctor-TAG.exit)
# and the text form into doctor-TAG.txt ("exit N" last), all returned.
doctor_run() {
    local t=$1 r
    shift
    /usr/local/bin/rocescope doctor "$@" --json > /tmp/ret/doctor-$t.json 2>&1
    r=$?
    echo "$r" > /tmp/ret/doctor-$t.exit
    /usr/local/bin/rocescope doctor "$@" > /tmp/ret/doctor-$t.txt 2>&1
    echo "exit $?" >> /tmp/ret/doctor-$t.txt
    echo "+ rocescope doctor $* (exit $r)"; cat /tmp/ret/doctor-$t.txt
    for f in json exit txt; do lab_return /tmp/ret/doctor-$t.$f || return 1; done
}
# port_state DEV WANT: waits (5 s at most) until DEV's port 1 is in state WANT ("4: ACTIVE", "1: DOWN")
port_state() {
    local i=0 s
    while read -r s < /sys/class/infiniband/$1/ports/1/state && [ "$s" != "$2" ] && [ $i -lt 100 ]; do
        sleep 0.05; i=$((i + 1))
    done
    echo "$1 port 1: $s"
    [ "$s" = "$2" ]
}
# tree_copy FILE...: each file's content (cat: a sysfs attribute becomes a plain file) at /tmp/tree/FILE
tree_copy() {
    local f
    for f in "$@"; do
        [ -f "$f" ] || continue
        [ -d "/tmp/tree${f%/*}" ] || mkdir -p "/tmp/tree${f%/*}"
        cat "$f" > "/tmp/tree$f" 2>/dev/null || rm -f "/tmp/tree$f"
    done
}
# host_tree: the trimmed tree doctor --root reads (testdata/host/rxe): rxe0/rxe1 and their ports (GID entries 0-7:
# the other 1016 are empty), eth0/eth1, /proc/net/arp, the sysctls, the kernel log (dmesg -r), ibv_devinfo -v, the
# provider's driver file; the libraries as empty files of their names. Returned as tree.tar.
host_tree() {
    local d i B
    rm -rf /tmp/tree
    for d in rxe0 rxe1; do
        B=/sys/class/infiniband/$d
        tree_copy $B/node_guid $B/node_type $B/node_desc $B/fw_ver $B/parent $B/sys_image_guid \
            $B/ports/1/state $B/ports/1/phys_state $B/ports/1/link_layer $B/ports/1/rate $B/ports/1/cap_mask \
            $B/ports/1/lid $B/ports/1/sm_lid $B/ports/1/hw_counters/* \
            $B/ports/1/gid_attrs/types/0 $B/ports/1/gid_attrs/types/1 $B/ports/1/gid_attrs/ndevs/0 $B/ports/1/gid_attrs/ndevs/1
        for i in 0 1 2 3 4 5 6 7; do tree_copy $B/ports/1/gids/$i; done
    done
    for d in eth0 eth1; do
        B=/sys/class/net/$d
        tree_copy $B/mtu $B/operstate $B/carrier $B/speed $B/flags $B/ifindex $B/address $B/type $B/statistics/*
    done
    tree_copy /proc/net/arp /proc/sys/net/ipv4/tcp_ecn /proc/sys/kernel/osrelease /etc/libibverbs.d/rxe.driver
    for d in ib_core ib_uverbs rdma_rxe; do mkdir -p /tmp/tree/sys/module/$d; done
    mkdir -p /tmp/tree/usr/lib/x86_64-linux-gnu/libibverbs /tmp/tree/dev
    : > /tmp/tree/usr/lib/x86_64-linux-gnu/libibverbs.so.1
    for f in /usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav*.so; do : > "/tmp/tree$f"; done
    dmesg -r > /tmp/tree/dev/kmsg
    ibv_devinfo -v > /tmp/tree/ibv_devinfo 2>&1
    tar -C /tmp/tree -cf /tmp/ret/tree.tar . && lab_return /tmp/ret/tree.tar
}
# doctor on the healthy pair (and the tree it read), then broken two ways and mended: eth1 down (rxe1's port goes
# DOWN), eth1 up again (the route of table 101 and the permanent neighbour that went with the link put back), eth0's
# MTU at 1000 (below the 1104 that IB MTU 1024 needs on rxe: rxe0's active MTU drops to 512), back at 1500; doctor
# after each. Returns tree.tar and doctor-{healthy,down,mtu,mended}.{json,exit,txt}.
sc_doctor() {
    local r=0 IP=/usr/sbin/ip
    [ -x /usr/local/bin/rocescope ] || { echo "no /usr/local/bin/rocescope: run with EXTRA_BINARIES=target/.../rocescope"; return 1; }
    mkdir -p /tmp/ret
    host_tree || r=1
    doctor_run healthy || r=1
    echo "+ ip link set eth1 down"; $IP link set eth1 down
    port_state rxe1 "1: DOWN" || r=1
    doctor_run down || r=1
    echo "+ ip link set eth1 up (and table 101's route, eth1's neighbour)"; $IP link set eth1 up
    $IP route replace 10.0.0.1/32 dev eth1 src 10.0.0.2 table 101
    $IP neigh replace 10.0.0.1 lladdr 52:54:00:12:34:01 dev eth1 nud permanent
    port_state rxe1 "4: ACTIVE" || r=1
    echo "+ ip link set eth0 mtu 1000"; $IP link set eth0 mtu 1000
    doctor_run mtu || r=1
    echo "+ ip link set eth0 mtu 1500"; $IP link set eth0 mtu 1500
    doctor_run mended || r=1
    rm -rf /tmp/ret /tmp/tree
    return $r
}
# counters and the capture side by side under loss: netem drops 3% of eth0's egress (rxe0's requests, before the
# wire and before eth0's capture point); `rocescope counters` runs meanwhile, as JSON (--interval 0.25:
# counters.jsonl, its last line the whole run's deltas) and as text (--interval 0.5: counters.txt), both stopped
# with SIGINT; `rocescope capture -i eth0 -q --json -- rocescope gen loopback ... --op write -s 4096 -n 128
# --depth 4` captures in the guest, where the counters are (capture.json: its report with `counters`; gen.json:
# gen's report, which capture passes to standard error); then the same with -n 16 as text (capture.txt: gen's
# report, then the capture's). rxe's hw_counters before and after (counters_now) and netem's statistics
# (netem_clear, after the scenario) are in the log.
sc_counters_loss() {
    local R=/usr/local/bin/rocescope D=/tmp/ret r=0 c t G
    [ -x $R ] || { echo "no $R: run with EXTRA_BINARIES=target/.../rocescope"; return 1; }
    G="$R gen loopback -d rxe0 --peer-device rxe1 --op write -s 4096 --depth 4"
    mkdir -p $D
    netem eth0 loss 3% || return 1
    counters_now before
    echo "+ $R counters --interval 0.25 --json & $R counters --interval 0.5 &"
    $R counters --interval 0.25 --json > $D/counters.jsonl 2> $D/counters.log &
    c=$!
    $R counters --interval 0.5 > $D/counters.txt 2>&1 &
    t=$!
    echo "+ $R capture -i eth0 -q --json -- $G -n 128 --json"
    timeout 120 $R capture -i eth0 -q --json -- $G -n 128 --json > $D/capture.json 2> $D/gen.json
    echo "capture: exit $?"
    kill -INT $c $t
    wait $c
    echo "counters: exit $?" >> $D/counters.log
    wait $t
    counters_now after
    echo "+ $R capture -i eth0 -q -- $G -n 16"
    timeout 120 $R capture -i eth0 -q -- $G -n 16 > $D/capture.txt 2>&1
    echo "exit $?" >> $D/capture.txt
    cat $D/counters.log $D/counters.txt $D/capture.txt
    for f in counters.jsonl counters.log counters.txt capture.json gen.json capture.txt; do lab_return $D/$f || r=1; done
    rm -rf $D
    return $r
}

# Retries and reordering (for the analysis' false alarms: a READ resumed mid-message, ACKs and requests out of order).
# netem on eth1 acts on the responder's packets (READ responses, ACKs), on eth0 on the requests; the cable capture
# is taken after netem (outside the guest), so a packet netem drops is on no capture. Sizes: a few hundred to a few
# thousand frames. lab/retry_facts.py derives what each shows from tshark fields and the log.
# READs of 8 packets (8192 bytes at path MTU 1024), at most 4 in flight (-t 4 -o 4), 4% of the READ responses lost:
# rxe's requester asks again for the rest of a READ from its first missing response (a READ request at PSN + k,
# VA + k * 1024, length 8192 - k * 1024) and resends the READs behind it whole
sc_read_loss_resp() { netem eth1 loss 4% && perf_pair ib_read_bw "-s 8192 -n 32 -t 4 -o 4"; }
# READ requests lost (15% of eth0's egress; READs of 4 packets, 64 of them: with 10% one run in 22 here lost
# none, 0.9^64; 0.85^64 is 3e-5): the responder NAKs the next READ (PSN sequence error) or the requester's timer
# fires, and the READs are resent whole
sc_read_loss_req() { netem eth0 loss 15% && perf_pair ib_read_bw "-s 4096 -n 64 -t 4 -o 4"; }
# the project's generator's READs (needs EXTRA_BINARIES) with 4% of the responses lost, as read_loss_resp
sc_gen_read_loss() { netem eth1 loss 4% && gen_run --op read -s 8192 -n 32 --depth 4; }
# FETCH_AND_ADDs with 5% loss each way: lost requests (NAK, resend) and lost ATOMIC ACKNOWLEDGEs (the requester
# resends the atomic with the same PSN and operands; the responder answers it from its cache of atomic results)
sc_atomic_loss() { netem eth0 loss 5% && netem eth1 loss 5% && perf_pair ib_atomic_bw "-A FETCH_AND_ADD -n 100 -t 4 -o 4"; }
# issue 21: packets chosen by PSN acted on by `rocescope inject` (NFQUEUE on the guest's output hook, which rxe's
# requests and responses both leave through) while ib_write_bw runs under it: the 6th request's first transmission
# dropped, the first ACK dropped, the 10th request CE-marked, the 14th corrupted (its ICRC wrong), the 18th sent
# twice, the 22nd held behind the 23rd, the second ACK 20 ms late; the log
# (inject.jsonl: one JSON line per action, the counts last) comes back beside the cable. Needs EXTRA_BINARIES.
sc_inject_write() {
    local r
    [ -x /usr/local/bin/rocescope ] || { echo "no /usr/local/bin/rocescope: run with EXTRA_BINARIES"; return 1; }
    cat > /tmp/inject-wrap <<'EOF2'
#!/bin/sh
exec rocescope inject --log /tmp/inject.jsonl --rule 'req psn=+5 drop' --rule 'resp class=ack drop' \
    --rule 'req psn=+9 ce' --rule 'req psn=+13 corrupt' --rule 'req psn=+17 duplicate' \
    --rule 'req psn=+21 reorder' --rule 'resp class=ack delay 20ms' -- "$@"
EOF2
    chmod +x /tmp/inject-wrap
    PT_WRAP=/tmp/inject-wrap perf_pair ib_write_bw "-s 1024 -n 32 -t 4"; r=$?
    PT_WRAP=""
    echo "--- inject log"; cat /tmp/inject.jsonl
    lab_return /tmp/inject.jsonl || r=1
    return $r
}
# rocescope conform: the NIC conformance suite on rxe0 -> rxe1 (each scenario the generator's traffic through the
# injector's rules, captured on eth0, then judged); the report (JSON) and each scenario's capture, injection log and
# output come back. Exit 3 (a verdict failed) is a result, not a failure of the scenario. Needs EXTRA_BINARIES.
sc_conform() {
    local r f
    [ -x /usr/local/bin/rocescope ] || { echo "no /usr/local/bin/rocescope: run with EXTRA_BINARIES"; return 1; }
    echo "+ rocescope conform -d rxe0 --peer-device rxe1 -i eth0 --out /tmp/conform --json"
    timeout 270 /usr/local/bin/rocescope conform -d rxe0 --peer-device rxe1 -i eth0 --out /tmp/conform --json \
        > /tmp/conform.json; r=$?
    echo "conform exit $r"
    lab_return /tmp/conform.json || r=1
    for f in /tmp/conform/*; do lab_return "$f" || r=1; done
    [ $r -eq 0 ] || [ $r -eq 3 ]
}
# The conformance suite with the faults made by a bump in the wire (bump_up: rxe_h1 on vh1, rxe_h2 on vh2, their
# peers bp1 and bp2 joined only by `inject --bridge bp1,bp2`); each run captured as the bump sends on. Returns as
# sc_conform does
sc_conform_bump() {
    local r f
    [ -x /usr/local/bin/rocescope ] || { echo "no /usr/local/bin/rocescope: run with EXTRA_BINARIES"; return 1; }
    bump_up || return 1
    echo "+ rocescope conform -d rxe_h1 --peer-device rxe_h2 --bridge bp1,bp2 --out /tmp/conform --json"
    timeout 270 /usr/local/bin/rocescope conform -d rxe_h1 --peer-device rxe_h2 --bridge bp1,bp2 \
        --out /tmp/conform --json > /tmp/conform.json; r=$?
    echo "conform exit $r"
    [ $r -eq 0 ] || [ $r -eq 3 ] || r=1
    # two scenarios three times each: the table's medians and maxima (files NAME.K.*)
    echo "+ rocescope conform ... --scenario write_request_lost --scenario rnr_retry --repeat 3 --out /tmp/conform3 --json"
    timeout 120 /usr/local/bin/rocescope conform -d rxe_h1 --peer-device rxe_h2 --bridge bp1,bp2 \
        --scenario write_request_lost --scenario rnr_retry --repeat 3 --out /tmp/conform3 --json > /tmp/conform3.json
    echo "conform --repeat 3 exit $?"
    bump_down
    lab_return /tmp/conform.json || r=1
    lab_return /tmp/conform3.json || r=1
    for f in /tmp/conform/* /tmp/conform3/*; do lab_return "$f" || r=1; done
    [ $r -eq 0 ] || [ $r -eq 3 ]
}
# reordering on the path (no loss): netem delays 75% of the packets by 1 ms and sends 25% (correlation 50%) at once,
# ahead of the delayed ones; 1 ms is far below the QP timeout (-u 17, about 0.5 s). Requests reordered (eth0): the
# responder NAKs the PSN it expected (sequence error) and the requester goes back to it
sc_write_reorder_req() { netem eth0 delay 1ms reorder 25% 50% && perf_pair ib_write_bw "-s 4096 -n 128 -t 8"; }
# ACKs reordered (eth1): one-packet WRITEs, each acknowledged; an ACK with a lower PSN and MSN after a higher one.
# 5 ms, not 1: an ACK overtakes only those sent less than the delay before it, and on a loaded machine the slow
# guest spaced its ACKs more than 1 ms apart (a run with no ACK reordered). 400 WRITEs, not 100: the ACKs come in
# bursts (16 in flight) whose netem choices are correlated, and one run of 100 had none reordered
sc_write_reorder_resp() { netem eth1 delay 5ms reorder 25% 50% && perf_pair ib_write_bw "-s 1024 -n 400 -t 16"; }
# READ responses reordered (eth1; READs of 4 packets): the requester drops the responses behind a missing one and asks for the rest of
# the READ again (resumed READs), as with loss
sc_read_reorder_resp() { netem eth1 delay 1ms reorder 25% 50% && perf_pair ib_read_bw "-s 4096 -n 32 -t 4 -o 4"; }

# ---------------------------------------------------------------------------------------------------------
NETEM_DEVS=""
netem() {
    dev=$1; shift
    echo "+ /usr/sbin/tc qdisc add dev $dev root netem $*"
    /usr/sbin/tc qdisc add dev "$dev" root netem "$@" || return 1
    NETEM_DEVS="$NETEM_DEVS $dev"
}
netem_clear() {
    for dev in $NETEM_DEVS; do
        echo "+ /usr/sbin/tc -s qdisc show dev $dev"
        /usr/sbin/tc -s qdisc show dev "$dev"
        /usr/sbin/tc qdisc del dev "$dev" root
    done
    NETEM_DEVS=""
}

# is something listening on TCP port $1?
listening() {
    hex=$(printf ':%04X' "$1")
    cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk -v p="$hex" 'substr($2, length($2) - 4) == p && $4 == "0A" { f = 1 } END { exit !f }'
}

PT_PORT=18515
perf_pair() {
    tool=$1; args=$2; sargs=${3:-}; cargs=${4:-}
    PT_PORT=$((PT_PORT + 1))
    scmd="$tool -d rxe1 $PT_COMMON $args${sargs:+ $sargs} -p $PT_PORT"
    ccmd="$tool -d rxe0 $PT_COMMON $args${cargs:+ $cargs} -p $PT_PORT 127.0.0.1"
    echo "+ server: $scmd"
    echo "+ client: $ccmd"
    $scmd > /tmp/server.log 2>&1 &
    spid=$!
    n=0
    until listening $PT_PORT; do
        n=$((n + 1))
        if [ $n -gt 200 ] || ! kill -0 $spid 2>/dev/null; then
            echo "server did not start listening"; cat /tmp/server.log; kill $spid 2>/dev/null; return 1
        fi
        sleep 0.05
    done
    t0=$(cut -d' ' -f1 /proc/uptime)
    [ -n "${PT_WRAP:-}" ] && echo "+ client wrapped: $PT_WRAP $ccmd"
    timeout 120 ${PT_WRAP:-} $ccmd > /tmp/client.log 2>&1
    crc=$?
    if [ -n "${PT_JSON:-}" ]; then   # the wrapper's JSON report ("{" alone on a line, on): to PT_JSON, not the log
        awk -v j="$PT_JSON" '/^\{$/ { f = 1 } { if (f) print > j; else print }' /tmp/client.log > /tmp/client.txt
        mv /tmp/client.txt /tmp/client.log
    fi
    n=0
    while kill -0 $spid 2>/dev/null && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
    kill -0 $spid 2>/dev/null && { echo "server still running: killing it"; kill $spid; }
    wait $spid
    src=$?
    t1=$(cut -d' ' -f1 /proc/uptime)
    echo "--- server output (exit $src)"; cat /tmp/server.log
    echo "--- client output (exit $crc)"; cat /tmp/client.log
    echo "--- guest time for the pair: $(echo "$t1 $t0" | awk '{ printf "%.2f s", $1 - $2 }')"
    [ $crc -eq 0 ] && [ $src -eq 0 ]
}

lab_return() {   # lab_return FILE: to the host as lab/out/<scenario>/<basename of FILE>
    local base
    [ -f "$1" ] || { echo "lab_return: no file $1"; return 1; }
    base=$(basename "$1")
    echo "@@@ LAB-FILE $base $(wc -c < "$1") $(md5sum < "$1" | cut -d' ' -f1)"
    gzip -c "$1" | base64
    echo "@@@ LAB-FILE-END $base"
}

counters() {   # "rxeN counter value" lines (one grep: forks are slow in an emulated guest)
    grep -H '' /sys/class/infiniband/rxe[01]/ports/1/hw_counters/* |
        sed 's|^/sys/class/infiniband/\(rxe[01]\)/ports/1/hw_counters/\([^:]*\):|\1 \2 |'
}

marker() {  # marker INDEX 0|1 (sent by the guest at 10.0.0.1 only)
    [ "$LAB_ROLE" != b ] || return 0
    ping -c 1 -W 1 -I 10.0.0.1 -s $((1200 + 2 * $1 + $2)) -p a5 10.0.0.2 > /dev/null 2>&1
}

run_scenario() {
    idx=$1; name=$2
    if ! type "sc_$name" > /dev/null 2>&1; then
        say "@@@ LAB-BEGIN $idx $name"
        say "unknown scenario '$name'"
        say "@@@ LAB-END $idx $name rc=2"
        return 1
    fi
    say "@@@ LAB-BEGIN $idx $name uptime=$(cut -d' ' -f1 /proc/uptime)"
    counters > /tmp/c0
    marker "$idx" 0
    read -r SC_T0 _ < /proc/uptime   # the guest's clock just after the begin marker (scenarios may log times from it)
    sleep 0.2
    "sc_$name" >&3 2>&1
    r=$?
    sleep 0.6   # let trailing ACKs/retransmissions finish (QP timeout ~0.5 s)
    netem_clear >&3 2>&1
    cm_rules_clear >&3 2>&1
    marker "$idx" 1
    counters > /tmp/c1
    {
        echo "--- rxe hw_counters that changed"
        awk 'NR == FNR { a[$1 " " $2] = $3; next } ($3 - a[$1 " " $2]) != 0 { print $1, $2, "+" ($3 - a[$1 " " $2]) }' /tmp/c0 /tmp/c1
    } >&3 2>&1
    say "@@@ LAB-END $idx $name rc=$r uptime=$(cut -d' ' -f1 /proc/uptime)"
    return $r
}

# ---------------------------------------------------------------------------------------------------------
# `rocescope lab up | status | down` (needs EXTRA_BINARIES=.../rocescope and the veth module): the Soft-RoCE
# loopback on a veth pair (rlab0/rlab1, rxe_rlab0/rxe_rlab1, 10.79.91.1/2, tables 7991/7992, rules at pref 10/11)
# beside the guest's own rxe0/rxe1. To exercise down's restores, the guest is first put back in a stock host's
# state (the local table rule at pref 0, all.rp_filter 1), and its own settings are put back at the end.
# Returns before.txt / during.txt / after.txt (ip -d link, ip rule, ip route show table all, permanent
# neighbours, rdma link, rp_filter/accept_local), up.txt, status.txt, down.txt, status-after.txt (each with
# "exit N" last), gen-write.json/.log and gen-read.json/.log (gen loopback --capture rlab0 --json).
labnet_snap() {
    {
        echo "--- ip -d link"; /usr/sbin/ip -d link
        echo "--- ip rule"; /usr/sbin/ip rule
        echo "--- ip route show table all"; /usr/sbin/ip route show table all
        echo "--- ip neigh show nud permanent"; /usr/sbin/ip neigh show nud permanent
        echo "--- rdma link"; /usr/bin/rdma link
        echo "--- sysctl"; grep -H '' /proc/sys/net/ipv4/conf/*/rp_filter /proc/sys/net/ipv4/conf/*/accept_local
    } > "$1" 2>&1
}
labnet_step() {   # labnet_step FILE COMMAND...: output and "exit N" in FILE; returns the command's status
    local f=$1 r
    shift
    echo "+ $*"
    timeout 120 "$@" > "$f" 2>&1
    r=$?
    echo "exit $r" >> "$f"
    cat "$f"
    return $r
}
sc_lab_updown() {
    local r=0 R=/usr/local/bin/rocescope D=/tmp/ret op rc
    [ -x $R ] || { echo "no $R: run with EXTRA_BINARIES=target/.../rocescope"; return 1; }
    mkdir -p $D
    /usr/sbin/ip rule add pref 0 lookup local && /usr/sbin/ip rule del pref 200 lookup local || r=1
    echo 1 > /proc/sys/net/ipv4/conf/all/rp_filter || r=1
    labnet_snap $D/before.txt
    labnet_step $D/up.txt $R lab up || r=1
    labnet_snap $D/during.txt
    labnet_step $D/status.txt $R lab status || r=1
    for op in write send read fetch-add; do
        echo "+ $R gen loopback -d rxe_rlab0 --peer-device rxe_rlab1 --op $op -s 4096 -n 32 --capture rlab0 --json"
        timeout 120 $R gen loopback -d rxe_rlab0 --peer-device rxe_rlab1 --op $op -s 4096 -n 32 --capture rlab0 \
            --json > $D/gen-$op.json 2> $D/gen-$op.log
        rc=$?
        [ $rc -eq 0 ] || r=1
        echo "exit $rc" >> $D/gen-$op.log
        cat $D/gen-$op.log
    done
    labnet_step $D/down.txt $R lab down || r=1
    labnet_step $D/status-after.txt $R lab status && r=1
    labnet_snap $D/after.txt
    cmp -s $D/before.txt $D/after.txt || { echo "before/after differ:"; diff $D/before.txt $D/after.txt; r=1; }
    # the guest's own settings back (lab/guest/init)
    echo 0 > /proc/sys/net/ipv4/conf/all/rp_filter
    /usr/sbin/ip rule add pref 200 lookup local && /usr/sbin/ip rule del pref 0 lookup local || r=1
    for f in before during after; do lab_return $D/$f.txt || r=1; done
    for f in up status down status-after; do lab_return $D/$f.txt || r=1; done
    for op in write send read fetch-add; do lab_return $D/gen-$op.json && lab_return $D/gen-$op.log || r=1; done
    rm -rf $D
    return $r
}

