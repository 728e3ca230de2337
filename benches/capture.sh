#!/usr/bin/env bash
# Sustained rate of the live capture: how many frames per second `rocescope capture` takes without kernel
# drops, against tcpdump, on the same traffic.
#
#   sudo benches/capture.sh          (root is needed for the network namespace and the veth pair)
#
# Generates (once) target/bench/synth-FRAMES-QPS-SEED.pcap with the synth example (500,000 frames, 64 RC
# connections, 0.03 % loss, MTU 1024 by default), creates a network namespace of its own holding a veth pair
# (rsa <-> rsb; removed on exit), and for each replay rate of the ladder RATES (tcpreplay --pps, then
# --topspeed; the file preloaded in memory with -K) replays the file into rsa while one tool captures on rsb:
#   rocescope      rocescope capture -i rsb -q --json --buffer-size BUFFER       (release build, analyses)
#   rocescope-w    the same with -w FILE, FILE on tmpfs (/dev/shm), removed after each run
#   rocescope-snap the same as rocescope with --snaplen SNAPLEN (2048: still whole frames here). It mattered
#                  while rocescope opened the handle in immediate mode (until commit 53ca667): libpcap then gave
#                  it a TPACKET_V2 ring of fixed-size slots of min(snaplen, 65535) + 18 bytes (interfaces with
#                  offloads, as veth and most NICs), 512 slots in 32M at the default snaplen, 15,769 at 2048
#                  (PACKET_RX_RING as seen with gdb). Both tools now get TPACKET_V3, whose blocks pack frames by
#                  their length.
#   rocescope-alt  (not run by default) as rocescope, with the binary ALT_ROCESCOPE (to try a change)
#   tcpdump        tcpdump -i rsb -nn -w /dev/null FILTER                         (libpcap's default buffer)
#   tcpdump-B      tcpdump -i rsb -nn -B BUFFER/KiB -w /dev/null FILTER           (the same buffer as rocescope)
#   tcpdump-B-w    (not run by default) tcpdump -B with -w FILE on tmpfs, the counterpart of rocescope-w
# FILTER is rocescope's default capture filter, so that the kernel runs the same BPF program for every tool.
# Each tool starts, its packet socket is waited for, the replay runs, GRACE seconds later the tool gets
# SIGINT. Per run: tcpreplay's achieved rate ("Rated: ... pps") and failed sends, the frames rsb received
# (its rx_packets), the frames the tool saw (rocescope: the report's capture.frames, and capture_stats
# received/dropped/if_dropped; tcpdump: "packets captured / received by filter / dropped by kernel") and its
# CPU time (/usr/bin/time -f '%e %U %S %M'; CPU % is user+system over the replay's duration). Every point
# (rate, tool) runs RUNS times (3 by default), interleaved; the table shows the medians and the worst (largest)
# kernel drop count and frames missed (received by rsb but not seen by the tool).
#
# Before each point it waits (up to IDLE_WAIT seconds, 1800 by default, saying so) until no other heavy
# process runs (scripts/test, cargo, rustc, qemu-system), so that the measurement is not disturbed; when one
# is running at the end of the point, the point is measured again (at most 3 times, then kept and marked).
#
# GEN=blast replays with examples/blast.rs instead of tcpreplay (sendmmsg on a packet socket past the qdisc, the
# file in memory, LOOPS times: beyond tcpreplay's ceiling, to find where the capture starts to drop; RATES then
# in the millions, e.g. "500000 1000000 2000000 top").
#
# Environment: GEN (tcpreplay), LOOPS (1; GEN=blast), FRAMES, QPS, SEED, LOSS, MTU, RUNS, RATES ("50000 100000 200000 400000 top"), TOOLS
# ("rocescope rocescope-w rocescope-snap tcpdump tcpdump-B"), SNAPLEN (2048), ALT_ROCESCOPE, BUFFER (32M,
# rocescope's default; tcpdump -B gets the same in KiB), GRACE (2 seconds), IDLE_WAIT. Installs time, tcpdump,
# tcpreplay, jq and iproute2 with apt-get when missing (via sudo when not root).
set -euo pipefail
cd "$(dirname "$0")/.."

