"""Decodes Kafka frames with kio (PyPI `kio`, Aiven's Python Kafka protocol library) for
kwire's differential test `tests/diff_kio.rs`.

Reads JSON lines `{"id", "kind": "request"|"response", "api_key", "api_version", "hex"}`
(the whole frame, size prefix included) on stdin; writes one JSON line per input:
`{"id", "status": "ok", "consumed", "header", "body"}`, or `{"id", "status":
"unsupported"|"error", "why"}`. Values: dataclasses as objects by kio's field names,
tuples as lists, bytes as lowercase hex, timedeltas and datetimes as milliseconds, error
codes as numbers. A `records` field is `{"batches": [...]}` when kio reads its batches
(v2, uncompressed), else `{"raw": hex, "why": ...}`.
"""

import dataclasses
import datetime
import enum
import json
import sys
import uuid

from kio._version import __version__ as KIO_VERSION
from kio.index import UnknownAPIKey, UnknownEntity, load_request_schema, load_response_schema
from kio.records.readers import read_batch
from kio.serial import entity_reader

EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def records(b):
    data = bytes(b)
    batches = []
    off = 0
    partial = False
    while off < len(data):
        rest = len(data) - off
        if rest < 17:
            partial = True
            break
        magic = data[off + 16]
        if magic != 2:
            return {"raw": data.hex(), "why": f"magic {magic} (kio reads only v2 batches)"}
        length = int.from_bytes(data[off + 8 : off + 12], "big", signed=True)
        if rest < 61 or 12 + length > rest:
            partial = True
            break
        attributes = int.from_bytes(data[off + 21 : off + 23], "big")
        if attributes & 7:
            return {"raw": data.hex(), "why": "compressed batch (kio does not decompress)"}
        batch, size = read_batch(data, off)
        batches.append(
            {
                "base_offset": batch.base_offset,
                "attributes": batch.attributes,
                "producer_id": batch.producer_id,
                "records": [
                    {
                        "key": None if r.key is None else r.key.hex(),
                        "value": None if r.value is None else r.value.hex(),
                        "headers": len(r.headers),
                    }
                    for r in batch.records
                ],
            }
        )
        off += size
    return {"batches": batches, "partial_tail": partial}


def plain(v):
    if v is None or isinstance(v, bool):
        return v
    if isinstance(v, enum.Enum):
        return plain(v.value)
    if isinstance(v, int):
        return int(v)
    if isinstance(v, float):
        return v
    if isinstance(v, str):
        return str(v)
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v).hex()
    if isinstance(v, uuid.UUID):
        return str(v)
    if isinstance(v, datetime.timedelta):
        return round(v / datetime.timedelta(milliseconds=1))
    if isinstance(v, datetime.datetime):
        return round((v - EPOCH) / datetime.timedelta(milliseconds=1))
    if isinstance(v, (tuple, list, frozenset, set)):
        return [plain(x) for x in v]
    if dataclasses.is_dataclass(v):
        return {f.name: field_value(f, getattr(v, f.name)) for f in dataclasses.fields(v)}
    return repr(v)


def field_value(f, v):
    # kio's `Records` phantom type matches any bytes: go by the field's Kafka type.
    if f.metadata.get("kafka_type") == "records" and v is not None:
        return records(v)
    return plain(v)


def decode(req):
    key, ver, kind = req["api_key"], req["api_version"], req["kind"]
    try:
        load = load_request_schema if kind == "request" else load_response_schema
        entity = load(key, ver)
    except (UnknownAPIKey, UnknownEntity) as e:
        return {"status": "unsupported", "why": f"kio {KIO_VERSION} has no {kind} for key {key} v{ver}"}
    frame = bytes.fromhex(req["hex"])
    try:
        header_type = entity.__header_schema__
        header, hsize = entity_reader(header_type)(frame, 4)
        body, bsize = entity_reader(entity)(frame, 4 + hsize)
    except Exception as e:  # noqa: BLE001 - any failure of the oracle is reported
        return {"status": "error", "why": f"{type(e).__name__}: {e}"}
    return {
        "status": "ok",
        "consumed": 4 + hsize + bsize,
        "header": plain(header),
        "body": plain(body),
    }


def main():
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        try:
            out = decode(req)
        except Exception as e:  # noqa: BLE001
            out = {"status": "error", "why": f"{type(e).__name__}: {e}"}
        out["id"] = req["id"]
        sys.stdout.write(json.dumps(out) + "\n")


if __name__ == "__main__":
    main()
