#!/usr/bin/env python3
"""The Python clients of the capture lab (run by record.py in the lab venv).

    clients.py SCENARIO [ARGS]

Every client talks to $KWIRE_LAB_HOST:$KWIRE_LAB_PORT (loopback) with short timeouts;
failures are printed and the scenario goes on: the capture shows what happened.
"""

import asyncio
import sys
import time
import traceback

HOST = __import__("os").environ.get("KWIRE_LAB_HOST", "127.0.0.1")
PORT = int(__import__("os").environ.get("KWIRE_LAB_PORT", "9092"))


def bootstrap(host=None):
    h = host or HOST
    return f"[{h}]:{PORT}" if ":" in h else f"{h}:{PORT}"


def step(name, fn, *a, **kw):
    """Runs one step, printing its outcome; an exception does not end the scenario."""
    t = time.time()
    try:
        r = fn(*a, **kw)
        print(f"ok   {name} ({time.time() - t:.2f}s): {r!r}"[:400], flush=True)
        return r
    except Exception as e:  # noqa: BLE001 - the capture records whatever happens
        print(f"FAIL {name} ({time.time() - t:.2f}s): {type(e).__name__}: {e}"[:400],
              flush=True)
        return None


# ---------------------------------------------------------------- confluent-kafka

def ck_conf(**kw):
    c = {"bootstrap.servers": bootstrap(kw.pop("host", None)),
         "socket.timeout.ms": 10000, "client.id": "kwire-lab"}
    c.update(kw)
    return c


def ck_records():
    """Keys, a null key, a tombstone, headers (one empty, one null), timestamps."""
    base = 1_700_000_000_000
    out = []
    for i in range(6):
        out.append(dict(key=f"key-{i}".encode(), value=f"value {i} ".encode() * (i + 1),
                        headers=[("trace", f"t{i}".encode()), ("empty", b""), ("nil", None)],
                        timestamp=base + i))
    out.append(dict(key=None, value=b"a record without a key", headers=None,
                    timestamp=base + 10))
    out.append(dict(key=b"key-1", value=None, headers=None, timestamp=base + 11))
    return out


def ck_fetch_all(topic, host=None, n_expected=1, **kw):
    from confluent_kafka import Consumer, TopicPartition, OFFSET_BEGINNING
    c = Consumer(ck_conf(host=host, **{"group.id": "kwire-lab-reader",
                                       "enable.auto.commit": False,
                                       "fetch.wait.max.ms": 100, **kw}))
    md = c.list_topics(topic, timeout=10)
    parts = sorted(md.topics[topic].partitions)
    c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in parts])
    got = []
    end = time.time() + 10
    while time.time() < end and len(got) < n_expected:
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            print("consumer:", m.error())
            continue
        got.append((m.partition(), m.offset(), m.key(), (m.value() or b"")[:20]))
    c.close()
    return got


def produce(codec, *rest):
    from confluent_kafka import Producer
    host = rest[1] if len(rest) >= 2 and rest[0] == "--host" else None
    topic = f"lab-{codec}"
    p = Producer(ck_conf(host=host, **{"compression.type": codec, "linger.ms": 100,
                                       "acks": "all", "enable.idempotence": False}))
    # Two batches: the first flushed alone, the rest together.
    recs = ck_records()
    p.produce(topic, partition=0, **recs[0])
    step("flush 1", p.flush, 10)
    for r in recs[1:]:
        p.produce(topic, partition=0, **r)
    step("flush 2", p.flush, 10)
    step("fetch", ck_fetch_all, topic, host, len(recs))


def idempotent():
    from confluent_kafka import Producer
    p = Producer(ck_conf(**{"enable.idempotence": True, "compression.type": "lz4",
                            "linger.ms": 50}))
    for i in range(4):
        p.produce("lab-idem", key=f"k{i}".encode(), value=f"idempotent {i}".encode(),
                  partition=0)
    step("flush", p.flush, 10)
    for i in range(4, 8):
        p.produce("lab-idem", key=f"k{i}".encode(), value=f"idempotent {i}".encode(),
                  partition=0)
    step("flush", p.flush, 10)


