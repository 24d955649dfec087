#!/usr/bin/env bash
# `kwire report` on a large generated capture: the report's size, the wall time and the
# peak RSS (GNU time), beside `kwire stats` of the same file (the summary pass it should
# stay close to). Figures go to docs/benchmarks.md by hand.
#
#   scripts/bench-report.sh                      # 1 GB of chatter (seed 7)
#   KIND=bulk SIZE=1G scripts/bench-report.sh
set -euo pipefail
cd "$(dirname "$0")/.."
KIND="${KIND:-chatter}"
SIZE="${SIZE:-1G}"
TARGET="${CARGO_TARGET_DIR:-target}"
cargo build --release --locked -p kwire -p kwire-gen
mkdir -p target/bench
CAP="target/bench/${KIND}-${SIZE}.pcap"
[ -f "$CAP" ] || "$TARGET/release/kwire-gen" --kind "$KIND" --size "$SIZE" --seed 7 -o "$CAP"
cat "$CAP" > /dev/null   # into the page cache
ls -l "$CAP"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg), cores: $(nproc)"
run() {
  local what="$1"; shift
  /usr/bin/time -f "$what: %e s wall, %U s user, %M KiB peak RSS" "$@" > /dev/null 2> >(grep -E "wall|report:" >&2)
}
run "stats" env -u SSLKEYLOGFILE "$TARGET/release/kwire" stats "$CAP"
run "report" env -u SSLKEYLOGFILE "$TARGET/release/kwire" report "$CAP" -o "target/bench/${KIND}-${SIZE}.html"
ls -l "target/bench/${KIND}-${SIZE}.html"
