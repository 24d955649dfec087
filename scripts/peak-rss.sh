#!/usr/bin/env bash
# Peak RSS and wall time of every output mode of kwire at its default thread count, on
# the kwire-gen captures (issue 26's bound: under 64 MiB in every mode). One run each,
# output to /dev/null (the report and the export to a scratch folder), GNU time's
# "Maximum resident set size".
#
#   scripts/peak-rss.sh                       # chatter and bulk, 100M
#   SIZES="100M 1G" scripts/peak-rss.sh       # and 1 GB (html leaves out 1 GB: SLOW_1G=1 keeps it)
#
# Environment: BIN (default target/release/kwire), GEN (target/release/kwire-gen),
# BENCH_DIR (target/bench), SIZES, KINDS ("chatter bulk"), SEED (1), MODES (all below),
# THREADS (empty: kwire's default), SLOW_1G (0).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/kwire}
GEN=${GEN:-target/release/kwire-gen}
BENCH_DIR=${BENCH_DIR:-target/bench}
SIZES=${SIZES:-100M}
KINDS=${KINDS:-chatter bulk}
SEED=${SEED:-1}
MODES=${MODES:-summary tree json values hex tree-hex md hexdump html fields stats export export-records report}
SLOW_1G=${SLOW_1G:-0}
threads=()
[ -n "${THREADS:-}" ] && threads=(--threads "$THREADS")
mkdir -p "$BENCH_DIR"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
limit=$((64 * 1024))
printf '%-8s %-5s %-15s %9s %12s %s\n' kind size mode wall_s peak_KiB under_64MiB
for size in $SIZES; do
  for kind in $KINDS; do
    cap=$BENCH_DIR/$kind-$size.pcap
    [ -f "$cap" ] || "$GEN" --kind "$kind" --size "$size" --seed "$SEED" -o "$cap" >/dev/null
    for mode in $MODES; do
      out=/dev/null
      case $mode in
        summary) args=(read "$cap") ;;
        tree) args=(read "$cap" -V) ;;
        json) args=(read "$cap" -T json) ;;
        values) args=(read "$cap" -T values) ;;
        hex) args=(read "$cap" -x) ;;
        tree-hex) args=(read "$cap" -V -x) ;;
        md) args=(read "$cap" --format md) ;;
        hexdump) args=(read "$cap" --format hexdump) ;;
        html)
          if [ "${size: -1}" = G ] && [ "$SLOW_1G" != 1 ]; then continue; fi
          args=(read "$cap" --format html) ;;
        fields) args=(read "$cap" -T fields -e frame -e api -e correlation_id -e latency -e ThrottleTimeMs) ;;
        stats) args=(stats "$cap") ;;
        export) args=(export "$cap" --out "$scratch/export") ;;
        export-records) args=(export "$cap" --records --out "$scratch/export-records") ;;
        report) args=(report "$cap" -o "$scratch/report.html") ;;
        *) echo "unknown mode $mode" >&2; exit 2 ;;
      esac
      rm -rf "$scratch/export" "$scratch/export-records"
      /usr/bin/time -f '%e %M' -o "$scratch/time" "$BIN" --color never "${args[@]}" "${threads[@]}" >"$out" 2>/dev/null || true
      read -r wall kib < <(tail -n 1 "$scratch/time")
      ok=yes; [ "$kib" -lt "$limit" ] || ok=NO
      printf '%-8s %-5s %-15s %9s %12s %s\n' "$kind" "$size" "$mode" "$wall" "$kib" "$ok"
    done
  done
done
