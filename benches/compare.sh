#!/usr/bin/env bash
# Speed and peak memory of rocescope against cat, tcpdump and tshark, on large synthetic captures.
#
#   benches/compare.sh
#
# For each path MTU of MTUS ("1024 256" by default: frames of about 790 and 280 bytes, the second where
# per-frame costs show), generates (once) target/bench/synth-FRAMES-QPS-SEED-MTU.pcap with the synth example
# (2,000,000 frames, 64 RC connections, 0.03 % loss by default) and its ground truth beside it, then runs each
# tool on that file RUNS times (3 by default; the median time and the largest peak RSS are shown) with
# /usr/bin/time -f '%e %M' (wall seconds, peak RSS), the file already in the page cache:
#   cat FILE > /dev/null                                 reading the file, the floor
#   rocescope analyze FILE --json -j 2 > /dev/null       (release build; one reading thread, one analysing)
#   rocescope analyze FILE --json -j 3 > /dev/null       a third thread checks the ICRCs (-j 1 is -j 2)
#   rocescope dissect FILE > /dev/null                   one line per frame, for comparison with tcpdump
#   tcpdump -nn -r FILE > /dev/null
#   tshark -r FILE -T fields -e infiniband.bth.destqp -e infiniband.bth.psn > /dev/null
# tshark runs on the first TSHARK_FRAMES frames (-c; 200,000 by default, 0 = the whole file): its frames/s is
# measured on those, and its whole-file time is estimated by scaling.
#
# Environment: FRAMES, QPS, SEED, LOSS, MTUS, TSHARK_FRAMES, RUNS. Installs time, tcpdump and tshark with apt-get when
# missing (via sudo when not root).
set -euo pipefail
cd "$(dirname "$0")/.."
. benches/synth_capture.sh

MTUS=${MTUS:-1024 256}
TSHARK_FRAMES=${TSHARK_FRAMES:-200000}
RUNS=${RUNS:-3}

missing=()
[ -x /usr/bin/time ] || missing+=(time)
command -v tcpdump >/dev/null 2>&1 || missing+=(tcpdump)
command -v tshark >/dev/null 2>&1 || missing+=(tshark)
if ((${#missing[@]})); then
    sudo=()
    [ "$(id -u)" -eq 0 ] || sudo=(sudo)
    echo "installing: ${missing[*]}"
    "${sudo[@]}" apt-get update -qq
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

dir=target/bench
mkdir -p "$dir"
cargo build --release --locked --quiet --bin rocescope --example synth
# A copy, so that a rebuild during the run cannot change the binary measured.
rocescope=$dir/rocescope
cp target/release/rocescope "$rocescope"
build="git $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
changed=$(git status --porcelain --untracked-files=no 2>/dev/null | awk '{print $2}' | tr '\n' ' ')
[ -z "$changed" ] || build="$build + uncommitted changes to: $changed"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# bench MTU: generates the capture at that path MTU if missing, measures every tool on it, prints the table.
bench() {
MTU=$1
rows=()
file=$dir/synth-$FRAMES-$QPS-$SEED-$MTU.pcap
synth_capture "$file" "$MTU"


# Into the page cache first, so that every tool reads it from memory.
cat "$file" >/dev/null

# measure NAME FRAMES COMMAND...: runs COMMAND RUNS times with its standard output to /dev/null; keeps the
# median time and the largest peak RSS.
measure() {
    local name=$1 frames=$2
    shift 2
    echo "running ($RUNS times): $* > /dev/null" >&2
    : >"$tmp/runs"
    for _ in $(seq "$RUNS"); do
        if ! /usr/bin/time -f '%e %M' -o "$tmp/time" "$@" >/dev/null 2>"$tmp/err"; then
            echo "$name failed:" >&2
            tail -n 5 "$tmp/err" >&2
            exit 1
        fi
        cat "$tmp/time" >>"$tmp/runs"
    done
    local secs kb
    secs=$(sort -n "$tmp/runs" | awk '{ s[NR] = $1 } END { print s[int((NR + 1) / 2)] }')
    kb=$(sort -k2 -n "$tmp/runs" | tail -n 1 | awk '{ print $2 }')
    rows+=("$name|$frames|$secs|$kb")
}

tshark_frames=$FRAMES
tshark_count=()
if [ "$TSHARK_FRAMES" -gt 0 ] && [ "$TSHARK_FRAMES" -lt "$FRAMES" ]; then
    tshark_frames=$TSHARK_FRAMES
    tshark_count=(-c "$TSHARK_FRAMES")
fi

measure "cat" "$FRAMES" cat "$file"
measure "rocescope analyze --json" "$FRAMES" "$rocescope" analyze "$file" --json --no-progress -j 2
measure "rocescope analyze -j 3" "$FRAMES" "$rocescope" analyze "$file" --json --no-progress -j 3
measure "rocescope dissect" "$FRAMES" "$rocescope" dissect "$file"
measure "tcpdump -nn -r" "$FRAMES" tcpdump -nn -r "$file"
measure "tshark -T fields" "$tshark_frames" tshark -r "$file" "${tshark_count[@]}" -T fields \
    -e infiniband.bth.destqp -e infiniband.bth.psn

echo
echo "$file: $FRAMES frames, $(($(stat -c %s "$file") / 1000000)) MB, $QPS RC connections, loss $LOSS, MTU $MTU"
echo "rocescope: release build of $build"
echo "$(nproc) cores; $(uname -r); $(tshark --version 2>/dev/null | head -n 1); $(tcpdump --version 2>&1 | head -n 1)"
echo
printf '%s\n' "${rows[@]}" | awk -F'|' -v tshark_part="$tshark_frames" -v all="$FRAMES" '
    {
        name[NR] = $1; frames[NR] = $2; secs[NR] = $3; mb[NR] = $4 / 1024
        rate[NR] = $3 > 0 ? $2 / $3 : 0
        by[$1] = NR
    }
    END {
        printf "%-26s %10s %9s %14s %9s\n", "tool", "frames", "seconds", "frames/s", "peak MB"
        for (i = 1; i <= NR; i++)
            printf "%-26s %10d %9.2f %14.0f %9.1f\n", name[i], frames[i], secs[i], rate[i], mb[i]
        r = by["rocescope analyze --json"]; t = by["tshark -T fields"]; d = by["tcpdump -nn -r"]; c = by["cat"]
        print ""
        if (tshark_part < all)
            printf "tshark ran on the first %d frames (-c %d); scaled to the whole file: %.1f s\n",
                tshark_part, tshark_part, secs[t] * all / tshark_part
        if (rate[t] > 0)
            printf "rocescope analyze vs tshark:   %.1fx the frames/s\n", rate[r] / rate[t]
        if (rate[d] > 0)
            printf "rocescope analyze vs tcpdump:  %.1fx the frames/s\n", rate[r] / rate[d]
        if (secs[c] > 0)
            printf "rocescope analyze time / cat time: %.1f\n", secs[r] / secs[c]
        else
            printf "rocescope analyze time / cat time: cat took under 0.01 s\n"
        print "peak MB is the peak resident set (%M of /usr/bin/time): for a tool that memory-maps the file it"
        print "includes the mapped pages of the file (page cache), not only its own allocations."
    }'
}

for mtu in $MTUS; do
    bench "$mtu"
    echo
done
