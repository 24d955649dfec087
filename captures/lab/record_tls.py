#!/usr/bin/env python3
"""Records the TLS part of the capture lab: Kafka over TLS 1.2 and 1.3 with the key logs
that decrypt it (captures/lab/tls/NAME.pcapng + NAME.keys).

    captures/lab/setup.sh                  # once (the same tools as record.py)
    captures/lab/record_tls.py             # every TLS scenario
    captures/lab/record_tls.py NAME ...    # some; --list shows them

Real clients: tansu (plaintext, 127.0.0.1:9092, advertising 127.0.0.1:9093) behind
tls_proxy.py (Python ssl, 127.0.0.1:9093, keylog_filename), captured on port 9093 only.
kafka-python and aiokafka write their own key log (ssl context keylog_filename), kafkajs
through node --tls-keylog; confluent-kafka (librdkafka 2.16 has no key-log setting) uses
the terminator's. For HelloRetryRequest, KeyUpdate and resumption, openssl s_client and
s_server exchange Kafka frames that `kwire encode` wrote (ApiVersions, Metadata). The
certificate and key are made here for the lab, fresh each run; the committed key logs hold
only these lab sessions' secrets. Loopback only; every process started here is stopped here.
"""

import argparse
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from record import LAB, NODE_DIR, PY, Proc, tansu_bin, wait_port  # noqa: E402

HERE = Path(__file__).resolve().parent
OUT = HERE / "tls"
ROOT = HERE.parent.parent
KWIRE = os.environ.get("KWIRE_BIN", str(ROOT / "target" / "debug" / "kwire"))
TLS_PORT, KAFKA_PORT = 9093, 9092
WORK = LAB / "tls"

# Kafka frames for the openssl scenarios (JSON in the shape `kwire encode` reads).
FRAMES = [
    ('{"api_name":"ApiVersions","api_version":3,"kind":"request","header":{"correlation_id":%d,'
     '"client_id":"s_client"},"body":{"ClientSoftwareName":"openssl","ClientSoftwareVersion":"3.0"}}',
     '{"api_name":"ApiVersions","api_version":3,"kind":"response","header":{"correlation_id":%d},'
     '"body":{"ErrorCode":0,"ApiKeys":[{"ApiKey":18,"MinVersion":0,"MaxVersion":3},'
     '{"ApiKey":3,"MinVersion":0,"MaxVersion":12}]}}'),
    ('{"api_name":"Metadata","api_version":12,"kind":"request","header":{"correlation_id":%d,'
     '"client_id":"s_client"},"body":{"Topics":null}}',
     '{"api_name":"Metadata","api_version":12,"kind":"response","header":{"correlation_id":%d},'
     '"body":{"Brokers":[{"NodeId":1,"Host":"127.0.0.1","Port":9093}],"ClusterId":"lab"}}'),
]


def encode(js):
    return subprocess.run([KWIRE, "encode", "-", "--format", "raw"], input=js.encode(),
                          capture_output=True, check=True, timeout=30).stdout


class Sc:
    def __init__(self, name, about, kind, tls="1.3", ciphers=None, suites13=None, etm=True,
                 run=None, client_keylog=True, auth=False, dsb=False, timeout=60, early=False):
        self.name, self.about, self.kind, self.tls = name, about, kind, tls
        self.early = early
        self.ciphers, self.suites13, self.etm, self.run = ciphers, suites13, etm, run
        self.client_keylog, self.auth, self.dsb, self.timeout = client_keylog, auth, dsb, timeout


def py(*a):
    return [str(PY), str(HERE / "tls_clients.py"), *a]


