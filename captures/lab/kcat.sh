#!/usr/bin/env bash
# kcat scenarios of the capture lab.
#   kcat.sh good: kcat on the confluent-kafka wheel's librdkafka (LD_PRELOAD): -L, -P, -C
#   kcat.sh old:  kcat on Debian's librdkafka 2.0.2, which cannot read ApiVersions v3
set -u
LAB="${KWIRE_LAB_DIR:-/tmp/kwire-lab}"
B="${KWIRE_LAB_HOST:-127.0.0.1}:${KWIRE_LAB_PORT:-9092}"
lib=$(ls "$LAB"/venv/lib/python3*/site-packages/confluent_kafka.libs/librdkafka-*.so* | head -1)
common=(-b "$B" -X socket.timeout.ms=5000 -X client.id=kwire-lab-kcat)
case "${1:-}" in
good)
  export LD_PRELOAD="$lib"
  timeout 20 kcat "${common[@]}" -L
  printf 'k1:kcat one\nk2:kcat two\nk3:kcat three\n' |
    timeout 20 kcat "${common[@]}" -P -t lab-kcat -p 0 -K: -z snappy -H origin=kcat
  timeout 20 kcat "${common[@]}" -C -t lab-kcat -p 0 -o beginning -e -f '%k=%s %h\n'
  ;;
old)
  timeout 8 kcat "${common[@]}" -L
  ;;
*) echo "usage: kcat.sh good|old" >&2; exit 2 ;;
esac
