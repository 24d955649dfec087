#!/usr/bin/env bash
# The larger mixed session: confluent-kafka big records and a group, kafka-python codecs
# and kafkajs at the same time. Run by record.py (env from it).
set -u
HERE="$(cd "$(dirname "$0")" && pwd)"
LAB="${KWIRE_LAB_DIR:-/tmp/kwire-lab}"
"$LAB/venv/bin/python" "$HERE/clients.py" big_produce & a=$!
"$LAB/venv/bin/python" "$HERE/clients.py" kp_codecs & b=$!
sleep 1
node "$HERE/kjs.js" mixed & c=$!
rc=0
for p in $a $b $c; do wait "$p" || rc=1; done
exit $rc