FRAMES=${FRAMES:-500000}
QPS=${QPS:-64}
SEED=${SEED:-1}
LOSS=${LOSS:-0.0003}
MTU=${MTU:-1024}
RUNS=${RUNS:-3}
RATES=${RATES:-50000 100000 200000 400000 top}
TOOLS=${TOOLS:-rocescope rocescope-w rocescope-snap tcpdump tcpdump-B}
SNAPLEN=${SNAPLEN:-2048}
ALT_ROCESCOPE=${ALT_ROCESCOPE:-}
BUFFER=${BUFFER:-32M}
GRACE=${GRACE:-2}
IDLE_WAIT=${IDLE_WAIT:-1800}
GEN=${GEN:-tcpreplay}
LOOPS=${LOOPS:-1}

sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)

missing=()
[ -x /usr/bin/time ] || missing+=(time)
command -v tcpdump >/dev/null 2>&1 || missing+=(tcpdump)
command -v tcpreplay >/dev/null 2>&1 || missing+=(tcpreplay)
command -v jq >/dev/null 2>&1 || missing+=(jq)
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
if ((${#missing[@]})); then
    echo "installing: ${missing[*]}"
    "${sudo[@]}" apt-get update -qq
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# BUFFER in bytes and in KiB (tcpdump -B takes KiB).
case $BUFFER in
    *[Kk]) buffer_bytes=$((${BUFFER%?} * 1024)) ;;
    *[Mm]) buffer_bytes=$((${BUFFER%?} * 1024 * 1024)) ;;
    *[Gg]) buffer_bytes=$((${BUFFER%?} * 1024 * 1024 * 1024)) ;;
    *) buffer_bytes=$BUFFER ;;
esac
buffer_kib=$((buffer_bytes / 1024))

dir=target/bench
mkdir -p "$dir"
cargo build --release --locked --quiet --bin rocescope --example synth --example blast
blast=$PWD/target/release/examples/blast
# A copy, so that a rebuild during the run cannot change the binary measured.
rocescope=$PWD/$dir/rocescope-capture
cp target/release/rocescope "$rocescope"
build="git $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
changed=$(git status --porcelain --untracked-files=no 2>/dev/null | awk '{print $2}' | tr '\n' ' ')
[ -z "$changed" ] || build="$build + uncommitted changes to: $changed"
file=$PWD/$dir/synth-$FRAMES-$QPS-$SEED.pcap
if [ ! -s "$file" ]; then
    echo "generating $file"
    target/release/examples/synth --frames "$FRAMES" --qps "$QPS" --seed "$SEED" --loss "$LOSS" --mtu "$MTU" \
        --out "$file.part" --truth "${file%.pcap}.truth.json"
    mv "$file.part" "$file"
fi

