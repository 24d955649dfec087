#!/usr/bin/env bash
# Rewrites docs/coverage.md: which API keys and versions the captures exercise, and what
# tshark (its own dissector, and kwire's generated Lua one) makes of them. Needs tshark and ../shared (or KWIRE_SHARED).
set -euo pipefail
cd "$(dirname "$0")/.."
export KWIRE_SHARED="${KWIRE_SHARED:-../shared}"
KWIRE_UPDATE_COVERAGE=1 KWIRE_NO_SKIP=1 \
  cargo test --quiet --test diff_tshark coverage_report_is_current -- --nocapture
KWIRE_UPDATE_COVERAGE=1 KWIRE_NO_SKIP=1 \
  cargo test --quiet --test wireshark_lua coverage_section_is_current -- --nocapture
