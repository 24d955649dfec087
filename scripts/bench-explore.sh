#!/usr/bin/env bash
# `kwire explore` on generated captures (kwire-gen, SIZES default "100M 1G", KIND default
# chatter, under target/bench/): the time to the first screen (the list's first line),
# the time until `G` shows the last message of the capture (the index built), and the
# peak RSS (GNU time), in a detached 200x50 tmux session; beside it tshark's time to its
# first line on the same capture. The captures are deleted afterwards (KEEP=1 keeps
# them). The figures go to docs/benchmarks.md by hand.
set -euo pipefail
cd "$(dirname "$0")/.."
KIND="${KIND:-chatter}"
SIZES="${SIZES:-100M 1G}"
mkdir -p target/bench
cargo build --release --locked --quiet -p kwire-gen
cargo build --release --locked --quiet --bin kwire
KW="$PWD/target/release/kwire"
SOCK="kwire-bench-$$"
trap 'tmux -L "$SOCK" kill-server 2>/dev/null || true' EXIT
now() { date +%s.%N; }
since() { awk -v a="$(now)" -v b="$1" 'BEGIN { printf "%.3f", a - b }'; }
screen() { tmux -L "$SOCK" capture-pane -p -t b 2>/dev/null || true; }

for SIZE in $SIZES; do
  CAP="target/bench/explore-$KIND-$SIZE.pcap"
  [ -f "$CAP" ] || target/release/kwire-gen --kind "$KIND" --size "$SIZE" --seed 1 -o "$CAP"
  # An older modification time: a settled file (not one still being written).
  touch -d '1 hour ago' "$CAP"
  RSS="target/bench/explore-$SIZE.time"
  rm -f "$RSS"
  t0=$(now)
  tmux -L "$SOCK" -f /dev/null new-session -d -s b -x 200 -y 50 \
    "/usr/bin/time -v -o '$RSS' '$KW' explore '$CAP'; sleep 600"
  # First screen: a message line under the list's title.
  until screen | sed -n 2p | grep -q '^#'; do sleep 0.02; done
  first=$(since "$t0")
  tmux -L "$SOCK" send-keys -t b G
  # The last message: the status bar counts them all (no more reading), and the tree
  # is that of the last one.
  while :; do
    s=$(screen)
    total=$(echo "$s" | tail -1 | sed -n 's/^[0-9]* of \([0-9]*\) messages.*/\1/p')
    if [ -n "$total" ] && ! echo "$s" | tail -1 | grep -q reading \
      && echo "$s" | grep -q "Tree (message $total of the capture"; then
      break
    fi
    sleep 0.05
  done
  last=$(since "$t0")
  tmux -L "$SOCK" send-keys -t b q
  until [ -s "$RSS" ]; do sleep 0.05; done
  peak=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$RSS")
  tmux -L "$SOCK" kill-session -t b
  ts="-"
  if command -v tshark >/dev/null 2>&1; then
    t1=$(now)
    tshark -r "$CAP" -d tcp.port==9092,kafka 2>/dev/null | head -1 >/dev/null || true
    ts=$(since "$t1")
  fi
  printf '%s %s: %s messages; first screen %.2f s; last message (G) %.2f s; peak RSS %d MiB; tshark first line %s s\n' \
    "$KIND" "$SIZE" "$total" "$first" "$last" $((peak / 1024)) "$ts"
  [ "${KEEP:-0}" = 1 ] || rm -f "$CAP"
done
