#!/usr/bin/env bash
# Records what a kwire binary prints (stdout, stderr and exit status) for every committed
# capture, log directory and hex fixture, in every output format, at --threads 1 and 8,
# into a folder; run it with the binary before a refactoring and after, then `diff -r`
# the two folders: nothing may differ.
#
#   cp target/debug/kwire target/before/kwire   (the name is in usage lines: keep it kwire)
#   scripts/golden-outputs.sh target/before/kwire target/golden-before
#   scripts/golden-outputs.sh target/debug/kwire target/golden-after
#   diff -r target/golden-before target/golden-after && echo identical
set -u
bin=$(realpath "$1"); out=$2
root=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$out"; mkdir -p "$out"; out=$(realpath "$out")
# Scratch space of this run (exports, reports), named TMP in what is recorded, so that
# two runs (before and after) may go at once.
tmp=$out.tmp; rm -rf "$tmp"; mkdir -p "$tmp"
cd "$root"
# run NAME ARGS...: stdout to NAME.out, stderr to NAME.err, the status to NAME.rc.
run() {
  local name=$1; shift
  NO_COLOR=1 SSLKEYLOGFILE= "$bin" --color never "$@" >"$out/$name.out" 2>"$out/$name.err"
  echo $? >"$out/$name.rc"
  sed -i "s#$tmp#TMP#g" "$out/$name.out" "$out/$name.err"
}
captures=(captures/demo.pcap captures/lab/*.pcap captures/lab/*.pcapng captures/lab/tls/*.pcapng)
for c in "${captures[@]}"; do
  n=$(echo "$c" | tr / _)
  extra=()
  case $c in */tls/*)
    extra=(--port 9093)
    [ -f "${c%.pcapng}.keys" ] && extra+=(--tls-keylog "${c%.pcapng}.keys");;
  esac
  for t in 1 8; do
    run "$n.t$t.default" read "$c" "${extra[@]}" --threads $t
    run "$n.t$t.V" read "$c" "${extra[@]}" --threads $t -V
    run "$n.t$t.x" read "$c" "${extra[@]}" --threads $t -x
    run "$n.t$t.Vx" read "$c" "${extra[@]}" --threads $t -V -x
    for f in json values summary hexdump; do
      run "$n.t$t.T$f" read "$c" "${extra[@]}" --threads $t -T $f
    done
    run "$n.t$t.fields" read "$c" "${extra[@]}" --threads $t -T fields -e frame -e api -e correlation_id -e latency -E header=y
    run "$n.t$t.filter" read "$c" "${extra[@]}" --threads $t -Y 'kind == response && error_code ~= 0 || unanswered'
    # Filters and columns on primitive schema fields: the summary tree keeps them
    # (DecodeOptions::keep); behind -V and JSON, two steps (RunOptions::whole).
    fy='ThrottleTimeMs > 0 || MemberId || ErrorCode == 0 && LeaderEpoch >= 0'
    run "$n.t$t.fieldfilter" read "$c" "${extra[@]}" --threads $t -Y "$fy"
    run "$n.t$t.fieldfilterV" read "$c" "${extra[@]}" --threads $t -V -Y "$fy"
    run "$n.t$t.fieldfilterjson" read "$c" "${extra[@]}" --threads $t -T json -Y "topic || SessionId"
    run "$n.t$t.fieldcolumns" read "$c" "${extra[@]}" --threads $t -T fields -e frame -e ThrottleTimeMs -e FetchOffset -E occurrence=a
    run "$n.t$t.stats" stats "$c" "${extra[@]}" --threads $t
    run "$n.t$t.statsjson" stats "$c" "${extra[@]}" --threads $t --format json
  done
  for f in md html; do
    run "$n.f$f" read "$c" "${extra[@]}" --format $f
  done
  run "$n.c5" read "$c" "${extra[@]}" -c 5 -V
  # With --records the export decodes whole trees; without, and with a filter on
  # topics or primitive fields, the rows trees (decode::Detail::Rows).
  for e in records rows topic field; do
    case $e in
      records) eargs=(--records --record-values) ;;
      rows) eargs=() ;;
      topic) eargs=(-Y 'topic || error_code ~= 0') ;;
      field) eargs=(-Y 'ThrottleTimeMs >= 0 || MemberId') ;;
    esac
    rm -rf "$tmp/export"
    run "$n.export-$e" export "$c" "${extra[@]}" --out "$tmp/export" "${eargs[@]}"
    if [ -d "$tmp/export" ]; then
      (cd "$tmp/export" && find . -type f | sort | xargs sha256sum) >"$out/$n.export-$e.files"
    fi
  done
  rm -rf "$tmp/export"
  run "$n.report" report "$c" "${extra[@]}" -o "$tmp/report.html"
  [ -f "$tmp/report.html" ] && sha256sum <"$tmp/report.html" >"$out/$n.report.sha"
  rm -f "$tmp/report.html"
  run "$n.reportfield" report "$c" "${extra[@]}" -o "$tmp/report.html" -Y 'ThrottleTimeMs >= 0 || MemberId'
  [ -f "$tmp/report.html" ] && sha256sum <"$tmp/report.html" >"$out/$n.reportfield.sha"
  rm -f "$tmp/report.html"
done
# several captures at once
run several.t8 read captures/demo.pcap captures/lab/ck_admin.pcap --threads 8 -V
run several.stats stats captures/demo.pcap captures/lab/ck_admin.pcap
# log directories
for d in captures/logdirs/*; do
  n=$(echo "$d" | tr / _)
  run "$n.log" log "$d"
  run "$n.logV" log "$d" -V --verify
  run "$n.logjson" log "$d" --format json
  run "$n.stats" stats "$d"
  run "$n.statsjson" stats "$d" --format json
  rm -rf "$tmp/export"
  run "$n.export" export "$d" --out "$tmp/export" --records
  if [ -d "$tmp/export" ]; then
    (cd "$tmp/export" && find . -type f | sort | xargs sha256sum) >"$out/$n.export.files"
  fi
  rm -rf "$tmp/export"
done
# hex fixtures: the goldens' text read back, and kwire's own hexdump of a capture
for g in tests/golden/*.txt; do
  n=$(echo "$g" | tr / _)
  for f in text json values summary hexdump; do
    run "$n.decode.$f" decode --hex-file "$g" --format $f
  done
done
"$bin" --color never read captures/demo.pcap -T hexdump >"$out/demo.hexdump.in" 2>/dev/null
for f in text json values summary hexdump md html; do
  run "demo.hexdump.decode.$f" decode --hex-file "$out/demo.hexdump.in" --format $f
done
for h in /work/shared/captures/lab/hex/*.txt; do
  [ -f "$h" ] || continue
  n=shared_$(basename "$h")
  run "$n.decode" decode --hex-file "$h"
  run "$n.decodejson" decode --hex-file "$h" --format json
done
run decode.seed decode --hex 000000230014000600000000000000020100000000000000000000000000000000000000000000
run decode.lone decode --hex 000000200000000000000000000201000000000000000000000000000000000000010000 --api-key 20 --api-version 6
echo "$(ls "$out" | wc -l) files in $out"
rm -rf "$tmp"
