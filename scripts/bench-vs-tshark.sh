#!/usr/bin/env bash
# kwire beside tshark on the same generated captures, in one run (see docs/benchmarks.md).
#
#   scripts/bench-vs-tshark.sh                 # 100M chatter and bulk
#   SIZES="100M 1G" scripts/bench-vs-tshark.sh # and the 1 GB captures
#
# Environment:
#   SIZES       capture sizes (default "100M")
#   KINDS       capture kinds (default "chatter bulk")
#   ROUNDS      rounds for kwire and tshark's one-line mode (default 5)
#   SLOW_ROUNDS rounds for tshark -V and -T json (default 2: they take minutes)
#   BIG_ROUNDS  rounds of every command for sizes in G (default 2)
#   BIG_TSHARK_SLOW=1  also time tshark -V and -T json for sizes in G (off by default:
#               each takes a quarter of an hour or more on 1 GB)
#   MODES       which comparisons (default "summary tree json")
#   BIG_MODES   which comparisons for sizes in G (default "summary")
#   THREADS     kwire --threads values to time (default "1 N", N the cores): the last
#               one is compared with tshark, each other with the first
#   SEED        generator seed (default 1)
#   BENCH_DIR   where captures and results go (default target/bench)
#   LOG_BENCH=1 also time `kwire log` on a large segment made by repeating a real one
#               (SIZES=" " LOG_BENCH=1 runs that section alone):
#   LOG_SEGMENT the real segment (default: the rupia __cluster_metadata segment under
#               $KWIRE_SHARED, else captures/logdirs' codecrafters metadata segment)
#   LOG_MB      sizes of the large segment in MB (default 100; "25 100": one of each, to
#               see that peak RSS does not grow with the segment)
#   LOG_ROUNDS  rounds of each `kwire log` command (default 3)
#   EXPORT      1 (default): also time `kwire export` (Parquet) beside `kwire read
#               --format json` on each capture; 0: leave it out
#   EXPORT_ROUNDS rounds of the export rows (default 2)
#   TLS_BENCH=0 skip the TLS rows; TLS_SIZE (bytes, default 50000000), TLS_ROUNDS (3)
#   HOSTILE=1   also time the hostile inputs of issue 12 (millions of tiny records; many
#               frames of zeros) in every output mode and thread count, with peak RSS
#               against the 256 MiB bound; HOSTILE=only runs that section alone (about
#               2.5 min of CPU; 10 min of wall time at load 10 on 2 cores, most of it
#               the zeros): HOSTILE_THREADS (default "1 2 8"), HOSTILE_ROUNDS (default 1),
#               HOSTILE_MODES (default "summary tree json values"), HOSTILE_ZEROS=0
#               leaves out the frames of zeros, HOSTILE_TSHARK=0 tshark's one-line rows,
#               HOSTILE_TIMEOUT (seconds a run may take, default 300), HOSTILE_VMEM_MIB
#               (address-space limit of each run, a guard for the machine, default 8192)
#
# Every command writes to /dev/null. Each row gives the median wall time, the spread
# (min-max) over its rounds, the median CPU time (user+sys) and the largest peak RSS
# ("Maximum resident set size" of /usr/bin/time), and for kwire the output throughput
# (the bytes of one run's output, counted once with wc -c, over the median wall time).
# kwire and tshark alternate inside
# each round so that both see the same machine load; the load average is printed with
# every row.
set -euo pipefail
cd "$(dirname "$0")/.."

SIZES=${SIZES:-100M}
KINDS=${KINDS:-chatter bulk}
ROUNDS=${ROUNDS:-5}
SLOW_ROUNDS=${SLOW_ROUNDS:-2}
BIG_ROUNDS=${BIG_ROUNDS:-2}
BIG_TSHARK_SLOW=${BIG_TSHARK_SLOW:-0}
MODES=${MODES:-summary tree json}
BIG_MODES=${BIG_MODES:-summary}
SEED=${SEED:-1}
THREADS=${THREADS:-1 $(nproc)}
BENCH_DIR=${BENCH_DIR:-target/bench}
TARGET=${CARGO_TARGET_DIR:-target}
HOSTILE=${HOSTILE:-0}
if [ "$HOSTILE" = only ]; then
  SIZES=" "
  LOG_BENCH=0
  EXPORT=0
  TLS_BENCH=0