def transactions():
    from confluent_kafka import Producer, Consumer, TopicPartition
    src = Producer(ck_conf())
    for i in range(3):
        src.produce("lab-txn-in", key=b"in", value=f"input {i}".encode(), partition=0)
    step("seed", src.flush, 10)
    c = Consumer(ck_conf(**{"group.id": "kwire-lab-txn", "enable.auto.commit": False,
                            "session.timeout.ms": 6000, "auto.offset.reset": "earliest"}))
    c.assign([TopicPartition("lab-txn-in", 0, 0)])
    msgs = []
    end = time.time() + 8
    while time.time() < end and len(msgs) < 3:
        m = c.poll(0.5)
        if m is not None and not m.error():
            msgs.append(m)
    print("consumed", len(msgs))
    p = Producer(ck_conf(**{"transactional.id": "kwire-lab-txn-1",
                            "transaction.timeout.ms": 60000, "compression.type": "gzip"}))
    step("init_transactions", p.init_transactions, 15)
    step("begin 1", p.begin_transaction)
    for i in range(3):
        p.produce("lab-txn-out", key=f"c{i}".encode(), value=f"committed {i}".encode(),
                  partition=0)
    step("flush 1", p.flush, 10)
    step("send_offsets", p.send_offsets_to_transaction,
         [TopicPartition("lab-txn-in", 0, 3)], c.consumer_group_metadata(), 15)
    step("commit", p.commit_transaction, 15)
    step("begin 2", p.begin_transaction)
    for i in range(2):
        p.produce("lab-txn-out", key=f"a{i}".encode(), value=f"aborted {i}".encode(),
                  partition=0)
    step("flush 2", p.flush, 10)
    step("abort", p.abort_transaction, 15)
    c.close()
    step("read_committed fetch", ck_fetch_all, "lab-txn-out", None, 3,
         **{"isolation.level": "read_committed"})


def group():
    from confluent_kafka import Producer, Consumer
    p = Producer(ck_conf(**{"linger.ms": 20}))
    for i in range(10):
        p.produce("lab-group", key=f"k{i}".encode(), value=f"message {i}".encode(),
                  partition=0)
    step("seed", p.flush, 10)
    c = Consumer(ck_conf(**{"group.id": "kwire-lab-group", "session.timeout.ms": 6000,
                            "heartbeat.interval.ms": 1000, "auto.offset.reset": "earliest",
                            "enable.auto.commit": False, "fetch.wait.max.ms": 200}))
    c.subscribe(["lab-group"])
    n = 0
    end = time.time() + 25
    while time.time() < end and n < 10:
        m = c.poll(0.5)
        if m is not None and not m.error():
            n += 1
    print("consumed", n)
    step("commit", c.commit, asynchronous=False)
    t = time.time() + 2.5  # a few heartbeats
    while time.time() < t:
        c.poll(0.2)
    step("close", c.close)


def kip848():
    from confluent_kafka import Producer, Consumer
    p = Producer(ck_conf())
    for i in range(3):
        p.produce("lab-kip848", value=f"m{i}".encode(), partition=0)
    step("seed", p.flush, 10)
    c = Consumer(ck_conf(**{"group.id": "kwire-lab-kip848", "group.protocol": "consumer",
                            "auto.offset.reset": "earliest", "enable.auto.commit": False}))
    c.subscribe(["lab-kip848"])
    n = 0
    end = time.time() + 5
    while time.time() < end and n < 3:
        m = c.poll(0.5)
        if m is not None:
            if m.error():
                print("consumer:", m.error())
            else:
                n += 1
    print("consumed", n)
    if n:
        step("commit", c.commit, asynchronous=False)
    step("close", c.close)


