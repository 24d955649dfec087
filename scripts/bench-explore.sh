#!/usr/bin/env bash
# `kwire explore` on generated captures (kwire-gen, SIZES default "100M 1G", KIND default
# chatter, under target/bench/), in a detached 200x50 tmux session: the time to the first
# screen (the list's first message line drawn), the time until `G` (pressed as soon as
# the first screen is there) shows the last message of the capture (the status bar counts
# every message, no more reading, and the tree is the last message's: the index is
# built), and the peak RSS (GNU time). Beside it, on the same capture: tshark's time to
# its first line (`tshark -r F -d tcp.port==9092,kafka | head -1`) and, when termshark is
# installed, termshark's time to its first packet row, to the last packet row after `G`,
# and its peak RSS (GNU time: the largest of termshark and the tshark processes it
# waited for). The captures are deleted afterwards (KEEP=1 keeps them). Each wait gives
# up after TIMEOUT seconds (default 1800) and says so, with the screen it last saw.
# MODES (default file) also runs the explorer on the capture from stdin (stdin) and on
# the capture given twice (two). The load average is printed before each capture. The figures go to docs/benchmarks.md
# by hand.
set -uo pipefail
cd "$(dirname "$0")/.."
KIND="${KIND:-chatter}"
SIZES="${SIZES:-100M 1G}"
TIMEOUT="${TIMEOUT:-1800}"
TERMSHARK="${TERMSHARK:-1}"
mkdir -p target/bench
# KWIRE_BIN and KWIRE_GEN name other builds (the release ones are built otherwise).
if [ -z "${KWIRE_BIN:-}" ] || [ -z "${KWIRE_GEN:-}" ]; then
  cargo build --release --locked --quiet -p kwire-gen -p kwire --bins || exit 1
fi
KW="${KWIRE_BIN:-$PWD/target/release/kwire}"
GEN="${KWIRE_GEN:-$PWD/target/release/kwire-gen}"
for tool in tmux /usr/bin/time; do
  command -v "$tool" >/dev/null 2>&1 || { echo "bench-explore: $tool is needed" >&2; exit 1; }
done
SOCK="kwire-bench-$$"
trap 'tmux -L "$SOCK" kill-server 2>/dev/null || true' EXIT
now() { date +%s.%N; }
since() { awk -v a="$(now)" -v b="$1" 'BEGIN { printf "%.2f", a - b }'; }
screen() { tmux -L "$SOCK" capture-pane -p -t b 2>/dev/null || true; }
# wait_for WHAT START COMMAND...: runs COMMAND every 50 ms until it succeeds; gives up
# after TIMEOUT seconds from START (the screen is printed then) and returns 1.
wait_for() {
  local what="$1" start="$2"
  shift 2
  until "$@"; do
    if awk -v a="$(now)" -v b="$start" -v t="$TIMEOUT" 'BEGIN { exit !(a - b > t) }'; then
      echo "bench-explore: gave up waiting for $what after ${TIMEOUT} s; the screen:" >&2
      screen >&2
      return 1
    fi
    sleep 0.05
  done
}
# The explorer's screen: a message line (`#N ...`) in the list, under its title.
kw_first() { screen | awk '/Messages \(/ { t = 1; next } t && /^#/ { f = 1 } END { exit !f }'; }
# Every message read and the last one's tree shown; sets TOTAL.
kw_last() {
  local s status
  s=$(screen)
  status=$(printf '%s\n' "$s" | tail -n 1)
  TOTAL=$(printf '%s\n' "$status" | sed -n 's/^[0-9]* of \([0-9]*\) messages.*/\1/p')
  [ -n "$TOTAL" ] && [[ "$status" != *reading* ]] \
    && [[ "$s" == *"Tree (message $TOTAL of the capture"* ]]
}
# termshark's screen: its packet list's first row (` 1  <time> ...`).
ts_first() { screen | grep -Eq '^ 1 +[0-9]'; }
# termshark's packet list shows row PACKETS (the last packet); G is pressed again
# every second until it does (termshark may take G before its list is loaded).
ts_last() {
  if awk -v a="$(now)" -v b="$LAST_G" 'BEGIN { exit !(a - b > 1) }'; then
    tmux -L "$SOCK" send-keys -t b G
    LAST_G=$(now)
  fi
  screen | grep -Eq "^ $PACKETS +[0-9]"
}
# peak FILE: GNU time's maximum resident set size, in MiB ("?" when not there).
peak() {
  local k
  k=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$1" 2>/dev/null)
  if [ -n "$k" ]; then echo $((k / 1024)); else echo "?"; fi
}
# run TIMEFILE COMMAND: a fresh tmux session running COMMAND under GNU time.
run() {
  tmux -L "$SOCK" kill-session -t b 2>/dev/null || true
  rm -f "$1"
  tmux -L "$SOCK" -f /dev/null new-session -d -s b -x 200 -y 50 \
    "/usr/bin/time -v -o '$1' $2; sleep 3600"
}