fi

if [ "$HOSTILE" != only ] && ! command -v tshark >/dev/null 2>&1; then
  echo "installing tshark (Debian's package)" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tshark >/dev/null
fi
if [ ! -x /usr/bin/time ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq time >/dev/null
fi

cargo build --release --quiet -p kwire -p kwire-gen
mkdir -p "$BENCH_DIR"
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
RESULTS="$BENCH_DIR/results-$STAMP.md"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# Copies, so that a rebuild during a long run does not change what is measured.
cp "$TARGET/release/kwire" "$TARGET/release/kwire-gen" "$TMP/"
KWIRE="$TMP/kwire"
GEN="$TMP/kwire-gen"

load() { cut -d' ' -f1-3 /proc/loadavg; }

{
  echo "## kwire vs tshark, $STAMP"
  echo
  echo "- machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(free -g | awk '/^Mem:/{print $2}') GiB memory"
  echo "- kwire $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(tshark --version 2>/dev/null | head -1)"
  echo "- load average at start: $(load)"
  echo
  echo "| capture | tool | command | rounds | median s | spread s | CPU s | peak RSS MiB | tshark/kwire | output GB/s | load |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|"
} | tee "$RESULTS"

# time_cmd OUTFILE CMD...: one timed run, appends "wall cpu rss_kb" to OUTFILE.
time_cmd() {
  local out=$1
  shift
  /usr/bin/time -f "%e %U %S %M" -o "$TMP/t" "$@" >/dev/null 2>"$TMP/err" || {
    echo "failed: $*" >&2
    tail -3 "$TMP/err" >&2
    return 1
  }
  awk '{printf "%s %.2f %s\n", $1, $2 + $3, $4}' "$TMP/t" >>"$out"
}

# stats FILE: "median min max median_cpu max_rss_mib" over the rounds in FILE.
stats() {
  sort -n -k1,1 "$1" | awk '
    { w[NR] = $1; c[NR] = $2; if ($3 > r) r = $3 }
    END {
      n = NR; m = (n % 2) ? w[(n + 1) / 2] : (w[n / 2] + w[n / 2 + 1]) / 2
      # the CPU median, from the CPU column sorted on its own
      for (i = 1; i <= n; i++) cs[i] = c[i]
      for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (cs[j] < cs[i]) { t = cs[i]; cs[i] = cs[j]; cs[j] = t }
      mc = (n % 2) ? cs[(n + 1) / 2] : (cs[n / 2] + cs[n / 2 + 1]) / 2
      printf "%.3f %.3f %.3f %.2f %.1f\n", m, w[1], w[n], mc, r / 1024
    }'
}

row() { # capture tool command rounds statsfile ratio load [output-bytes]
  local s gbs=""
  read -r med lo hi cpu rss <<<"$(stats "$5")"
  if [ -n "${8:-}" ]; then
    gbs=$(awk -v b="$8" -v t="$med" 'BEGIN { if (t > 0) printf "%.2f (%.0f MB)", b / t / 1e9, b / 1e6 }')
  fi
  s="| $1 | $2 | \`$3\` | $4 | $med | $lo-$hi | $cpu | $rss | $6 | $gbs | $7 |"
  echo "$s" | tee -a "$RESULTS"
}

median_of() { stats "$1" | cut -d' ' -f1; }

for size in $SIZES; do
  for kind in $KINDS; do
    f="$BENCH_DIR/$kind-$size.pcap"
    if [ ! -s "$f" ]; then
      echo "generating $f" >&2
      "$GEN" --kind "$kind" --size "$size" --seed "$SEED" -o "$f"
    fi
    cat "$f" >/dev/null # into the page cache
    cap="$kind $size ($(($(stat -c %s "$f") / 1000000)) MB)"
    if [ "${size%G}" = "$size" ]; then
      fast=$ROUNDS
      slow=$SLOW_ROUNDS
      modes=$MODES
    else
      fast=$BIG_ROUNDS
      slow=$BIG_ROUNDS
      [ "$BIG_TSHARK_SLOW" = 1 ] || slow=0
      modes=$BIG_MODES
    fi
    # dd on the cached file: the floor.
    : >"$TMP/dd"
    for _ in $(seq "$fast"); do time_cmd "$TMP/dd" dd if="$f" of=/dev/null bs=1M; done
    row "$cap" dd "dd bs=1M" "$fast" "$TMP/dd" "" "$(load)"
    for mode in $modes; do
      case $mode in
        summary)
          k=(--format summary)
          t=()
          tr=$fast
          ;;
        tree)
          k=(-V --color never)
          t=(-V)
          tr=$slow
          ;;
        json)
          k=(--format json)
          t=(-T json)
          tr=$slow
          ;;
      esac
      nt=0
      for n in $THREADS; do
        nt=$((nt + 1))
        : >"$TMP/k$nt"
      done
      : >"$TMP/s"
      for i in $(seq "$fast"); do
        nt=0
        for n in $THREADS; do
          nt=$((nt + 1))
          time_cmd "$TMP/k$nt" "$KWIRE" read "$f" "${k[@]}" --threads "$n"
        done
        if [ "$i" -le "$tr" ]; then
          time_cmd "$TMP/s" tshark -r "$f" -d tcp.port==9092,kafka "${t[@]}"
        fi
      done
      l=$(load)
      bytes=$("$KWIRE" read "$f" "${k[@]}" 2>/dev/null | wc -c)
      nt=0
      first=""
      for n in $THREADS; do
        nt=$((nt + 1))
        km=$(median_of "$TMP/k$nt")
        speed=""
        if [ -z "$first" ]; then
          first=$km
        else
          speed=$(awk -v a="$first" -v b="$km" -v n="${THREADS%% *}" 'BEGIN { printf "%.2fx of --threads %s", a / b, n }')
        fi
        row "$cap" kwire "kwire read ${k[*]} --threads $n" "$fast" "$TMP/k$nt" "$speed" "$l" "$bytes"
      done
      if [ -s "$TMP/s" ]; then
        sm=$(median_of "$TMP/s")
        ratio=$(awk -v a="$sm" -v b="$km" 'BEGIN { printf "%.1fx", a / b }')
        row "$cap" tshark "$(echo tshark -d tcp.port==9092,kafka "${t[@]}")" "$tr" "$TMP/s" "$ratio" "$l"
      fi
    done
  done