# The namespace, the veth pair and the files; everything is removed on exit, and any tool still running
# (by its process id) is stopped.
ns=rocescope-bench-$$
tmp=$(mktemp -d)
shm=$(mktemp -d /dev/shm/rocescope-bench.XXXXXX)
tool_pid=
cleanup() {
    if [ -n "$tool_pid" ]; then kill -INT "$tool_pid" 2>/dev/null || true; fi
    "${sudo[@]}" ip netns del "$ns" 2>/dev/null || true
    rm -rf "$tmp" "$shm"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

inns() { "${sudo[@]}" ip netns exec "$ns" "$@"; }
"${sudo[@]}" ip netns add "$ns"
inns sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
inns ip link add rsa type veth peer name rsb
inns ip link set rsa up
inns ip link set rsb up
filter="udp dst port 4791 or (vlan and udp dst port 4791) or ether proto 0x8915 or ether proto 0x8808"

# Into the page cache first (tcpreplay -K then loads it into its own memory before sending).
cat "$file" >/dev/null

# Waits until no other heavy process runs (at most IDLE_WAIT seconds). Process names (not command lines:
# a command line can mention cargo in an environment variable or a path) for cargo, rustc and qemu; the
# command line for scripts/test. Sets `disturbed` when it gave up waiting.
disturbed=
heavy() {
    {
        pgrep -a cargo || true
        pgrep -a rustc || true
        pgrep -a qemu-system || true
        pgrep -af '(^|[ /])scripts/test( |$)' || true
    } | awk -v self=$$ '$1 != self' | cut -c1-100
}
wait_idle() {
    local waited=0 busy
    busy=$(heavy)
    while [ -n "$busy" ]; do
        if ((waited >= IDLE_WAIT)); then
            echo "still busy after ${IDLE_WAIT} s; measuring anyway (marked in the output):" >&2
            echo "$busy" >&2
            disturbed="$disturbed $1"
            return
        fi
        if ((waited % 60 == 0)); then
            echo "waiting (${waited} s so far, at most ${IDLE_WAIT} s) for these to end before measuring:" >&2
            printf '    %s\n' "${busy//$'\n'/$'\n'    }" >&2
        fi
        sleep 10
        waited=$((waited + 10))
        busy=$(heavy)
    done
}

rx_packets() { inns cat /sys/class/net/rsb/statistics/rx_packets; }

# run_point TOOL RATE: one replay at RATE (pps, or "top") captured by TOOL; appends one line to $tmp/results:
# tool rate achieved_pps sent failed offered seen received dropped if_dropped replay_s cpu_s elapsed_s max_kb
run_point() {
    local tool=$1 rate=$2 out=$tmp/out err=$tmp/err
    local cmd=()
    case $tool in
        rocescope) cmd=("$rocescope" capture -i rsb -q --json --buffer-size "$BUFFER") ;;
        rocescope-w) cmd=("$rocescope" capture -i rsb -q --json --buffer-size "$BUFFER" -w "$shm/capture.pcap") ;;
        rocescope-snap) cmd=("$rocescope" capture -i rsb -q --json --buffer-size "$BUFFER" --snaplen "$SNAPLEN") ;;
        rocescope-alt) cmd=("$ALT_ROCESCOPE" capture -i rsb -q --json --buffer-size "$BUFFER") ;;
        tcpdump) cmd=(tcpdump -i rsb -nn -w /dev/null "$filter") ;;
        tcpdump-B) cmd=(tcpdump -i rsb -nn -B "$buffer_kib" -w /dev/null "$filter") ;;
        tcpdump-B-w) cmd=(tcpdump -i rsb -nn -B "$buffer_kib" -w "$shm/capture.pcap" "$filter") ;;
        *) echo "unknown tool $tool" >&2; exit 2 ;;
    esac
    local sockets0
    sockets0=$(inns cat /proc/net/packet | wc -l)
    # The tool under /usr/bin/time; the shell writes its own pid (the tool's, after exec) for the SIGINT.
    # shellcheck disable=SC2016 # $$ and $@ are the inner shell's
    inns /usr/bin/time -f '%e %U %S %M' -o "$tmp/time" \
        sh -c 'echo $$ > "$0"; exec "$@"' "$tmp/pid" "${cmd[@]}" >"$out" 2>"$err" &
    local time_pid=$!
    local i ready=
    for i in $(seq 100); do
        if [ -s "$tmp/pid" ] && [ "$(inns cat /proc/net/packet | wc -l)" -gt "$sockets0" ]; then
            ready=1
            break
        fi
        if ! kill -0 "$time_pid" 2>/dev/null; then
            echo "$tool failed to start:" >&2
            tail -n 5 "$err" >&2
            exit 1
        fi
        sleep 0.1
    done
    [ -n "$ready" ] || { echo "$tool: no packet socket after $((i / 10)) s" >&2; exit 1; }
    tool_pid=$(cat "$tmp/pid")
    # The socket exists; give the tool time to set its ring and filter.
    sleep 0.5
    local rx0 rx1 speed=()
    rx0=$(rx_packets)
    if [ "$GEN" = blast ]; then
        if [ "$rate" = top ]; then speed=(); else speed=(--pps "$rate"); fi
        inns "$blast" --iface rsa --loops "$LOOPS" "${speed[@]}" "$file" >"$tmp/replay" 2>&1 || {
            echo "blast failed:" >&2
            tail -n 5 "$tmp/replay" >&2
            exit 1
        }
    else
        if [ "$rate" = top ]; then speed=(--topspeed); else speed=(--pps "$rate"); fi
        inns tcpreplay -i rsa -K "${speed[@]}" "$file" >"$tmp/replay" 2>&1 || {
            echo "tcpreplay failed:" >&2
            tail -n 5 "$tmp/replay" >&2
            exit 1
        }
    fi
    sleep "$GRACE"
    rx1=$(rx_packets)
    kill -INT "$tool_pid"
    local status=0
    wait "$time_pid" || status=$?
    tool_pid=
    rm -f "$tmp/pid" "$shm/capture.pcap"
    if ((status != 0)); then
        echo "$tool exited with status $status:" >&2
        tail -n 5 "$err" >&2
        exit 1
    fi
    local achieved sent failed replay_s
    if [ "$GEN" = blast ]; then
        # sent N frames in S s: R frames/s (F failed)
        read -r sent replay_s achieved failed < <(awk '/^sent / { gsub(/[()]/, ""); print $2, $5, $7, $9 }' \
            "$tmp/replay")
    else
        achieved=$(awk '/Rated:/ { for (i = 1; i <= NF; i++) if ($(i) ~ /^pps/) print $(i - 1) }' "$tmp/replay")
        sent=$(awk '/Successful packets:/ { print $3 }' "$tmp/replay")
        failed=$(awk '/Failed packets:/ { print $3 }' "$tmp/replay")
        replay_s=$(awk '/Actual:/ { for (i = 1; i <= NF; i++) if ($(i) == "seconds") print $(i - 1) }' "$tmp/replay")
    fi
    local seen received dropped if_dropped
    case $tool in
        rocescope*)
            read -r seen received dropped if_dropped < <(jq -r '[.capture.frames, .capture_stats.received,
                .capture_stats.dropped, .capture_stats.if_dropped] | @tsv' "$out")
            ;;
        tcpdump*)
            seen=$(awk '/packets captured/ { print $1 }' "$err")
            received=$(awk '/packets received by filter/ { print $1 }' "$err")
            dropped=$(awk '/packets dropped by kernel/ { print $1 }' "$err")
            if_dropped=$(awk '/packets dropped by interface/ { print $1 }' "$err")
            ;;
    esac
    local elapsed user sys max_kb
    read -r elapsed user sys max_kb <"$tmp/time"
    local cpu
    cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')
    echo "$tool $rate ${achieved:-0} ${sent:-0} ${failed:-0} $((rx1 - rx0)) ${seen:-0} ${received:-0}" \
        "${dropped:-0} ${if_dropped:-0} ${replay_s:-0} $cpu $elapsed $max_kb" >>"$tmp/results"
    printf '  %-14s %-7s achieved %9.0f pps  offered %7d  seen %7d  dropped %7d  cpu %5.2f s\n' \
        "$tool" "$rate" "${achieved:-0}" "$((rx1 - rx0))" "${seen:-0}" "${dropped:-0}" "$cpu" >&2
}