for SIZE in $SIZES; do
  CAP="target/bench/explore-$KIND-$SIZE.pcap"
  [ -f "$CAP" ] || "$GEN" --kind "$KIND" --size "$SIZE" --seed 1 -o "$CAP" \
    || exit 1
  # An older modification time: a settled file (not one still being written).
  touch -d '1 hour ago' "$CAP"
  BYTES=$(stat -c %s "$CAP")
  # What the explorer's count is checked against (each mode: once, or twice for two).
  READ=$("$KW" read "$CAP" 2>/dev/null | wc -l)
  echo "$KIND $SIZE ($BYTES bytes): load average $(cut -d' ' -f1-3 /proc/loadavg) at start"

  # kwire explore, on the file (MODES: file; also stdin, `cat F | kwire explore -`, and
  # two, `kwire explore F F`: the capture twice, as two captures)
  for MODE in ${MODES:-file}; do
    case "$MODE" in
      file) CMD="'$KW' explore '$CAP'" ;;
      stdin) CMD="sh -c \"cat '$CAP' | '$KW' explore -\"" ;;
      two) CMD="'$KW' explore '$CAP' '$CAP'" ;;
      *) echo "bench-explore: MODES: file, stdin or two, not $MODE" >&2; exit 1 ;;
    esac
    T="target/bench/explore-$SIZE-$MODE.time"
    t0=$(now)
    run "$T" "$CMD"
    first="-" last="-" TOTAL="?"
    if wait_for "kwire's first screen ($MODE)" "$t0" kw_first; then
      first=$(since "$t0")
      tmux -L "$SOCK" send-keys -t b G
      wait_for "kwire's last message ($MODE)" "$t0" kw_last && last=$(since "$t0")
    fi
    tmux -L "$SOCK" send-keys -t b q
    wait_for "kwire to exit" "$(now)" test -s "$T" || true
    want=$READ
    [ "$MODE" = two ] && want=$((2 * READ))
    [ "$TOTAL" = "$want" ] || echo "bench-explore: $MODE: the explorer counted $TOTAL messages, kwire read $want" >&2
    echo "  kwire explore ($MODE): $TOTAL messages; first screen $first s; last message (G) $last s; peak RSS $(peak "$T") MiB"
  done

  # tshark's first line
  if command -v tshark >/dev/null 2>&1; then
    t1=$(now)
    tshark -r "$CAP" -d tcp.port==9092,kafka 2>/dev/null | head -n 1 >/dev/null
    echo "  tshark: first line $(since "$t1") s"
  fi

  # termshark
  if [ "$TERMSHARK" = 1 ] && command -v termshark >/dev/null 2>&1; then
    PACKETS=$(capinfos -c -M "$CAP" 2>/dev/null | sed -n 's/^Number of packets: *//p')
    TS="target/bench/termshark-$SIZE.time"
    t2=$(now)
    run "$TS" "termshark -r '$CAP' -d tcp.port==9092,kafka"
    tfirst="-" tlast="-"
    if wait_for "termshark's first packet row" "$t2" ts_first; then
      tfirst=$(since "$t2")
      if [ -n "$PACKETS" ]; then
        LAST_G=0
        wait_for "termshark's last packet row ($PACKETS)" "$t2" ts_last && tlast=$(since "$t2")
      fi
    fi
    # q asks "Do you want to quit?": Enter says Ok.
    tmux -L "$SOCK" send-keys -t b q
    sleep 1
    tmux -L "$SOCK" send-keys -t b Enter
    wait_for "termshark to exit" "$(now)" test -s "$TS" || true
    echo "  termshark: ${PACKETS:-?} packets; first row $tfirst s; last row (G) $tlast s; peak RSS $(peak "$TS") MiB"
  fi
  tmux -L "$SOCK" kill-session -t b 2>/dev/null || true
  echo "  load average $(cut -d' ' -f1-3 /proc/loadavg) at the end"
  [ "${KEEP:-0}" = 1 ] || rm -f "$CAP"
done