def admin():
    from confluent_kafka import (Consumer, Producer, TopicPartition, ConsumerGroupTopicPartitions)
    from confluent_kafka.admin import (AdminClient, NewTopic, NewPartitions, ConfigResource,
                                       ConfigEntry, AlterConfigOpType, AclBinding,
                                       AclBindingFilter, ResourceType, ResourcePatternType,
                                       AclOperation, AclPermissionType)
    a = AdminClient(ck_conf())

    def wait(fs):
        return {k: (f.result(15) if hasattr(f, "result") else f) for k, f in fs.items()}

    step("create_topics", lambda: wait(a.create_topics(
        [NewTopic("lab-admin", 3, 1, config={"retention.ms": "3600000",
                                             "cleanup.policy": "compact"}),
         NewTopic("lab-admin-2", 1, 1)], operation_timeout=10, request_timeout=15)))
    step("describe_configs", lambda: {str(k): len(v) for k, v in wait(a.describe_configs(
        [ConfigResource(ResourceType.TOPIC, "lab-admin"),
         ConfigResource(ResourceType.BROKER, "111")], request_timeout=15)).items()})
    step("incremental_alter_configs", lambda: wait(a.incremental_alter_configs(
        [ConfigResource(ResourceType.TOPIC, "lab-admin", incremental_configs=[
            ConfigEntry("retention.ms", "7200000",
                        incremental_operation=AlterConfigOpType.SET)])],
        request_timeout=15)))
    step("create_partitions", lambda: wait(a.create_partitions(
        [NewPartitions("lab-admin-2", 2)], request_timeout=15)))
    step("describe_cluster", lambda: a.describe_cluster(request_timeout=15).result(15))
    step("describe_topics", lambda: wait(a.describe_topics(
        __import__("confluent_kafka").TopicCollection(["lab-admin"]), request_timeout=15)))
    # A group to list, describe and delete.
    p = Producer(ck_conf())
    p.produce("lab-admin", value=b"x", partition=0)
    p.flush(10)
    c = Consumer(ck_conf(**{"group.id": "kwire-lab-admin-group", "enable.auto.commit": False}))
    step("commit offsets", c.commit, offsets=[TopicPartition("lab-admin", 0, 1)],
         asynchronous=False)
    c.close()
    step("list_consumer_groups", lambda: [g.group_id for g in
                                          a.list_consumer_groups(request_timeout=15)
                                          .result(15).valid])
    step("describe_consumer_groups", lambda: wait(a.describe_consumer_groups(
        ["kwire-lab-admin-group"], request_timeout=15)))
    step("list_consumer_group_offsets", lambda: wait(a.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions("kwire-lab-admin-group")], request_timeout=15)))
    step("delete_records", lambda: wait(a.delete_records(
        [TopicPartition("lab-admin", 0, 1)], request_timeout=15)))
    step("delete_consumer_groups", lambda: wait(a.delete_consumer_groups(
        ["kwire-lab-admin-group"], request_timeout=15)))
    step("delete_topics", lambda: wait(a.delete_topics(
        ["lab-admin", "lab-admin-2"], operation_timeout=10, request_timeout=15)))
    acl = AclBinding(ResourceType.TOPIC, "lab-admin", ResourcePatternType.LITERAL,
                     "User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW)
    flt = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                           AclOperation.ANY, AclPermissionType.ANY)
    step("describe_acls", lambda: a.describe_acls(flt, request_timeout=15).result(15))
    step("delete_acls", lambda: wait(a.delete_acls([flt], request_timeout=15)))
    # Last: librdkafka 2.16 aborts (an assertion) on tansu's CreateAcls answer, whose
    # results array is null.
    step("create_acls", lambda: wait(a.create_acls([acl], request_timeout=15)))


def sasl(mech):
    from confluent_kafka import Producer
    p = Producer(ck_conf(**{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mech,
                            "sasl.username": "alice", "sasl.password": "alice-secret",
                            "message.timeout.ms": 8000, "reconnect.backoff.ms": 1000,
                            "reconnect.backoff.max.ms": 2000}))
    p.produce("lab-sasl", value=b"hello")
    print("undelivered after flush:", p.flush(3))


# ---------------------------------------------------------------- kafka-python

def kp_conf(**kw):
    c = dict(bootstrap_servers=bootstrap(), request_timeout_ms=10000,
             client_id="kwire-lab-kp")
    c.update(kw)
    return c


def old():
    from kafka import KafkaProducer, KafkaConsumer, TopicPartition
    for ver, magic in (((0, 9), 0), ((0, 10), 1)):
        for codec in (None, "gzip"):
            topic = f"lab-magic{magic}-{codec or 'none'}"

            def go():
                # One try: tansu closes the connection on Produce v0-v2.
                p = KafkaProducer(**kp_conf(api_version=ver, compression_type=codec,
                                            linger_ms=50, max_block_ms=5000, retries=0,
                                            request_timeout_ms=3000))
                fs = [p.send(topic, key=f"k{i}".encode(), value=f"magic {magic} {i}".encode(),
                             partition=0) for i in range(3)]
                fs.append(p.send(topic, key=b"nullvalue", value=None, partition=0))
                p.flush(3)
                r = [f.get(3).offset for f in fs]
                return r
            step(f"produce {topic} api_version={ver}", go)

            def fetch():
                c = KafkaConsumer(**kp_conf(api_version=ver, consumer_timeout_ms=2000,
                                            fetch_max_wait_ms=100, request_timeout_ms=3000))
                c.assign([TopicPartition(topic, 0)])
                c.seek_to_beginning()
                r = [(m.offset, m.key, m.value) for m in c]
                c.close()
                return r
            step(f"fetch {topic}", fetch)
    old_reader()


