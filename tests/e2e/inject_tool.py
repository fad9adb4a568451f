#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""The upstream's backend and the clients of the credential-injection test
(tests/e2e/l7-inject.sh) and benchmark (scripts/bench-inject.sh).

  inject_tool.py serve --listen ADDR:PORT --log FILE --ready FILE
      HTTP/1.1 behind the internet's nginx. Every request is answered 200
      with JSON of what arrived: host, method, path, every value of
      X-Api-Key and of Authorization (lists, in order), the body's length
      and SHA-256; the X-Api-Key values also in the response header
      X-Echo-Api-Key (joined by ", "). One JSON line per request in FILE.
      /ws with "Upgrade: websocket": 101 (RFC 6455 handshake) and each
      frame sent back, as text, unmasked.
  inject_tool.py req URL [--ca FILE] [-H 'NAME: VALUE']... [--wait FILE]
      python requests (a Session): GET URL and print "STATUS KEYS", KEYS
      the X-Api-Key values the backend saw, comma-joined ("-" for none).
      --wait FILE: after the first request, wait (up to 30 s) until FILE
      exists and send a second one on the same kept-alive connection,
      printing its line too ("error" when it fails); the first line
      goes out (flushed) before the wait, and FILE.sent is created then.
  inject_tool.py ws HOST PORT --sni NAME --ca FILE [--path /ws]
      A websocket over TLS: prints "101 ECHO" (the text frame sent back)
      or what went wrong.
  inject_tool.py raw HOST PORT --sni NAME --ca FILE [--alpn LIST|none]
        REQUEST
      TLS (no ALPN extension at all with "none"), then REQUEST (\\r\\n
      escapes) as it is; prints the response's status code, "closed"
      when the connection closed with none, "handshake" when TLS failed.
