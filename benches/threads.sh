#!/usr/bin/env bash
# What `-j` changes: rocescope analyze at each thread count, on the same files, in one run.
#
#   benches/threads.sh [FILE ...]
#
# FILEs default to the synthetic capture of benches/compare.sh at MTU 1024 (made with the synth example
# when missing: FRAMES frames of QPS RC connections, 2,000,000 and 64 by default). For each FILE and each J
# of JS ("2 3 4" by default):
#   - RUNS runs (5 by default), the thread counts alternating, of
#     /usr/bin/time -f '%e %U %S %M' rocescope analyze FILE --json --no-progress -j J > /dev/null
#     printed sorted: wall seconds, user and system CPU seconds, peak RSS (KB);
#   - with perf installed, one run under `perf record -F 4999` and each thread's CPU seconds from its
#     samples (`perf report --sort comm`): the reading thread (rocescope), parse-0 and parse-1, the engine.
# Where cores are free, the slowest thread sets the rate; on a machine with fewer cores than threads, the
# wall time shows what sharing them costs. Release build without the default features (analyze uses none).
#
# Environment: FRAMES, QPS, SEED, LOSS, JS, RUNS.
set -euo pipefail
cd "$(dirname "$0")/.."
. benches/synth_capture.sh

JS=${JS:-2 3 4}
RUNS=${RUNS:-5}

[ -x /usr/bin/time ] || { echo "benches/threads.sh needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
dir=target/bench
mkdir -p "$dir"
cargo build --release --locked --quiet --no-default-features --bin rocescope --example synth
# A copy, so that a rebuild during the run cannot change the binary measured.
rocescope=$dir/rocescope-j
cp target/release/rocescope "$rocescope"
echo "rocescope: release build of git $(git rev-parse --short HEAD 2>/dev/null || echo '?'); $(nproc) cores"

files=("$@")
if [ ${#files[@]} -eq 0 ]; then
    files=("$dir/synth-$FRAMES-$QPS-$SEED-1024.pcap")
    synth_capture "${files[0]}" 1024
fi

for file in "${files[@]}"; do
    cat "$file" >/dev/null
    echo
    echo "$file: wall s, user s, system s, peak KB"
    for _ in $(seq "$RUNS"); do
        for j in $JS; do
            /usr/bin/time -f "-j $j %e %U %S %M" "$rocescope" analyze "$file" --json --no-progress -j "$j" \
                2>&1 >/dev/null | tail -n 1
        done
    done | sort -k2,2n -k3,3n
    command -v perf >/dev/null 2>&1 || continue
    echo "$file: CPU seconds per thread (perf record -F 4999)"
    data=$(mktemp)
    for j in $JS; do
        perf record -q -F 4999 -o "$data" "$rocescope" analyze "$file" --json --no-progress -j "$j" \
            >/dev/null 2>&1
        printf -- "-j %s:" "$j"
        perf report -i "$data" --sort comm --stdio -F sample,comm 2>/dev/null | grep -vE '^#|^$' |
            awk '{ printf "  %s %.2f", $2, $1 / 4999 } END { print "" }'
    done
    rm -f "$data"
done
