#!/usr/bin/env bash
# The README's screenshot of `kwire explore` (docs/explore.svg): the explorer on
# captures/demo.pcap in a detached 132x40 tmux session, the ApiVersions response selected
# and its ApiKeys array's first element in the tree, the screen captured with its colours
# (tmux capture-pane -e) and drawn as SVG by scripts/ansi-to-svg.py.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet --locked --bin kwire
OUT="${1:-docs/explore.svg}"
SOCK="kwire-shot-$$"
trap 'tmux -L "$SOCK" kill-server 2>/dev/null || true' EXIT
tmux -L "$SOCK" -f /dev/null new-session -d -s s -x 132 -y 40 \
  "env TERM=xterm-256color target/debug/kwire explore --color always captures/demo.pcap; sleep 60"
until tmux -L "$SOCK" capture-pane -p -t s | grep -q '46 of 46 messages'; do sleep 0.1; done
for k in j Tab j j j j j j j j j j; do
  tmux -L "$SOCK" send-keys -t s "$k"
  sleep 0.1
done
sleep 0.5
tmux -L "$SOCK" capture-pane -e -p -t s | python3 scripts/ansi-to-svg.py > "$OUT"
echo "wrote $OUT"
