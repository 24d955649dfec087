#!/usr/bin/env bash
# Run kwire's fuzz targets (fuzz/fuzz_targets) for a bounded time each, on the committed
# corpora, and fail if any run leaves a crash, timeout or out-of-memory artifact.
#
#   scripts/fuzz.sh SECONDS [TARGET...]     (default: every target, one after another)
#
# cargo-fuzz (crates.io) with the stable toolchain: RUSTC_BOOTSTRAP=1 allows the
# sanitizer flags. Release build with AddressSanitizer (`cargo fuzz build -O`). New inputs
# go to $KWIRE_FUZZ_OUT/<target> (default target/fuzz-ci), never into the committed corpus;
# artifacts to $KWIRE_FUZZ_OUT/artifacts/<target>/. The last lines of each run (libFuzzer's
# final stats: executions, coverage, corpus) are printed and kept in
# $KWIRE_FUZZ_OUT/<target>.log. KWIRE_FUZZ_NO_BUILD=1 skips the build (already built).
# KWIRE_FUZZ_TIMEOUT (default 30) is libFuzzer's wall-clock limit for one input, in
# seconds: the slowest committed seed (pages: the 245-byte Produce whose zstd batch holds
# 150,000 records, printed twice as HTML and Markdown) takes about 5 s of CPU under
# AddressSanitizer (10 s on a loaded machine), and a run at low priority wants more.
set -euo pipefail
cd "$(dirname "$0")/.."

secs="${1:?usage: scripts/fuzz.sh SECONDS [TARGET...]}"
shift
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in fuzz/fuzz_targets/*.rs; do targets+=("$(basename "$f" .rs)"); done
fi
out="${KWIRE_FUZZ_OUT:-target/fuzz-ci}"
out="$(mkdir -p "$out" && cd "$out" && pwd)"
root="$(pwd)"

if ! command -v cargo-fuzz >/dev/null 2>&1; then
  cargo install --locked --quiet cargo-fuzz
fi
if [ "${KWIRE_FUZZ_NO_BUILD:-0}" != 1 ]; then
  RUSTC_BOOTSTRAP=1 cargo fuzz build -O --fuzz-dir fuzz
fi

failed=0
for t in "${targets[@]}"; do
  mkdir -p "$out/$t" "$out/artifacts/$t" "$out/work/$t"
  # capture and tls take whole captures (their seeds are up to 64 KB).
  max_len=4096
  case "$t" in capture | tls) max_len=65536 ;; esac
  echo "fuzz: $t for ${secs}s (started $(date -u +%H:%M:%S) UTC)"
  # libFuzzer writes its own logs into the working directory: run it in one of ours.
  status=0
  (cd "$out/work/$t" && RUSTC_BOOTSTRAP=1 cargo fuzz run -O --fuzz-dir "$root/fuzz" "$t" \
    "$out/$t" "$root/fuzz/corpus/$t" -- \
    -max_total_time="$secs" -timeout="${KWIRE_FUZZ_TIMEOUT:-30}" -rss_limit_mb=2048 -max_len="$max_len" \
    -print_final_stats=1 -artifact_prefix="$out/artifacts/$t/") >"$out/$t.log" 2>&1 || status=$?
  grep -E "^stat::|^Done|INITED|ERROR|SUMMARY|panicked|deadly" "$out/$t.log" || true
  if ls "$out/artifacts/$t" | grep -E "^(crash|timeout|oom|leak)-" >/dev/null || [ "$status" != 0 ]; then
    echo "fuzz: $t FAILED (exit $status): $(ls "$out/artifacts/$t")" >&2
    tail -n 40 "$out/$t.log" >&2
    failed=1
  fi
done
exit "$failed"
