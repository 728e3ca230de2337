#!/usr/bin/env bash
# Speed of `rocescope export --parquet` against `rocescope analyze`, and of the fleet jobs on the export, on
# the synthetic captures of benches/compare.sh.
#
#   benches/export.sh
#
# For each path MTU of MTUS ("1024 256"), generates (once) target/bench/synth-FRAMES-QPS-SEED-MTU.pcap as
# compare.sh does (BENCH_DIR to read them from elsewhere), puts it in the page cache, then runs RUNS times
# (median time, largest peak RSS, /usr/bin/time -f '%e %M'):
#   rocescope analyze FILE --json --no-progress > /dev/null
#   rocescope export --parquet OUT FILE
# and once on the MTU-1024 export: spark-submit --master local[2] jobs/spark/fleet.py OUT --output OUT2 and
# jobs/duckdb/fleet.sql (DuckDB from Python), whole runs with the JVM's start.
#
# Environment: FRAMES, QPS, SEED, LOSS, MTUS, RUNS, BENCH_DIR, ROCESCOPE (a release binary to measure instead
# of building one; the captures must then exist in BENCH_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
. benches/synth_capture.sh

MTUS=${MTUS:-1024 256}
RUNS=${RUNS:-3}
dir=${BENCH_DIR:-target/bench}

if [ ! -x /usr/bin/time ]; then
    sudo=()
    [ "$(id -u)" -eq 0 ] || sudo=(sudo)
    "${sudo[@]}" apt-get update -qq
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends time
fi
mkdir -p "$dir"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ -z "${ROCESCOPE:-}" ]; then
    cargo build --release --locked --quiet --bin rocescope --example synth
    ROCESCOPE=target/release/rocescope
fi
# A copy, so that a rebuild during the run cannot change the binary measured.
rocescope=$tmp/rocescope
cp "$ROCESCOPE" "$rocescope"
echo "rocescope: release build of git $(git rev-parse --short HEAD 2>/dev/null || echo '?'); $(nproc) cores"

# measure NAME COMMAND...: RUNS runs; prints NAME, median seconds, frames/s and the largest peak RSS.
measure() {
    local name=$1
    shift
    : >"$tmp/runs"
    for _ in $(seq "$RUNS"); do
        /usr/bin/time -f '%e %M' -o "$tmp/time" "$@" >/dev/null 2>"$tmp/err" || {
            cat "$tmp/err" >&2
            exit 1
        }
        cat "$tmp/time" >>"$tmp/runs"
    done
    sort -n "$tmp/runs" | awk -v name="$name" -v frames="$FRAMES" '
        { s[NR] = $1; if ($2 > kb) kb = $2 }
        END { m = s[int((NR + 1) / 2)]; printf "%-40s %8.2f s %12.0f frames/s %8.1f MB peak\n", name, m, frames / m, kb / 1024 }'
}

for mtu in $MTUS; do
    file=$dir/synth-$FRAMES-$QPS-$SEED-$mtu.pcap
    synth_capture "$file" "$mtu"
    cat "$file" >/dev/null
    echo
    echo "$file: $FRAMES frames, $(($(stat -c %s "$file") / 1000000)) MB, MTU $mtu"
    measure "rocescope analyze --json" "$rocescope" analyze "$file" --json --no-progress
    measure "rocescope export --parquet" "$rocescope" export --parquet "$tmp/export-$mtu" "$file"
    du -sm "$tmp/export-$mtu"/*.parquet | awk '{ printf "  %s: %d MB\n", $2, $1 }' | sed "s|$tmp/||"
done

first=${MTUS%% *}
echo
echo "fleet jobs on export-$first ($FRAMES packet rows), one run each, with start-up:"
/usr/bin/time -f 'spark-submit --master local[2] jobs/spark/fleet.py: %e s, %M KB peak' \
    spark-submit --master 'local[2]' --conf spark.ui.showConsoleProgress=false \
    jobs/spark/fleet.py "$tmp/export-$first" --output "$tmp/fleet" >/dev/null 2>"$tmp/err" ||
    { cat "$tmp/err" >&2; exit 1; }
tail -n 1 "$tmp/err"
/usr/bin/time -f 'jobs/duckdb/fleet.sql (DuckDB, Python): %e s, %M KB peak' python3 -c "
import duckdb, sys
con = duckdb.connect()
con.execute(\"SET VARIABLE root = '$tmp/export-$first'\")
con.execute(open('jobs/duckdb/fleet.sql').read()).fetchall()
" 2>&1 | tail -n 1
