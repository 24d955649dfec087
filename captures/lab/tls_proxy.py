#!/usr/bin/env python3
"""A TLS terminator for the capture lab: accepts TLS on 127.0.0.1:LISTEN, writes the
session secrets to a key log (Python's ssl `keylog_filename`, NSS format) and relays the
plaintext to the tansu broker on 127.0.0.1:UPSTREAM. tansu 0.6.0's own --cert/--key give
no TLS listener in the build the lab uses, and stunnel4/socat write no key log.

    tls_proxy.py --listen 9093 --upstream 9092 --cert C --key K --keylog FILE
                 [--tls 1.2|1.3] [--ciphers OPENSSL_LIST] [--no-etm]

TLS 1.3 suites cannot be chosen through Python's ssl: set OPENSSL_CONF to a file with
`Ciphersuites = ...` (record_tls.py does). Loopback only; stops on SIGTERM/SIGINT.
"""

import argparse
import signal
import socket
import ssl
import sys
import threading

# SSL_OP_NO_ENCRYPT_THEN_MAC (OpenSSL 3): MAC-then-encrypt for CBC suites.
OP_NO_ENCRYPT_THEN_MAC = 1 << 19


def pump(src, dst):
    try:
        while True:
            b = src.recv(65536)
            if not b:
                break
            dst.sendall(b)
    except OSError:
        pass
    finally:
        for s in (dst,):
            try:
                s.shutdown(socket.SHUT_WR)
            except OSError:
                pass


def serve(conn, ctx, upstream):
    try:
        tls = ctx.wrap_socket(conn, server_side=True)
    except (ssl.SSLError, OSError) as e:
        print(f"handshake failed: {e}", flush=True)
        conn.close()
        return
    print(f"accepted {tls.version()} {tls.cipher()[0]}", flush=True)
    up = socket.create_connection(("127.0.0.1", upstream), timeout=30)
    up.settimeout(None)
    t = threading.Thread(target=pump, args=(up, tls), daemon=True)
    t.start()
    pump(tls, up)
    t.join(30)
    for s in (tls, up):
        try:
            s.close()
        except OSError:
            pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--listen", type=int, required=True)
    ap.add_argument("--upstream", type=int, required=True)
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--keylog", required=True)
    ap.add_argument("--tls", choices=["1.2", "1.3"], default="1.3")
    ap.add_argument("--ciphers")
    ap.add_argument("--no-etm", action="store_true")
    a = ap.parse_args()
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(a.cert, a.key)
    v = ssl.TLSVersion.TLSv1_2 if a.tls == "1.2" else ssl.TLSVersion.TLSv1_3
    ctx.minimum_version = v
    ctx.maximum_version = v
    if a.ciphers:
        ctx.set_ciphers(a.ciphers)
    if a.no_etm:
        ctx.options |= OP_NO_ENCRYPT_THEN_MAC
    ctx.keylog_filename = a.keylog
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", a.listen))
    srv.listen(64)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(f"listening on 127.0.0.1:{a.listen} ({a.tls})", flush=True)
    try:
        while True:
            c, _ = srv.accept()
            threading.Thread(target=serve, args=(c, ctx, a.upstream), daemon=True).start()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