done

# kwire log on a large segment: a real one repeated, each copy's baseOffsets moved past
# the last copy's (baseOffset is outside the CRC, so every batch stays valid and
# --verify finds no error).
if [ "${LOG_BENCH:-0}" = 1 ]; then
  seg=${LOG_SEGMENT:-}
  if [ -z "$seg" ]; then
    seg="${KWIRE_SHARED:-../shared}/captures/logdirs/rupia_kraft/kafka-logs/__cluster_metadata-0/00000000000001725413.log"
    [ -s "$seg" ] || seg=captures/logdirs/codecrafters_510714e/__cluster_metadata-0/00000000000000000000.log
  fi
  for mb in ${LOG_MB:-100}; do
  big="$BENCH_DIR/log-$mb/__cluster_metadata-0/00000000000000000000.log"
  mkdir -p "$(dirname "$big")"
  if [ ! -s "$big" ] || [ "$(stat -c %s "$big")" -lt $((mb * 1000000)) ]; then
    echo "writing $big from $seg" >&2
    python3 - "$seg" "$big" "$mb" <<'PY'
import struct, sys
src, dst, mb = sys.argv[1], sys.argv[2], int(sys.argv[3])
data = open(src, "rb").read()
batches, p = [], 0
while p + 12 <= len(data):
    n = struct.unpack(">i", data[p + 8:p + 12])[0] + 12
    batches.append(data[p:p + n])
    p += n