S = [
    Sc("tls13_kp_aes256gcm", "kafka-python (ssl keylog_filename), TLS 1.3 "
       "TLS_AES_256_GCM_SHA384: gzip producer, consumer group with a commit", "client",
       suites13="TLS_AES_256_GCM_SHA384", run=py("kp_group"), dsb=True),
    Sc("tls13_aio_chacha20", "aiokafka (ssl keylog_filename), TLS 1.3 "
       "TLS_CHACHA20_POLY1305_SHA256: lz4 producer, consumer group with a commit", "client",
       suites13="TLS_CHACHA20_POLY1305_SHA256", run=py("aio_group")),
    Sc("tls13_kjs_aes128gcm", "kafkajs (node --tls-keylog), TLS 1.3 TLS_AES_128_GCM_SHA256: "
       "gzip producer with headers, consumer group", "client",
       suites13="TLS_AES_128_GCM_SHA256", run="kjs"),
    Sc("tls12_ck_aes128gcm", "confluent-kafka (terminator's key log), TLS 1.2 "
       "ECDHE-RSA-AES128-GCM-SHA256: zstd producer, consumer", "client", tls="1.2",
       ciphers="ECDHE-RSA-AES128-GCM-SHA256", run=py("ck_produce"), client_keylog=False),
    Sc("tls12_ck_sasl_ssl", "confluent-kafka SASL_SSL SCRAM-SHA-256 against --authentication, "
       "TLS 1.2 ECDHE-RSA-AES256-GCM-SHA384", "client", tls="1.2",
       ciphers="ECDHE-RSA-AES256-GCM-SHA384", run=py("ck_sasl_scram"), client_keylog=False,
       auth=True, timeout=30),
    Sc("tls12_kp_chacha20", "kafka-python, TLS 1.2 ECDHE-RSA-CHACHA20-POLY1305", "client",
       tls="1.2", ciphers="ECDHE-RSA-CHACHA20-POLY1305", run=py("kp_group")),
    Sc("tls12_ck_cbc_sha1_etm", "confluent-kafka, TLS 1.2 ECDHE-RSA-AES128-SHA (AES-CBC, "
       "HMAC-SHA1, encrypt-then-MAC as OpenSSL negotiates by default; kafka-python's default "
       "context offers no SHA-1 suite)", "client", tls="1.2", ciphers="ECDHE-RSA-AES128-SHA",
       run=py("ck_produce"), client_keylog=False),
    Sc("tls12_aio_cbc_sha384_mte", "aiokafka, TLS 1.2 ECDHE-RSA-AES256-SHA384 (AES-CBC, "
       "HMAC-SHA384) with encrypt-then-MAC refused by the server: MAC-then-encrypt", "client",
       tls="1.2", ciphers="ECDHE-RSA-AES256-SHA384", etm=False, run=py("aio_group")),
    Sc("tls12_ck_cbc_sha256_rsa", "confluent-kafka, TLS 1.2 AES128-SHA256 (RSA key "
       "exchange, AES-CBC, HMAC-SHA256, encrypt-then-MAC)", "client", tls="1.2",
       ciphers="AES128-SHA256", run=py("ck_produce"), client_keylog=False),
    Sc("tls13_openssl_hrr_keyupdate_resume", "openssl s_client/s_server, TLS 1.3: a "
       "HelloRetryRequest (client key share X25519, server only P-256), KeyUpdate from the "
       "client (k, then K: the server updates too) between Kafka frames; then a second "
       "connection resumed with the first one's ticket (-sess_out/-sess_in)", "openssl"),
    Sc("tls12_openssl_resume_cbc", "openssl s_client/s_server, TLS 1.2 "
       "ECDHE-RSA-AES128-SHA256 with encrypt-then-MAC off (MAC-then-encrypt), a full "
       "handshake then an abbreviated one resuming its session", "openssl", tls="1.2",
       ciphers="ECDHE-RSA-AES128-SHA256", etm=False),
    Sc("tls13_openssl_early_data", "openssl s_client/s_server -early_data, TLS 1.3 "
       "TLS_AES_256_GCM_SHA384: a full handshake with a ticket, then a second connection "
       "resuming it whose ApiVersions request is 0-RTT early data (-sess_in -early_data), "
       "logged as CLIENT_EARLY_TRAFFIC_SECRET", "openssl", early=True),
]


def certs():
    WORK.mkdir(parents=True, exist_ok=True)
    cert, key = WORK / "cert.pem", WORK / "key.pem"
    if not cert.exists():
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "30",
                        "-subj", "/CN=kafka.lab.local", "-keyout", str(key), "-out", str(cert)],
                       check=True, capture_output=True, timeout=60)
    return cert, key


def openssl_conf(suites):
    """An OpenSSL config that limits TLS 1.3 suites (Python's ssl cannot)."""
    p = WORK / f"openssl-{suites}.cnf"
    p.write_text("openssl_conf = conf\n[conf]\nssl_conf = ssl\n[ssl]\nsystem_default = sd\n"
                 f"[sd]\nCiphersuites = {suites}\n")
    return p