def old_reader():
    """A modern producer (magic 2), then a consumer that speaks api_version (0,10,1):
    ListOffsets v1 and Fetch v3, whose answer carries the magic-2 batch as it is."""
    from kafka import KafkaProducer, KafkaConsumer, TopicPartition

    def produce():
        p = KafkaProducer(**kp_conf(linger_ms=20, max_block_ms=5000))
        fs = [p.send("lab-modern", key=f"k{i}".encode(), value=f"modern {i}".encode(),
                     partition=0) for i in range(3)]
        p.flush(5)
        r = [f.get(5).offset for f in fs]
        p.close(5)
        return r
    step("produce lab-modern (magic 2)", produce)

    def fetch():
        c = KafkaConsumer(**kp_conf(api_version=(0, 10, 1), consumer_timeout_ms=2000,
                                    fetch_max_wait_ms=100, request_timeout_ms=3000))
        c.assign([TopicPartition("lab-modern", 0)])
        c.seek_to_beginning()
        r = [(m.offset, m.key, m.value) for m in c]
        c.close()
        return r
    step("fetch lab-modern api_version=(0,10,1)", fetch)


def kp_codecs():
    from kafka import KafkaProducer, KafkaConsumer
    for codec in (None, "gzip", "snappy", "lz4", "zstd"):
        def go():
            p = KafkaProducer(**kp_conf(compression_type=codec, linger_ms=50,
                                        max_block_ms=10000))
            fs = [p.send("lab-kp", key=f"{codec}-{i}".encode(),
                         value=f"kafka-python {codec} {i}".encode() * 3,
                         headers=[("codec", str(codec).encode())], partition=0)
                  for i in range(3)]
            p.flush(10)
            r = [f.get(10).offset for f in fs]
            p.close(5)
            return r
        step(f"produce {codec}", go)

    def consume():
        c = KafkaConsumer("lab-kp", **kp_conf(group_id="kwire-lab-kp",
                                              auto_offset_reset="earliest",
                                              session_timeout_ms=6000,
                                              heartbeat_interval_ms=1000,
                                              consumer_timeout_ms=8000,
                                              fetch_max_wait_ms=100))
        n = 0
        for _ in c:
            n += 1
            if n >= 15:
                break
        c.commit()
        c.close()
        return n
    step("consume group", consume)


def kp_admin():
    from kafka import KafkaAdminClient, KafkaProducer, KafkaConsumer
    from kafka.admin import (NewTopic, ConfigResource, ConfigResourceType, ACL, ACLFilter,
                             ACLOperation, ACLPermissionType, ResourcePattern,
                             ResourcePatternFilter, ResourceType, ACLResourcePatternType)
    a = KafkaAdminClient(**kp_conf())
    step("describe_cluster", a.describe_cluster)
    step("create_topics", a.create_topics,
         [NewTopic("lab-kpa", 2, 1, topic_configs={"retention.ms": "3600000"})])
    step("describe_topics", a.describe_topics, ["lab-kpa"])
    step("describe_configs", a.describe_configs,
         [ConfigResource(ConfigResourceType.TOPIC, "lab-kpa")])
    if hasattr(a, "alter_configs"):
        step("alter_configs", a.alter_configs,
             [ConfigResource(ConfigResourceType.TOPIC, "lab-kpa",
                             configs={"retention.ms": "7200000"})])
    p = KafkaProducer(**kp_conf())
    p.send("lab-kpa", b"x", partition=0).get(10)
    p.close(5)
    c = KafkaConsumer("lab-kpa", **kp_conf(group_id="kwire-lab-kpa",
                                           auto_offset_reset="earliest",
                                           session_timeout_ms=6000, consumer_timeout_ms=4000))
    for _ in c:
        break
    step("commit", c.commit)
    c.close()
    step("describe_topic_partitions", a.describe_topic_partitions, ["lab-kpa"])
    step("list_groups", a.list_groups)
    step("describe_groups", a.describe_groups, ["kwire-lab-kpa"])
    step("list_group_offsets", a.list_group_offsets, "kwire-lab-kpa")
    acl = ACL(principal="User:bob", host="*", operation=ACLOperation.WRITE,
              permission_type=ACLPermissionType.ALLOW,
              resource_pattern=ResourcePattern(ResourceType.TOPIC, "lab-kpa",
                                               ACLResourcePatternType.LITERAL))
    step("create_acls", a.create_acls, [acl])
    flt = ACLFilter(principal=None, host=None, operation=ACLOperation.ANY,
                    permission_type=ACLPermissionType.ANY,
                    resource_pattern=ResourcePatternFilter(ResourceType.ANY, None,
                                                           ACLResourcePatternType.ANY))
    step("describe_acls", a.describe_acls, flt)
    step("delete_acls", a.delete_acls, [flt])
    step("delete_groups", a.delete_groups, ["kwire-lab-kpa"])
    step("delete_topics", a.delete_topics, ["lab-kpa"])
    a.close()