first = struct.unpack(">q", batches[0][:8])[0]
last = max(struct.unpack(">q", b[:8])[0] + struct.unpack(">i", b[23:27])[0] for b in batches)
span = last - first + 1
with open(dst, "wb") as out:
    copy, written = 0, 0
    while written < mb * 1000000:
        for b in batches:
            base = struct.unpack(">q", b[:8])[0] - first + copy * span
            out.write(struct.pack(">q", base) + b[8:])
            written += len(b)
        copy += 1
PY
  fi
  cat "$big" >/dev/null
  cap="segment $(($(stat -c %s "$big") / 1000000)) MB ($(basename "$seg") repeated)"
  for cmd in "--format summary" "--format summary --verify" "--no-bytes --color never" "--format json"; do
    : >"$TMP/l"
    # shellcheck disable=SC2086
    for _ in $(seq "${LOG_ROUNDS:-3}"); do time_cmd "$TMP/l" "$KWIRE" log "$big" $cmd; done
    row "$cap" kwire "kwire log $cmd" "${LOG_ROUNDS:-3}" "$TMP/l" "" "$(load)"
  done
  done
fi

# >>> export (issue 16): `kwire export` to Parquet beside `kwire read --format json`, on
# the same generated captures; throughput is the capture's MB per median second.
EXPORT=${EXPORT:-1}
EXPORT_ROUNDS=${EXPORT_ROUNDS:-2}
if [ "$EXPORT" = 1 ]; then
  for size in $SIZES; do
    for kind in $KINDS; do
      f="$BENCH_DIR/$kind-$size.pcap"
      mb=$(($(stat -c %s "$f") / 1000000))
      cap="$kind $size ($mb MB)"
      for cmd in "read --format json" "export --out $TMP/x --force" "export --out $TMP/x --force --records"; do
        : >"$TMP/e"
        for _ in $(seq "$EXPORT_ROUNDS"); do
          # shellcheck disable=SC2086 # the command's words
          time_cmd "$TMP/e" "$KWIRE" ${cmd%% *} "$f" ${cmd#* }
        done
        m=$(median_of "$TMP/e")
        tput=$(awk -v a="$mb" -v b="$m" 'BEGIN { printf "%.0f MB/s", a / b }')
        row "$cap" kwire "kwire ${cmd//$TMP\/x/DIR}" "$EXPORT_ROUNDS" "$TMP/e" "$tput" "$(load)"
      done
      rm -rf "$TMP/x"
    done
  done
fi
# <<< export
# >>> orphans (issue 13): the cost of ranked guesses. The server's packets of the first
# chatter capture, without the client's: every response is an orphan whose layout is
# guessed, beside the same responses paired in the whole capture. ORPHAN_PACKETS caps the
# packets taken (default 200000).
orphan_src="$BENCH_DIR/chatter-${SIZES%% *}.pcap"
if [ "$HOSTILE" != only ] && [ -s "$orphan_src" ] && command -v editcap >/dev/null 2>&1; then
  head_f="$TMP/orphan-head.pcap"
  orphans="$TMP/orphans.pcap"
  editcap -r "$orphan_src" "$head_f" "1-${ORPHAN_PACKETS:-200000}"
  tshark -r "$head_f" -Y "tcp.srcport == 9092" -w "$orphans"
  for c in "$head_f" "$orphans"; do
    : >"$TMP/o"
    for _ in $(seq "$ROUNDS"); do time_cmd "$TMP/o" "$KWIRE" read "$c" --format summary; done
    what="whole capture (paired)"
    [ "$c" = "$orphans" ] && what="server packets only (every response guessed)"
    row "orphans: $what" kwire "kwire read --format summary" "$ROUNDS" "$TMP/o" "" "$(load)"
  done
fi
# <<< orphans
# >>> TLS: the TLS lab's AES-256-GCM capture replicated to TLS_SIZE, decrypted with its key
# log by kwire and by tshark; kwire without the key log beside them (records only framed
# and counted). Off with TLS_BENCH=0. Owned by the TLS work (issue 14).
TLS_BENCH=${TLS_BENCH:-1}
TLS_SIZE=${TLS_SIZE:-50000000}
TLS_ROUNDS=${TLS_ROUNDS:-3}
if [ "$TLS_BENCH" = 1 ]; then
  lab=captures/lab/tls/tls13_kp_aes256gcm
  tf="$BENCH_DIR/tls13-aes256gcm-$TLS_SIZE.pcap"
  if [ ! -s "$tf" ]; then
    editcap -F pcap "$lab.pcapng" "$TMP/lab.pcap"
    python3 scripts/tls-replicate.py "$TMP/lab.pcap" "$tf" "$TLS_SIZE" 9093
  fi
  cat "$tf" >/dev/null
  cap="TLS 1.3 AES-256-GCM ($(($(stat -c %s "$tf") / 1000000)) MB)"
  tk=(read "$tf" --port 9093 --tls-keylog "$lab.keys" --format summary)
  ts=(-r "$tf" -o "tls.keylog_file:$lab.keys" -d tcp.port==9093,tls -d tls.port==9093,kafka)
  : >"$TMP/k"
  : >"$TMP/n"
  : >"$TMP/s"
  for _ in $(seq "$TLS_ROUNDS"); do
    time_cmd "$TMP/k" "$KWIRE" "${tk[@]}"
    time_cmd "$TMP/n" "$KWIRE" read "$tf" --port 9093 --format summary
    time_cmd "$TMP/s" tshark "${ts[@]}"
  done
  l=$(load)
  km=$(median_of "$TMP/k")
  sm=$(median_of "$TMP/s")
  row "$cap" kwire "kwire read --port 9093 --tls-keylog KEYS --format summary" "$TLS_ROUNDS" "$TMP/k" "" "$l"
  row "$cap" kwire "kwire read --port 9093 --format summary (no keys)" "$TLS_ROUNDS" "$TMP/n" "" "$l"
  row "$cap" tshark "tshark -o tls.keylog_file:KEYS -d tcp.port==9093,tls -d tls.port==9093,kafka" "$TLS_ROUNDS" "$TMP/s" \
    "$(awk -v a="$sm" -v b="$km" 'BEGIN { printf "%.1fx", a / b }')" "$l"
fi
# <<< TLS

# >>> hostile (issue 12): inputs bounded by bytes but not by records, at full size
# (kwire-gen's dense kinds; tests/bounded_memory.rs runs them scaled down), and decode
# of many frames of zeros. kwire only, except tshark's one-line mode on the captures
# (HOSTILE_TSHARK=0 leaves it out). Each row gives the peak RSS against the 256 MiB bound
# of the issue; a run that fails, is killed or passes HOSTILE_TIMEOUT says so.
if [ "$HOSTILE" != 0 ]; then
  HOSTILE_THREADS=${HOSTILE_THREADS:-1 2 8}
  HOSTILE_ROUNDS=${HOSTILE_ROUNDS:-1}
  HOSTILE_MODES=${HOSTILE_MODES:-summary tree json values}
  HOSTILE_TIMEOUT=${HOSTILE_TIMEOUT:-300}
  HOSTILE_VMEM_MIB=${HOSTILE_VMEM_MIB:-8192}
  HOSTILE_TSHARK=${HOSTILE_TSHARK:-1}
  command -v tshark >/dev/null 2>&1 || HOSTILE_TSHARK=0
  bound=$((256 * 1024))
  for k in dense-zstd dense-fetch dense-threads; do
    if [ ! -s "$BENCH_DIR/$k.pcap" ] || [ ! -s "$BENCH_DIR/$k.bin" ]; then
      "$GEN" --kind "$k" -o "$BENCH_DIR/$k.pcap" --frames-out "$BENCH_DIR/$k.bin"
    fi
  done
  {
    echo
    echo "### hostile inputs (issue 12), $STAMP"
    echo
    echo "| input | command | threads | rounds | median s | spread s | CPU s | peak RSS MiB | under 256 MiB | output MB | load |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|"
  } | tee -a "$RESULTS"
  # hostile_run OUTFILE CMD...: time_cmd with a time limit and an address-space guard;
  # a run that fails appends "fail" (its status) instead of failing the script.
  hostile_run() {
    local out=$1
    shift
    if ! (ulimit -v $((HOSTILE_VMEM_MIB * 1024)) && time_cmd "$out" timeout "$HOSTILE_TIMEOUT" "$@"); then
      echo "fail" >>"$out"
    fi
  }
  # hrow INPUT COMMAND THREADS FILE [OUTPUT-BYTES]
  hrow() {
    local med lo hi cpu rss ok
    if grep -q fail "$4"; then
      echo "| $1 | \`$2\` | $3 | $HOSTILE_ROUNDS | did not finish (see stderr) | | | | no | | $(load) |" | tee -a "$RESULTS"
      return
    fi
    read -r med lo hi cpu rss <<<"$(stats "$4")"
    ok=yes
    awk -v r="$rss" -v b=$((bound / 1024)) 'BEGIN { exit !(r >= b) }' && ok="**no**"
    echo "| $1 | \`$2\` | $3 | $HOSTILE_ROUNDS | $med | $lo-$hi | $cpu | $rss | $ok | ${5:-} | $(load) |" | tee -a "$RESULTS"
  }
  hmode() { # MODE -> the kwire arguments of that output mode
    case $1 in
      summary) echo "--format summary" ;;
      tree) echo "--no-bytes --color never" ;;
      json) echo "--format json" ;;
      values) echo "--format values" ;;
    esac
  }
  out_mb() { awk -v b="$1" 'BEGIN { printf "%.3f", b / 1e6 }'; }
  for k in dense-zstd dense-fetch dense-threads; do
    f="$BENCH_DIR/$k.pcap"
    cap="$k ($(stat -c %s "$f") B capture)"
    for mode in $HOSTILE_MODES; do
      m=$(hmode "$mode")
      for n in $HOSTILE_THREADS; do
        : >"$TMP/h"
        # shellcheck disable=SC2086 # the mode's words
        for _ in $(seq "$HOSTILE_ROUNDS"); do hostile_run "$TMP/h" "$KWIRE" read "$f" $m --threads "$n"; done
        # shellcheck disable=SC2086
        b=$(timeout "$HOSTILE_TIMEOUT" "$KWIRE" read "$f" $m --threads "$n" 2>/dev/null | wc -c || true)
        hrow "$cap" "kwire read $m" "$n" "$TMP/h" "$(out_mb "$b")"
      done
    done
    if [ "$HOSTILE_TSHARK" = 1 ]; then
      : >"$TMP/h"
      hostile_run "$TMP/h" tshark -r "$f" -d tcp.port==9092,kafka
      hrow "$cap" "tshark -d tcp.port==9092,kafka" "" "$TMP/h"
    fi
  done
  # The dense frames alone, with decode --raw (one thread: decode has no workers).
  for k in dense-zstd dense-fetch; do
    f="$BENCH_DIR/$k.bin"
    cap="$k frame ($(stat -c %s "$f") B)"
    args=()
    [ "$k" = dense-fetch ] && args=(--api-key 1 --api-version 11)
    for mode in $HOSTILE_MODES; do
      m=$(hmode "$mode")
      : >"$TMP/h"
      # shellcheck disable=SC2086
      for _ in $(seq "$HOSTILE_ROUNDS"); do hostile_run "$TMP/h" "$KWIRE" decode --raw "$f" "${args[@]}" $m; done
      # shellcheck disable=SC2086
      b=$("$KWIRE" decode --raw "$f" "${args[@]}" $m 2>/dev/null | wc -c || true)
      hrow "$cap" "kwire decode --raw FRAME ${args[*]:+${args[*]} }$m" 1 "$TMP/h" "$(out_mb "$b")"
    done
  done
  HOSTILE_ZEROS=${HOSTILE_ZEROS:-1}
