#!/usr/bin/env python3
"""The Python TLS clients of the capture lab (run by record_tls.py in the lab venv).

    tls_clients.py kp_group|aio_group|ck_produce|ck_sasl_scram

Every client talks TLS to $KWIRE_LAB_HOST:$KWIRE_LAB_PORT (the lab's TLS terminator in
front of tansu) and does not check the lab's self-signed certificate. kafka-python and
aiokafka write the session secrets to $KWIRE_LAB_KEYLOG through their ssl context's
`keylog_filename`; librdkafka 2.16 has no key-log setting, so for confluent-kafka the
terminator's key log is the one kept (the secrets are the same).
"""

import asyncio
import os
import ssl
import sys
import time

from clients import step

HOST = os.environ.get("KWIRE_LAB_HOST", "127.0.0.1")
PORT = int(os.environ.get("KWIRE_LAB_PORT", "9093"))
BOOT = f"{HOST}:{PORT}"


def ctx():
    c = ssl.create_default_context()
    c.check_hostname = False
    c.verify_mode = ssl.CERT_NONE
    if os.environ.get("KWIRE_LAB_KEYLOG"):
        c.keylog_filename = os.environ["KWIRE_LAB_KEYLOG"]
    return c


def kp_group():
    from kafka import KafkaProducer, KafkaConsumer
    p = KafkaProducer(bootstrap_servers=BOOT, security_protocol="SSL", ssl_context=ctx(),
                      compression_type="gzip", request_timeout_ms=10000,
                      client_id="kwire-lab-kp-tls")
    for i in range(4):
        step(f"send {i}", lambda i=i: p.send("lab-tls-kp", key=f"k{i}".encode(),
                                             value=f"kafka-python over TLS {i}".encode() * 4,
                                             partition=0).get(10))
    step("flush", p.flush, 10)
    p.close(5)
    c = KafkaConsumer("lab-tls-kp", bootstrap_servers=BOOT, security_protocol="SSL",
                      ssl_context=ctx(), group_id="kwire-lab-kp-tls",
                      auto_offset_reset="earliest", enable_auto_commit=False,
                      session_timeout_ms=6000, heartbeat_interval_ms=1000,
                      fetch_max_wait_ms=200, consumer_timeout_ms=8000,
                      client_id="kwire-lab-kp-tls")
    n = 0
    for _ in c:
        n += 1
        if n >= 4:
            break
    print("consumed", n, flush=True)
    step("commit", c.commit)
    c.close()


def aio_group():
    async def go():
        from aiokafka import AIOKafkaProducer, AIOKafkaConsumer
        p = AIOKafkaProducer(bootstrap_servers=BOOT, security_protocol="SSL",
                             ssl_context=ctx(), compression_type="lz4", linger_ms=50,
                             request_timeout_ms=10000)
        await asyncio.wait_for(p.start(), 15)
        for i in range(4):
            await p.send("lab-tls-aio", key=f"k{i}".encode(),
                         value=f"aiokafka over TLS {i}".encode(), partition=0)
        await asyncio.wait_for(p.flush(), 10)
        await p.stop()
        c = AIOKafkaConsumer("lab-tls-aio", bootstrap_servers=BOOT, security_protocol="SSL",
                             ssl_context=ctx(), group_id="kwire-lab-aio-tls",
                             auto_offset_reset="earliest", enable_auto_commit=False,
                             session_timeout_ms=6000, heartbeat_interval_ms=1000,
                             fetch_max_wait_ms=100, request_timeout_ms=10000)
        await asyncio.wait_for(c.start(), 15)
        n = 0
        try:
            while n < 4:
                batch = await asyncio.wait_for(c.getmany(timeout_ms=1000), 10)
                n += sum(len(v) for v in batch.values())
            await asyncio.wait_for(c.commit(), 10)
        finally:
            await asyncio.wait_for(c.stop(), 10)
        return n
    step("aio group", lambda: asyncio.run(asyncio.wait_for(go(), 60)))


def ck_conf(**kw):
    c = {"bootstrap.servers": BOOT, "security.protocol": "SSL",
         "enable.ssl.certificate.verification": False, "socket.timeout.ms": 10000,
         "client.id": "kwire-lab-ck-tls"}
    c.update(kw)
    return c


def ck_produce():
    from confluent_kafka import Producer, Consumer, TopicPartition
    p = Producer(ck_conf(**{"compression.type": "zstd", "linger.ms": 20}))
    for i in range(5):
        p.produce("lab-tls-ck", key=f"k{i}".encode(), value=f"librdkafka over TLS {i}".encode() * 8,
                  partition=0)
    step("flush", p.flush, 10)
    c = Consumer(ck_conf(**{"group.id": "kwire-lab-ck-tls", "auto.offset.reset": "earliest",
                            "enable.auto.commit": False, "fetch.wait.max.ms": 200}))
    c.assign([TopicPartition("lab-tls-ck", 0, 0)])
    n, end = 0, time.time() + 15
    while time.time() < end and n < 5:
        m = c.poll(0.5)
        if m is not None and not m.error():
            n += 1
    print("consumed", n, flush=True)
    step("close", c.close)


def ck_sasl_scram():
    from confluent_kafka import Producer
    p = Producer(ck_conf(**{"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-256",
                            "sasl.username": "alice", "sasl.password": "alice-secret",
                            "message.timeout.ms": 6000, "reconnect.backoff.ms": 1000,
                            "reconnect.backoff.max.ms": 2000}))
    p.produce("lab-tls-sasl", value=b"hello")
    print("undelivered after flush:", p.flush(3), flush=True)


if __name__ == "__main__":
    {"kp_group": kp_group, "aio_group": aio_group, "ck_produce": ck_produce,
     "ck_sasl_scram": ck_sasl_scram}[sys.argv[1]]()