def start_capture(name):
    raw = WORK / f"{name}.pcapng"
    if raw.exists():
        raw.unlink()
    clog = LAB / "logs" / f"tls_{name}.capture.log"
    cap = Proc(["dumpcap", "-q", "-B", "64", "-i", "lo", "-f",
                f"tcp port {TLS_PORT} and host 127.0.0.1", "-w", str(raw)], clog)
    end = time.time() + 15
    while time.time() < end:
        t = clog.read_text(errors="replace")
        if "Capturing on" in t or "File:" in t:
            break
        if cap.p.poll() is not None:
            raise RuntimeError(f"capture tool ended: {t}")
        time.sleep(0.1)
    time.sleep(0.5)
    return cap, raw


def run_clients(sc, tansu, cert, key, keylog):
    logs = LAB / "logs"
    url = f"tcp://127.0.0.1:{KAFKA_PORT}"
    adv = f"tcp://127.0.0.1:{TLS_PORT}"
    argv = [tansu, "broker", "--listener-url", url, "--advertised-listener-url", adv,
            "--storage-engine", "memory://tansu/"]
    if sc.auth:
        argv.append("--authentication")
    broker = Proc(argv, logs / f"tls_{sc.name}.broker.log")
    proxy_keys = WORK / f"{sc.name}.proxy.keys"
    if proxy_keys.exists():
        proxy_keys.unlink()
    penv = dict(os.environ)
    if sc.suites13:
        penv["OPENSSL_CONF"] = str(openssl_conf(sc.suites13))
    pargv = [sys.executable, str(HERE / "tls_proxy.py"), "--listen", str(TLS_PORT),
             "--upstream", str(KAFKA_PORT), "--cert", str(cert), "--key", str(key),
             "--keylog", str(proxy_keys), "--tls", sc.tls]
    if sc.ciphers:
        pargv += ["--ciphers", sc.ciphers]
    if not sc.etm:
        pargv.append("--no-etm")
    proxy = None
    try:
        if not wait_port("127.0.0.1", KAFKA_PORT, limit=15):
            raise RuntimeError("broker did not come up")
        proxy = Proc(pargv, logs / f"tls_{sc.name}.proxy.log", env=penv)
        if not wait_port("127.0.0.1", TLS_PORT, limit=15):
            raise RuntimeError("proxy did not come up")
        cap, raw = start_capture(sc.name)
        try:
            env = dict(os.environ, KWIRE_LAB_HOST="127.0.0.1", KWIRE_LAB_PORT=str(TLS_PORT),
                       KWIRE_LAB_DIR=str(LAB), NODE_PATH=str(NODE_DIR / "node_modules"),
                       PYTHONPATH=str(HERE))
            if sc.client_keylog:
                env["KWIRE_LAB_KEYLOG"] = str(keylog)
            if sc.run == "kjs":
                cmd = ["node", f"--tls-keylog={keylog}", str(HERE / "kjs.js"), "group"]
                env["KWIRE_LAB_TLS"] = "1"
            else:
                cmd = sc.run
            with open(logs / f"tls_{sc.name}.client.log", "wb") as lf:
                c = subprocess.Popen(cmd, stdout=lf, stderr=subprocess.STDOUT, env=env,
                                     start_new_session=True)
                try:
                    rc = c.wait(sc.timeout)
                except subprocess.TimeoutExpired:
                    os.killpg(c.pid, signal.SIGKILL)
                    c.wait(5)
                    rc = "timeout"
            time.sleep(1.0)
        finally:
            cap.stop()
    finally:
        if proxy:
            proxy.stop(signal.SIGTERM)
        broker.stop(signal.SIGTERM)
    if not sc.client_keylog:
        shutil.copyfile(proxy_keys, keylog)
    return raw, rc


def feed(proc, steps):
    """Writes each (delay, bytes) to proc's stdin in its own write, then closes it."""
    for delay, b in steps:
        time.sleep(delay)
        proc.stdin.write(b)
        proc.stdin.flush()