def kp_txn():
    from kafka import KafkaProducer
    p = step("producer", KafkaProducer, **kp_conf(transactional_id="kwire-lab-kp-txn",
                                                  max_block_ms=10000))
    if p is None:
        return
    step("init", p.init_transactions)
    step("begin", p.begin_transaction)
    for i in range(2):
        p.send("lab-kp-txn", value=f"committed {i}".encode(), partition=0)
    step("commit", p.commit_transaction)
    step("begin", p.begin_transaction)
    p.send("lab-kp-txn", value=b"aborted", partition=0)
    step("abort", p.abort_transaction)
    p.close(5)


# ---------------------------------------------------------------- aiokafka

def aio_group():
    async def go():
        from aiokafka import AIOKafkaProducer, AIOKafkaConsumer
        p = AIOKafkaProducer(bootstrap_servers=bootstrap(), compression_type="lz4",
                             linger_ms=50, request_timeout_ms=10000)
        await asyncio.wait_for(p.start(), 15)
        for i in range(5):
            await p.send("lab-aio", key=f"k{i}".encode(), value=f"aiokafka {i}".encode(),
                         headers=[("n", str(i).encode())], partition=0)
        await asyncio.wait_for(p.flush(), 10)
        await p.stop()
        c = AIOKafkaConsumer("lab-aio", bootstrap_servers=bootstrap(),
                             group_id="kwire-lab-aio", auto_offset_reset="earliest",
                             enable_auto_commit=False, session_timeout_ms=6000,
                             heartbeat_interval_ms=1000, fetch_max_wait_ms=100,
                             request_timeout_ms=10000)
        await asyncio.wait_for(c.start(), 15)
        n = 0
        try:
            while n < 5:
                batch = await asyncio.wait_for(c.getmany(timeout_ms=1000), 10)
                n += sum(len(v) for v in batch.values())
            await asyncio.wait_for(c.commit(), 10)
            await asyncio.sleep(2)
        finally:
            await asyncio.wait_for(c.stop(), 10)
        return n
    step("aio group", lambda: asyncio.run(asyncio.wait_for(go(), 60)))


def aio_txn():
    async def go():
        from aiokafka import AIOKafkaProducer
        p = AIOKafkaProducer(bootstrap_servers=bootstrap(), transactional_id="kwire-lab-aio",
                             request_timeout_ms=10000)
        await asyncio.wait_for(p.start(), 20)
        try:
            async with p.transaction():
                await p.send("lab-aio-txn", b"committed", partition=0)
            try:
                async with p.transaction():
                    await p.send("lab-aio-txn", b"aborted", partition=0)
                    raise RuntimeError("abort")
            except RuntimeError:
                pass
        finally:
            await asyncio.wait_for(p.stop(), 10)
    step("aio txn", lambda: asyncio.run(asyncio.wait_for(go(), 40)))


# ---------------------------------------------------------------- mixed (large)

def big_produce():
    """Records of 60-200 kB (incompressible), several batches, then a group reads them."""
    import random
    from confluent_kafka import Producer, Consumer
    rnd = random.Random(7)
    p = Producer(ck_conf(**{"linger.ms": 20, "compression.type": "none",
                            "message.max.bytes": 4_000_000}))
    sizes = [60_000, 200_000, 120_000, 90_000, 150_000, 70_000, 250_000, 180_000, 100_000]
    for i, n in enumerate(sizes):
        p.produce("lab-big", key=f"big-{i}".encode(), value=rnd.randbytes(n), partition=0,
                  headers=[("size", str(n).encode())])
        p.flush(10)
    c = Consumer(ck_conf(**{"group.id": "kwire-lab-big", "session.timeout.ms": 6000,
                            "auto.offset.reset": "earliest", "enable.auto.commit": True,
                            "auto.commit.interval.ms": 1000, "fetch.wait.max.ms": 200}))
    c.subscribe(["lab-big"])
    n = 0
    end = time.time() + 25
    while time.time() < end and n < len(sizes):
        m = c.poll(0.5)
        if m is not None and not m.error():
            n += 1
    print("consumed", n)
    c.close()


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    fn = {"produce": produce, "idempotent": idempotent, "transactions": transactions,
          "group": group, "kip848": kip848, "admin": admin, "sasl": sasl, "old": old,
          "kp_codecs": kp_codecs, "kp_admin": kp_admin, "kp_txn": kp_txn,
          "aio_group": aio_group, "aio_txn": aio_txn, "big_produce": big_produce}[cmd]
    try:
        fn(*args)
    except Exception:  # noqa: BLE001
        traceback.print_exc()
        sys.exit(1)


if __name__ == "__main__":
    main()
