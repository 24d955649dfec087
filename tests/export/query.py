"""Runs SQL on DuckDB (and reads files with pyarrow) for tests/export_duckdb.rs.

Reads one JSON object from stdin: {"sql": [query, ...], "pyarrow": [parquet file, ...]}.
Prints one JSON object: {"sql": [result, ...], "pyarrow": [result, ...]}, where a result
is {"rows": [[value, ...], ...]} or {"error": "message"} (a query may be meant to fail).
Values that JSON has no type for (bytes, timestamps) are given as strings.
"""

import json
import sys

import duckdb
import pyarrow.parquet as pq


def plain(v):
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v).hex()
    return str(v)


def main():
    req = json.load(sys.stdin)
    con = duckdb.connect()
    out = {"sql": [], "pyarrow": []}
    for q in req.get("sql", []):
        try:
            rows = con.sql(q).fetchall()
            out["sql"].append({"rows": [plain(list(r)) for r in rows]})
        except Exception as e:  # the test decides whether an error was expected
            out["sql"].append({"error": str(e)})
    for f in req.get("pyarrow", []):
        try:
            t = pq.read_table(f)
            out["pyarrow"].append({"rows": [[t.num_rows, str(t.schema)]]})
        except Exception as e:
            out["pyarrow"].append({"error": str(e)})
    json.dump(out, sys.stdout)


main()