"""
import argparse
import base64
import codecs
import hashlib
import json
import os
import socket
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


# --- the backend ---------------------------------------------------------


class Backend(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    log_lock = threading.Lock()
    log_file = None

    def log_message(self, fmt, *args):  # no stderr noise
        pass

    def read_body(self):
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            body = b""
            while True:
                n = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if n == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return body
                body += self.rfile.read(n)
                self.rfile.readline()
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def seen(self, body):
        return {
            "host": self.headers.get("Host"),
            "method": self.command,
            "path": self.path,
            "x-api-key": self.headers.get_all("X-Api-Key") or [],
            "authorization": self.headers.get_all("Authorization") or [],
            "body_len": len(body),
            "body_sha256": hashlib.sha256(body).hexdigest(),
            "t": time.time(),
        }

    def record(self, seen):
        with self.log_lock:
            with open(self.log_file, "a", encoding="utf-8") as f:
                f.write(json.dumps(seen) + "\n")

    def websocket(self):
        key = self.headers.get("Sec-WebSocket-Key", "")
        accept = base64.b64encode(hashlib.sha1((key + WS_GUID).encode()).digest()).decode()
        self.record(self.seen(b""))
        self.send_response(101, "Switching Protocols")
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", accept)
        self.end_headers()
        self.wfile.flush()
        while True:
            hdr = self.rfile.read(2)
            if len(hdr) < 2:
                return
            op, n = hdr[0] & 0x0F, hdr[1] & 0x7F
            if n == 126:
                n = int.from_bytes(self.rfile.read(2), "big")
            elif n == 127:
                n = int.from_bytes(self.rfile.read(8), "big")
            mask = self.rfile.read(4) if hdr[1] & 0x80 else b"\0\0\0\0"
            data = bytes(b ^ mask[i % 4] for i, b in enumerate(self.rfile.read(n)))
            if op == 8:
                return
            self.wfile.write(ws_frame(1, data, masked=False))
            self.wfile.flush()

    def answer(self):
        if self.path.startswith("/ws") and \
                (self.headers.get("Upgrade") or "").lower() == "websocket":
            self.websocket()
            self.close_connection = True
            return
        seen = self.seen(self.read_body())
        self.record(seen)
        out = (json.dumps(seen) + "\n").encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.send_header("X-Echo-Api-Key", ", ".join(seen["x-api-key"]))
        self.end_headers()
        self.wfile.write(out)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = answer


def cmd_serve(a):
    host, port = a.listen.rsplit(":", 1)
    Backend.log_file = a.log
    open(a.log, "a", encoding="utf-8").close()
    srv = ThreadingHTTPServer((host.strip("[]"), int(port)), Backend)
    srv.daemon_threads = True
    with open(a.ready, "w", encoding="utf-8") as f:
        f.write("ready\n")
    srv.serve_forever()


# --- clients -------------------------------------------------------------


def ws_frame(op, data, masked=True):
    head = bytes([0x80 | op])
    n = len(data)
    bit = 0x80 if masked else 0
    if n < 126:
        head += bytes([bit | n])
    elif n < 65536:
        head += bytes([bit | 126]) + n.to_bytes(2, "big")
    else:
        head += bytes([bit | 127]) + n.to_bytes(8, "big")
    if not masked:
        return head + data
    mask = os.urandom(4)
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data))


def tls_connect(a, alpn=None):
    ctx = ssl.create_default_context(cafile=a.ca)
    if alpn:
        ctx.set_alpn_protocols(alpn)
    raw = socket.create_connection((a.host, a.port), timeout=5)
    return ctx.wrap_socket(raw, server_hostname=a.sni)


def read_head(s):
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = s.recv(4096)
        if not chunk:
            break
        buf += chunk
    return buf


def status_of(head):
    parts = head.split(b"\r\n", 1)[0].split()
    return parts[1].decode() if len(parts) > 1 and parts[0].startswith(b"HTTP/") else None


def cmd_ws(a):
    try:
        s = tls_connect(a, ["http/1.1"])
    except (OSError, ssl.SSLError) as e:
        print("handshake", type(e).__name__)
        return 1
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall((f"GET {a.path} HTTP/1.1\r\nHost: {a.sni}\r\nUpgrade: websocket\r\n"
               f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
               "Sec-WebSocket-Version: 13\r\n\r\n").encode())
    try:
        head = read_head(s)
    except OSError:
        head = b""
    st = status_of(head)
    if st != "101":
        print(st or "closed")
        return 1
    rest = head.split(b"\r\n\r\n", 1)[1]
    s.sendall(ws_frame(1, b"hello-ws"))
    buf = rest
    try:
        while len(buf) < 2 or len(buf) < 2 + (buf[1] & 0x7F):
            chunk = s.recv(4096)
            if not chunk:
                break
            buf += chunk
    except OSError:
        pass
    echo = buf[2:2 + (buf[1] & 0x7F)].decode(errors="replace") if len(buf) >= 2 else ""
    print("101", echo or "no-echo")
    s.sendall(ws_frame(8, b""))
    s.close()
    return 0


def cmd_raw(a):
    alpn = None if a.alpn == "none" else a.alpn.split(",")
    try:
        s = tls_connect(a, alpn)
    except (OSError, ssl.SSLError):
        print("handshake")
        return 0
    s.sendall(codecs.decode(a.request, "unicode_escape").encode("latin-1"))
    try:
        head = read_head(s)
    except OSError:
        head = b""
    print(status_of(head) or "closed")
    return 0


def cmd_req(a):
    import requests  # python3-requests; only this client needs it
    hdrs = {}
    for h in a.header:
        k, _, v = h.partition(":")
        hdrs[k.strip()] = v.strip()
    sess = requests.Session()

    def one():
        try:
            r = sess.get(a.url, headers=hdrs, verify=a.ca or True, timeout=5)
        except requests.RequestException as e:
            return "error " + type(e).__name__
        try:
            keys = r.json().get("x-api-key") or []
        except ValueError:
            keys = []
        return "%d %s" % (r.status_code, ",".join(keys) or "-")

    print(one(), flush=True)
    if a.wait:
        with open(a.wait + ".sent", "w", encoding="utf-8"):
            pass
        for _ in range(300):
            if os.path.exists(a.wait):
                break
            time.sleep(0.1)
        print(one(), flush=True)
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve")
    s.add_argument("--listen", required=True)
    s.add_argument("--log", required=True)
    s.add_argument("--ready", required=True)
    r = sub.add_parser("req")
    r.add_argument("url")
    r.add_argument("--ca")
    r.add_argument("-H", "--header", action="append", default=[])
    r.add_argument("--wait")
    for name in ("ws", "raw"):
        c = sub.add_parser(name)
        c.add_argument("host")
        c.add_argument("port", type=int)
        c.add_argument("--sni", required=True)
        c.add_argument("--ca", required=True)
        if name == "ws":
            c.add_argument("--path", default="/ws")
        else:
            c.add_argument("--alpn", default="http/1.1")
            c.add_argument("request")
    a = p.parse_args()
    return {"serve": cmd_serve, "req": cmd_req, "ws": cmd_ws, "raw": cmd_raw}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