def run_openssl(sc, cert, key, keylog):
    logs = LAB / "logs"
    sess = WORK / f"{sc.name}.sess"
    for p in (sess, keylog):
        if p.exists():
            p.unlink()
    ver = "-tls1_3" if sc.tls == "1.3" else "-tls1_2"
    srv = ["openssl", "s_server", "-accept", f"127.0.0.1:{TLS_PORT}", "-cert", str(cert),
           "-key", str(key), ver, "-naccept", "3"]  # the port probe is the first
    cli_extra = []
    if sc.tls == "1.3" and not sc.early:
        srv += ["-groups", "P-256"]
        cli_extra = ["-groups", "X25519:P-256"]
    if sc.early:
        # a HelloRetryRequest would refuse the early data: no group mismatch here
        srv += ["-early_data"]
    if sc.ciphers:
        srv += ["-cipher", sc.ciphers]
    if not sc.etm:
        srv += ["-no_etm"]
    cap, raw = None, None
    slog = open(logs / f"tls_{sc.name}.s_server.log", "wb")
    server = subprocess.Popen(srv, stdin=subprocess.PIPE, stdout=slog, stderr=subprocess.STDOUT,
                              start_new_session=True)
    try:
        if not wait_port("127.0.0.1", TLS_PORT, limit=15):
            raise RuntimeError("s_server did not come up")
        cap, raw = start_capture(sc.name)
        corr = 1
        for conn in range(2):
            cli = ["openssl", "s_client", "-connect", f"127.0.0.1:{TLS_PORT}", ver,
                   "-servername", "kafka.lab.local", "-keylogfile", str(keylog), *cli_extra]
            cli += ["-sess_out", str(sess)] if conn == 0 else ["-sess_in", str(sess)]
            early_file = None
            if sc.early and conn == 1:
                # the first request goes as 0-RTT early data, before the handshake ends
                early_file = WORK / f"{sc.name}.early"
                early_file.write_bytes(encode(FRAMES[0][0] % corr))
                cli += ["-early_data", str(early_file)]
            clog = open(logs / f"tls_{sc.name}.s_client{conn}.log", "wb")
            client = subprocess.Popen(cli, stdin=subprocess.PIPE, stdout=clog,
                                      stderr=subprocess.STDOUT, start_new_session=True)
            steps_c, steps_s = [], []
            for i, (req, resp) in enumerate(FRAMES):
                steps_c.append((0.6, b"" if early_file and i == 0 else encode(req % corr)))
                if sc.tls == "1.3" and conn == 0 and not sc.early:
                    # K: the client updates its keys and asks the server to update too
                    # (before its response); k: the client alone
                    steps_s.append((0.0, b""))
                    steps_c.append((0.6, b"K\n" if i == 0 else b"k\n"))
                steps_s.append((0.3, encode(resp % corr)))
                corr += 1
            # client and server steps interleave: request, (key update,) response ...
            t0 = time.time()
            for (dc, bc), (ds, bs) in zip(steps_c, steps_s):
                feed(client, [(dc, bc)])
                if bs:
                    feed(server, [(ds, bs)])
            time.sleep(0.8)
            client.stdin.close()
            try:
                client.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(client.pid, signal.SIGKILL)
                client.wait(5)
            clog.close()
            time.sleep(0.5)
            print(f"  connection {conn + 1}: {time.time() - t0:.1f}s", flush=True)
        time.sleep(0.5)
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait(5)
        slog.close()
        if cap:
            cap.stop()
    return raw, 0


def record(sc, tansu):
    (LAB / "logs").mkdir(parents=True, exist_ok=True)
    cert, key = certs()
    if not wait_port("127.0.0.1", TLS_PORT, up=False, limit=10):
        sys.exit(f"port {TLS_PORT} is busy")
    OUT.mkdir(exist_ok=True)
    keylog = WORK / f"{sc.name}.keys"
    if keylog.exists():
        keylog.unlink()
    if sc.kind == "openssl":
        raw, rc = run_openssl(sc, cert, key, keylog)
    else:
        raw, rc = run_clients(sc, tansu, cert, key, keylog)
    shutil.copyfile(raw, OUT / f"{sc.name}.pcapng")
    shutil.copyfile(keylog, OUT / f"{sc.name}.keys")
    outs = [OUT / f"{sc.name}.pcapng", OUT / f"{sc.name}.keys"]
    if sc.dsb:
        # the same capture with its keys inside (a pcapng Decryption Secrets Block)
        dst = OUT / f"{sc.name}.dsb.pcapng"
        subprocess.run(["editcap", "--inject-secrets", f"tls,{keylog}", str(raw), str(dst)],
                       check=True, timeout=60)
        outs.append(dst)
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
            print(f"{sc.name:36} {sc.about}")
        return
    unknown = set(a.names) - {s.name for s in S}
    if unknown:
        sys.exit(f"unknown scenarios: {sorted(unknown)}")
    tansu = tansu_bin()
    for sc in S:
        if not a.names or sc.name in a.names:
            record(sc, tansu)


if __name__ == "__main__":
    main()
