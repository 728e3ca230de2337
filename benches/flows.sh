#!/usr/bin/env bash
# Memory and time of `rocescope analyze --json` when a capture holds very many flows.
#
#   benches/flows.sh
#
# Generates (once) with the synth example, in target/bench/:
#   noise-N.pcap   N one-packet flows and nothing else (each an RC SEND from an address and to a QP of its own:
#                  a scan, or a misbehaving sender on a mirror port), for N in SIZES (1M and 10M by default)
#   fabric-N.pcap  N frames of 64 RC connections (0.03 % loss), the same number of frames as noise-N
#   noise-late.pcap 300,000 one-packet flows 3.333 ms apart: 1,000 s of flows that come and go (each flow's
#                  series then starts late in the capture, and idle flows time out all along)
#   mixed.pcap     fabric-MIXED's connections with MIXED one-packet flows among them (1M by default), and
#   mixed-clean.pcap the same fabric without them
#   busy.pcap      2,000,000 frames of 4,096 RC connections (8,192 busy flows)
# and runs the release build on each with /usr/bin/time -f '%e %M' (wall seconds, peak RSS): the default
# (--max-flows 100000) and, for noise-1M, --max-flows 0 (no limit). For mixed.pcap it checks that the
# fabric's 128 flows are reported exactly as in mixed-clean.pcap (their figures, ids aside) and prints the
# evicted and other_flows totals. Needs python3 for the JSON comparison.
#
# Environment: SIZES (default "1000000 10000000"), MIXED (default 1000000). The captures take about 12 GB of
# target/bench at the default sizes (fabric-10000000.pcap alone 7.4 GB): delete them after the run.
set -euo pipefail
cd "$(dirname "$0")/.."

SIZES=${SIZES:-1000000 10000000}
MIXED=${MIXED:-1000000}
[ -x /usr/bin/time ] || { echo "flows.sh: needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
cargo build --release --quiet --example synth
cargo build --release --quiet
synth=target/release/examples/synth
rocescope=target/release/rocescope
dir=target/bench
mkdir -p "$dir"

gen() { # gen FILE ARGS...: once
    local file=$1; shift
    [ -s "$file" ] || "$synth" "$@" --out "$file" >/dev/null 2>&1
}

run() { # run LABEL FILE ARGS...
    local label=$1 file=$2; shift 2
    local t
    t=$( { /usr/bin/time -f '%e %M' "$rocescope" analyze --json "$file" "$@" > "$dir/flows-last.json"; } 2>&1 | tail -1)
    local frames
    frames=$(python3 -c "import json,sys; d=json.load(open('$dir/flows-last.json')); print(d['capture']['frames'], d['flow_totals']['flows'], (d.get('evicted') or {}).get('flows', 0))")
    printf '%-34s %10s %10s %10s %8s s %8.1f MB\n' "$label" $frames ${t%% *} "$(echo "${t##* }" | awk '{print $1/1024}')"
}

printf '%-34s %10s %10s %10s %8s   %8s\n' capture frames flows evicted time "peak RSS"
for n in $SIZES; do
    gen "$dir/noise-$n.pcap" --frames 0 --noise-flows "$n"
    gen "$dir/fabric-$n.pcap" --frames "$n" --qps 64 --seed 1
    run "fabric-$n (64 connections)" "$dir/fabric-$n.pcap"
    run "noise-$n" "$dir/noise-$n.pcap"
    if [ "$n" = 1000000 ]; then
        run "noise-$n --max-flows 0" "$dir/noise-$n.pcap" --max-flows 0
    fi
done

gen "$dir/noise-late.pcap" --frames 0 --noise-flows 300000 --noise-gap-us 3333
run "noise-late (300000 over 1000 s)" "$dir/noise-late.pcap"

gen "$dir/busy.pcap" --frames 2000000 --qps 4096 --seed 1
run "busy (4096 connections)" "$dir/busy.pcap"

gen "$dir/mixed-clean.pcap" --frames "$MIXED" --qps 64 --seed 3
gen "$dir/mixed.pcap" --frames "$MIXED" --qps 64 --seed 3 --noise-flows "$MIXED"
run "mixed-clean" "$dir/mixed-clean.pcap"
cp "$dir/flows-last.json" "$dir/flows-clean.json"
run "mixed ($MIXED one-packet flows)" "$dir/mixed.pcap"
python3 - "$dir/flows-clean.json" "$dir/flows-last.json" <<'EOF'
import json, sys
clean, mixed = (json.load(open(p)) for p in sys.argv[1:3])
def figures(f):
    return {k: v for k, v in f.items() if k not in ("id", "paired_with", "connection")}
key = lambda f: (f["src"], f["dst"], f["dest_qp"])
got = {key(f): figures(f) for f in mixed["flows"]}
differ = [key(f) for f in clean["flows"] if got.get(key(f)) != figures(f)]
print(f"fabric flows: {len(clean['flows'])}, reported the same among the noise: {len(clean['flows']) - len(differ)}")
print(f"evicted: {mixed.get('evicted')}")
print(f"other_flows: {(mixed.get('other_flows') or {}).get('flows', 0)}")
sys.exit(1 if differ else 0)
EOF