: >"$tmp/results"
read -r -a rates <<<"$RATES"
read -r -a tools <<<"$TOOLS"
for tool in "${tools[@]}"; do
    if [ "$tool" = rocescope-alt ] && [ ! -x "$ALT_ROCESCOPE" ]; then
        echo "rocescope-alt needs ALT_ROCESCOPE=/path/to/rocescope" >&2
        exit 2
    fi
done
for run in $(seq "$RUNS"); do
    echo "run $run of $RUNS" >&2
    for rate in "${rates[@]}"; do
        for tool in "${tools[@]}"; do
            for attempt in 1 2 3; do
                wait_idle "$tool@$rate"
                run_point "$tool" "$rate"
                busy=$(heavy)
                [ -n "$busy" ] || break
                if ((attempt == 3)); then
                    disturbed="$disturbed $tool@$rate"
                    break
                fi
                echo "  (disturbed: $(echo "$busy" | cut -c1-60 | paste -sd ';' -); measuring it again)" >&2
                sed -i '$d' "$tmp/results"
            done
        done
    done
done

echo
echo "$file: $FRAMES frames, $(($(stat -c %s "$file") / 1000000)) MB, $QPS RC connections, loss $LOSS, MTU $MTU"
echo "rocescope: release build of $build"
[ -z "$ALT_ROCESCOPE" ] || echo "rocescope-alt: $ALT_ROCESCOPE"
echo "$(nproc) cores; $(uname -r); $(tcpdump --version 2>&1 | head -n 1); $(tcpdump --version 2>&1 | sed -n 2p);" \
    "$(tcpreplay --version 2>&1 | head -n 1)"
replayer="tcpreplay -K"
[ "$GEN" != blast ] || replayer="examples/blast.rs (sendmmsg, qdisc bypass), the file $LOOPS times"
echo "veth pair in a network namespace of its own; replayed into rsa with $replayer, captured on rsb;" \
    "buffer $BUFFER ($buffer_bytes bytes: rocescope --buffer-size $BUFFER, tcpdump -B $buffer_kib) except plain" \
    "tcpdump (libpcap's default, 2 MiB); $RUNS runs per point, medians, worst = largest"
