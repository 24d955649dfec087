#!/usr/bin/env bash
# The message index's benchmark (benches/index.rs) on a generated capture: kwire-gen writes
# SIZE (default 1G) of KIND (default chatter) under target/bench/, the benchmark indexes
# it and decodes messages spread over it, and the capture is deleted afterwards
# (KEEP=1 keeps it). The figures go to docs/benchmarks.md by hand.
set -euo pipefail
cd "$(dirname "$0")/.."
KIND="${KIND:-chatter}"
SIZE="${SIZE:-1G}"
mkdir -p target/bench
CAP="target/bench/index-$KIND-$SIZE.pcap"
cargo build --release --locked --quiet -p kwire-gen
if [ ! -f "$CAP" ]; then
  target/release/kwire-gen --kind "$KIND" --size "$SIZE" --seed 1 -o "$CAP"
fi
trap '[ "${KEEP:-0}" = 1 ] || rm -f "$CAP"' EXIT
ls -l "$CAP"
KWIRE_INDEX_BENCH="$CAP" cargo bench --locked --bench index
