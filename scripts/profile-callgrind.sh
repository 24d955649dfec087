#!/usr/bin/env bash
# Instruction counts of kwire (callgrind), which do not depend on the machine's load: the
# release binary at --threads 1 on small kwire-gen captures (chatter and bulk), in the
# one-line summary, the -V tree and -T json, output to /dev/null (see docs/benchmarks.md,
# "Speed, third round").
#
#   scripts/profile-callgrind.sh              # every kind and mode, a table of Ir
#   MODES="summary" KINDS=chatter scripts/profile-callgrind.sh
#   TOP=25 scripts/profile-callgrind.sh       # and callgrind_annotate's top functions
#
# Environment:
#   BIN      the kwire binary (default target/release/kwire)
#   GEN      the kwire-gen binary (default target/release/kwire-gen)
#   SIZE     capture size (default 10M for chatter, 4M for bulk: under valgrind, -V on 10M of
#            bulk aborts, its heap unable to grow), SEED (default 7)
#   KINDS    (default "chatter bulk"), MODES (default "summary tree json")
#   OUT      where captures and callgrind.out files go (default target/prof)
#   TOP      if set, print that many top functions (self cost) of each run
#
# The release profile strips symbols, so callgrind_annotate names no kwire function for
# target/release/kwire: for names, BIN=target/profiling/kwire after
# `cargo build --profile profiling --bin kwire` (line tables, no strip; a build of every
# crate the first time), or the release binary crate linked again with `-C strip=none`
# (the same code; docs/benchmarks.md, "Speed, third round"). The counts are the same.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/kwire}
GEN=${GEN:-target/release/kwire-gen}
SEED=${SEED:-7}
KINDS=${KINDS:-chatter bulk}
MODES=${MODES:-summary tree json}
OUT=${OUT:-target/prof}
mkdir -p "$OUT"
printf '%-8s %-8s %16s\n' kind mode Ir
for kind in $KINDS; do
  case $kind in bulk) size=${SIZE:-4M} ;; *) size=${SIZE:-10M} ;; esac
  cap=$OUT/$kind-$size-$SEED.pcap
  [ -f "$cap" ] || "$GEN" --kind "$kind" --size "$size" --seed "$SEED" --out "$cap" >/dev/null
  for mode in $MODES; do
    case $mode in
      summary) args=() ;;
      tree) args=(-V) ;;
      json) args=(-T json) ;;
      fields) args=(-T fields -e frame -e api -e correlation_id -e latency) ;;
      stats) args=() ;;
      *) echo "unknown mode $mode" >&2; exit 2 ;;
    esac
    sub=read; [ "$mode" = stats ] && sub=stats
    f=$OUT/callgrind.$kind.$mode.out
    rc=0
    valgrind --tool=callgrind --callgrind-out-file="$f" \
      "$BIN" --color never "$sub" "$cap" --threads 1 "${args[@]}" >/dev/null 2>"$f.log" || rc=$?
    ir=$(awk '/Collected :/ {print $NF}' "$f.log")
    [ "$rc" = 0 ] || ir="$ir (failed: exit $rc, see $f.log)"
    printf '%-8s %-8s %16s\n' "$kind" "$mode" "$ir"
    if [ -n "${TOP:-}" ]; then
      callgrind_annotate "$f" 2>/dev/null | sed -n "/file:function/,+${TOP}p" || true
    fi
  done
done