[ -z "$disturbed" ] || echo "WARNING: measured while other heavy processes ran, for:$disturbed"
echo
awk -v order="${rates[*]}" -v tools="${tools[*]}" -v runs="$RUNS" '
    function median(list,   n, a, i, j, t) {
        n = split(list, a, " ")
        for (i = 2; i <= n; i++)
            for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
        return a[int((n + 1) / 2)]
    }
    function worst(list,   n, a, i, m) {
        n = split(list, a, " "); m = a[1]
        for (i = 2; i <= n; i++) if (a[i] + 0 > m + 0) m = a[i]
        return m
    }
    function add(k, v) { L[k] = (k in L) ? L[k] " " v : v }
    {
        key = $1 SUBSEP $2
        add(key SUBSEP "ach", $3); add(key SUBSEP "sent", $4); add(key SUBSEP "fail", $5); add(key SUBSEP "off", $6)
        add(key SUBSEP "seen", $7); add(key SUBSEP "drop", $9); add(key SUBSEP "ifd", $10)
        add(key SUBSEP "miss", $6 - $7); add(key SUBSEP "cpu", $11 > 0 ? 100 * $12 / $11 : 0)
        add(key SUBSEP "cpus", $12)
        seenkey[key] = 1
    }
    END {
        nr = split(order, R, " "); nt = split(tools, T, " ")
        printf "| replay | tool | achieved pps (median) | sent | offered (rsb rx) | seen (median) "
        print "| kernel drops: median / worst | missed: worst | CPU % of replay (median) |"
        print "|---|---|---|---|---|---|---|---|---|"
        for (r = 1; r <= nr; r++) for (t = 1; t <= nt; t++) {
            key = T[t] SUBSEP R[r]
            if (!(key in seenkey)) continue
            d = worst(L[key SUBSEP "drop"]); m = worst(L[key SUBSEP "miss"])
            printf "| %s | %s | %.0f | %d | %d | %d | %d / %d | %d | %.0f |\n",
                R[r] == "top" ? "top speed" : R[r] "/s", T[t], median(L[key SUBSEP "ach"]),
                median(L[key SUBSEP "sent"]), median(L[key SUBSEP "off"]), median(L[key SUBSEP "seen"]),
                median(L[key SUBSEP "drop"]), d, m, median(L[key SUBSEP "cpu"])
            a = median(L[key SUBSEP "ach"])
            if (d + 0 == 0 && m + 0 <= 0) {
                if (a + 0 > best[T[t]] + 0) best[T[t]] = a
            } else if (!(T[t] in first) || a + 0 < first[T[t]] + 0) {
                first[T[t]] = a; firstd[T[t]] = d; firstm[T[t]] = median(L[key SUBSEP "drop"])
                firsto[T[t]] = median(L[key SUBSEP "off"])
            }
        }
        print ""
        # One paragraph: per tool, the highest achieved rate with no drop in any run and the lowest with drops.
        p = ""
        for (t = 1; t <= nt; t++) {
            if (best[T[t]] + 0 > 0)
                s = sprintf("%s took every frame in all %d runs at up to %.0f pps", T[t], runs, best[T[t]])
            else
                s = sprintf("%s dropped frames at every rate measured", T[t])
            if (T[t] in first)
                s = s sprintf(" (lowest rate with drops: %.0f pps, %d kernel drops in the worst run, median %d, of %d" \
                    " frames offered)", first[T[t]], firstd[T[t]], firstm[T[t]], firsto[T[t]])
            else
                s = s " (no drops at any rate measured)"
            p = p (t > 1 ? "; " : "") s
        }
        print p "."
    }' "$tmp/results"
echo
echo "achieved pps: tcpreplay's \"Rated\" figure; sent: its successful packets; offered: rsb's rx_packets during"
echo "the run; seen: frames the tool read; missed: offered - seen; CPU %: the tool's user + system time over the"
echo "replay's duration (a single-threaded tool saturates at 100 %)."
echo
echo "per run (tool rate achieved_pps sent failed offered seen received dropped if_dropped replay_s cpu_s" \
    "elapsed_s max_kb):"
cat "$tmp/results"
