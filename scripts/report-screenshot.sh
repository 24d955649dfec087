#!/usr/bin/env bash
# The README's picture of `kwire report` (docs/report.png): the report of the lab's
# consumer-group session (captures/lab/ck_consumer_group.pcap) in headless Chromium at
# 1400 px wide, the top of the page (overview and the first plots), through
# tests/browser/report-check.mjs (which checks the page as it goes: no console error, no
# request, every plot an SVG with labelled axes). Needs /usr/bin/chromium (or
# KWIRE_CHROMIUM), node and tests/browser/node_modules (npm ci in tests/browser).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet --locked --bin kwire
OUT="${1:-docs/report.png}"
HTML="$(mktemp --suffix=.html)"
trap 'rm -f "$HTML"' EXIT
env -u SSLKEYLOGFILE target/debug/kwire report captures/lab/ck_consumer_group.pcap -o "$HTML"
(cd tests/browser && node report-check.mjs "$HTML" "$OLDPWD/$OUT" 1500 >/dev/null)
echo "wrote $OUT"
