# Sourced by benches/compare.sh, benches/export.sh and benches/threads.sh: the synthetic captures they measure
# on, made once, and their defaults (2,000,000 frames of 64 RC connections, seed 1, 0.03 % loss).
#
# synth_capture FILE MTU: writes FILE (and FILE's .truth.json beside it) with the synth example, FRAMES
# frames of QPS RC QPs from SEED with LOSS, at path MTU MTU, unless FILE is there already; needs
# target/release/examples/synth.
synth_capture() {
    local file=$1 mtu=$2
    [ -s "$file" ] && return
    echo "generating $file" >&2
    target/release/examples/synth --frames "$FRAMES" --qps "$QPS" --seed "$SEED" --loss "$LOSS" --mtu "$mtu" \
        --out "$file.part" --truth "${file%.pcap}.truth.json"
    mv "$file.part" "$file"
}

FRAMES=${FRAMES:-2000000}
QPS=${QPS:-64}
SEED=${SEED:-1}
LOSS=${LOSS:-0.0003}