fi
if [ "$HOSTILE" != 0 ] && [ "$HOSTILE_ZEROS" = 1 ]; then
  # Frames of zeros: every 4 bytes a size-0 frame (16.8 M frames in 64 MiB, each an
  # error at its offset).
  zrow() { # INPUT-LABEL STDIN-SOURCE COMMAND-LABEL ARGS...
    local label=$1 src=$2 what=$3
    shift 3
    : >"$TMP/h"
    for _ in $(seq "$HOSTILE_ROUNDS"); do
      if [ -n "$src" ]; then
        hostile_run "$TMP/h" "$KWIRE" decode "$@" < <(eval "$src")
      else
        hostile_run "$TMP/h" "$KWIRE" decode "$@"
      fi
    done
    hrow "$label" "$what" 1 "$TMP/h"
  }
  zeros="$TMP/zeros-64M.bin"
  head -c 64M /dev/zero >"$zeros"
  # 24 MiB of zeros as plain hex: 49 MiB of text, under decode's 64 MiB text cap.
  head -c 24M /dev/zero | xxd -p >"$TMP/zeros-24M.hex"
  # Summary mode on every variant; text (411 bytes a frame: 6.9 GB for 64 MiB) on the
  # 64 MiB file only.
  m="--format summary"
  # shellcheck disable=SC2086
  zrow "64 MiB of zeros" "" "kwire decode --raw FILE $m" --raw "$zeros" $m
  zrow "64 MiB of zeros" "" "kwire decode --raw FILE --color never" --raw "$zeros" --color never
  # shellcheck disable=SC2086
  zrow "64 MiB of zeros" "head -c 64M /dev/zero" "head -c 64M /dev/zero | kwire decode --raw - $m" --raw - $m
  # shellcheck disable=SC2086
  zrow "1 GiB of zeros" "head -c 1G /dev/zero" "head -c 1G /dev/zero | kwire decode --raw - $m" --raw - $m
  # shellcheck disable=SC2086
  zrow "24 MiB of zeros as hex (49 MiB)" "" "kwire decode --hex-file FILE $m" --hex-file "$TMP/zeros-24M.hex" $m
  # shellcheck disable=SC2086
  zrow "24 MiB of zeros as hex (49 MiB)" "cat $TMP/zeros-24M.hex" "kwire decode --hex-file - $m" --hex-file - $m
  # Over the text cap: refused (an error naming --raw) after reading 64 MiB, not held.
  /usr/bin/time -f "%e %U %S %M" -o "$TMP/t" "$KWIRE" decode --hex-file - --format summary \
    < <(head -c 1G /dev/zero | xxd -p) >/dev/null 2>"$TMP/err" || true
  tail -1 "$TMP/t" | awk '{printf "%s %.2f %s\n", $1, $2 + $3, $4}' >"$TMP/h"
  hrow "1 GiB of zeros as hex" "xxd -p | kwire decode --hex-file - --format summary (refused: $(head -c 60 "$TMP/err")...)" 1 "$TMP/h"
fi
# <<< hostile

echo | tee -a "$RESULTS"
echo "- load average at end: $(load)" | tee -a "$RESULTS"
echo "results: $RESULTS" >&2
