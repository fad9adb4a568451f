# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""The ingress test's peers, run inside the test's namespace.

fastpath: a FastPath ResolveEndpoint stand-in (grpcio, classes generated
  from gateway/proto/fastpath_v2.proto at test time). Its answer depends on
  the sandbox name (and for sb-mode and sb-slowmode on the access mode);
  every call is appended to --calls as one line
  "NAMESPACE NAME PORT ACCESS_MODE".
echo: an HTTP upstream answering 200 with a JSON body of what it got (the
  raw request target, the headers); /__marker/VALUE/STATUS answers STATUS
  with X-Fast-Sandbox-Proxy-Error: VALUE, an internal header and a body;
  /__ws is a WebSocket echo, /__sse two server-sent events 1.5 s apart.
ws, sse: the clients of those two through the gateway.
"""

WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def ws_accept(key):
    return base64.b64encode(hashlib.sha1((key + WS_GUID).encode()).digest()).decode()


def ws_frame(payload, mask):
    head = bytes([0x81, (0x80 if mask else 0) | len(payload)])
    if not mask:
        return head + payload
    key = os.urandom(4)
    return head + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))


def ws_read(f):
    b0, b1 = f.read(2)
    n = b1 & 0x7F
    key = f.read(4) if b1 & 0x80 else None
    data = f.read(n)
    if key:
        data = bytes(b ^ key[i % 4] for i, b in enumerate(data))
    return b0 & 0x0F, data
import argparse
import base64
import hashlib
import importlib
import json
import os
import socket
import sys
import threading
import time
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def split_addr(addr):
    host, _, port = addr.rpartition(":")
    return host, int(port)


def ready(path):
    if path:
        with open(path, "w") as f:
            f.write("ready\n")


def fastpath(args):
    import grpc

    sys.path.insert(0, args.gen)
    pb = importlib.import_module("fastpath_v2_pb2")
    pbg = importlib.import_module("fastpath_v2_pb2_grpc")
    lock = threading.Lock()

    def answer(ctx, endpoint, ttl=3600, cred=None):
        r = pb.ResolveEndpointResponse(
            sandbox_uid="uid-" + ctx,
            endpoint=pb.Endpoint(component_name="fastlet-0", protocol="http", port=8080),
            proxy_endpoint=endpoint,
            route_generation=1,
            expires_at_unix_seconds=int(time.time()) + ttl,
        )
        r.required_headers["X-Fast-Sandbox-Route-Credential"] = cred or "cred-" + ctx
        return r

    class Servicer(pbg.FastPathServicer):
        def ResolveEndpoint(self, request, context):
            nn = request.sandbox.namespaced_name
            name = nn.name
            with lock, open(args.calls, "a") as f:
                f.write("%s %s %d %d\n" % (nn.namespace, name, request.target.port,
                                           request.access_mode))
            codes = {
                "sb-missing": grpc.StatusCode.NOT_FOUND,
                "sb-notready": grpc.StatusCode.FAILED_PRECONDITION,
                "sb-unpublished": grpc.StatusCode.FAILED_PRECONDITION,
                "sb-unavail": grpc.StatusCode.UNAVAILABLE,
                "sb-busy": grpc.StatusCode.RESOURCE_EXHAUSTED,
                "sb-internal": grpc.StatusCode.INTERNAL,
            }
            if name in ("sb-slowmissing", "sb-slowunavail"):
                time.sleep(1)
                context.abort(grpc.StatusCode.NOT_FOUND if name == "sb-slowmissing"
                              else grpc.StatusCode.UNAVAILABLE, "stand-in says " + name)
            if name in codes:
                context.abort(codes[name], "stand-in says " + name)
            if name == "sb-slow":
                time.sleep(3)
            if name == "sb-slowok":
                time.sleep(1)
            if name in ("sb-mode", "sb-slowmode"):
                # FastPath gives each access mode its own endpoint and
                # credential: central-proxy (0) the TLS one here
                if name == "sb-slowmode":
                    time.sleep(1)
                central = request.access_mode == 0
                return answer(name, args.tls_upstream if central else args.upstream,
                              cred="cred-%s-%s" % (name, "central" if central else "direct"))
            if name == "sb-refused":
                return answer(name, args.refused)
            if name == "sb-tls":
                return answer(name, args.tls_upstream)
            if name == "sb-short":
                return answer(name, args.upstream, ttl=3)
            if name == "sb-badendpoint":
                return answer(name, "ftp://198.51.100.7/")
            if name == "sb-badcred":
                return answer(name, args.upstream, cred="a\r\nX-Evil: 1")
            return answer(name, args.upstream)

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=16))
    pbg.add_FastPathServicer_to_server(Servicer(), server)
    if args.cert:
        # FastPath over TLS; with --client-ca a client certificate is required
        with open(args.key, "rb") as k, open(args.cert, "rb") as c:
            pair = (k.read(), c.read())
        ca = open(args.client_ca, "rb").read() if args.client_ca else None
        creds = grpc.ssl_server_credentials([pair], root_certificates=ca,
                                            require_client_auth=ca is not None)
        server.add_secure_port(args.listen, creds)
    else:
        server.add_insecure_port(args.listen)
    server.start()
    ready(args.ready)
    server.wait_for_termination()


class Echo(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *a):
        pass

    def reply(self):
        n = int(self.headers.get("Content-Length") or 0)
        body_in = self.rfile.read(n) if n else b""
        with open(self.server.log, "a") as f:
            f.write(self.path + "\n")
        parts = self.path.split("/")
        if self.path == "/__ws" and self.headers.get("Upgrade", "").lower() == "websocket":
            self.send_response(101)
            self.send_header("Upgrade", "websocket")
            self.send_header("Connection", "Upgrade")
            self.send_header("Sec-WebSocket-Accept", ws_accept(self.headers["Sec-WebSocket-Key"]))
            self.end_headers()
            self.wfile.flush()
            while True:
                op, data = ws_read(self.rfile)
                if op == 8:
                    self.close_connection = True
                    return
                self.wfile.write(ws_frame(b"echo:" + data, False))
                self.wfile.flush()
        if self.path == "/__sse":
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(b"data: one\n\n")
            self.wfile.flush()
            time.sleep(1.5)
            self.wfile.write(b"data: two\n\n")
            self.wfile.flush()
            self.close_connection = True
            return
        if len(parts) >= 4 and parts[1] == "__marker":
            status = int(parts[3])
            body = b"internal detail the client must not see\n"
            self.send_response(status)
            self.send_header("X-Fast-Sandbox-Proxy-Error", parts[2])
            self.send_header("X-Fastlet-Internal", "secret-topology")
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        got = {
            "method": self.command,
            "target": self.path,
            "headers": [[k, v] for k, v in self.headers.items()],
            "body": len(body_in),
            "peer_port": self.client_address[1],
            # the TLS server name the client asked for (None: plain or none)
            "sni": getattr(self.connection, "fw_sni", None),
        }
        body = json.dumps(got).encode() + b"\n"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PUT = do_DELETE = reply


def echo(args):
    host, port = split_addr(args.listen)
    srv = ThreadingHTTPServer((host, port), Echo)
    srv.log = args.log
    if args.cert:
        import ssl

        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(args.cert, args.key)

        def note_sni(sock, name, _ctx):
            sock.fw_sni = name

        tls.sni_callback = note_sni
        srv.socket = tls.wrap_socket(srv.socket, server_side=True)
    ready(args.ready)
    srv.serve_forever()


def connect(args, target, extra):
    host, port = split_addr(args.gateway)
    s = socket.create_connection((host, port), timeout=5)
    req = "GET %s HTTP/1.1\r\nHost: gw\r\nOpenSandbox-Ingress-To: %s\r\n%s\r\n" % (
        target, args.scope, extra)
    s.sendall(req.encode())
    return s, s.makefile("rb")


def read_head(f):
    status = f.readline().decode()
    headers = {}
    while True:
        line = f.readline().decode().strip()
        if not line:
            return int(status.split()[1]), headers
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()


def ws(args):
    key = base64.b64encode(os.urandom(16)).decode()
    s, f = connect(args, "/__ws", "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                   "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: %s\r\n" % key)
    status, headers = read_head(f)
    if status != 101 or headers.get("sec-websocket-accept") != ws_accept(key):
        sys.exit("handshake: %d %s" % (status, headers))
    for msg in (b"hello", b"again"):
        s.sendall(ws_frame(msg, True))
        op, data = ws_read(f)
        if data != b"echo:" + msg:
            sys.exit("got %r for %r" % (data, msg))
    s.sendall(bytes([0x88, 0x80]) + os.urandom(4))
    print("websocket ok")


def sse(args):
    t0 = time.monotonic()
    s, f = connect(args, "/__sse", "")
    status, _ = read_head(f)
    if status != 200:
        sys.exit("status %d" % status)
    # chunked through nginx: read raw until each event shows
    seen, buf = [], b""
    while len(seen) < 2:
        chunk = f.read1(4096)
        if not chunk:
            break
        buf += chunk
        for ev in (b"data: one", b"data: two"):
            if ev in buf and ev not in seen:
                seen.append(ev)
                print("%s after %.2f s" % (ev.decode(), time.monotonic() - t0))
    if len(seen) != 2:
        sys.exit("events: %r" % seen)


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("fastpath")
    f.add_argument("--gen", required=True, help="dir of the generated modules")
    f.add_argument("--listen", required=True)
    f.add_argument("--calls", required=True)
    f.add_argument("--upstream", required=True)
    f.add_argument("--refused", required=True)
    f.add_argument("--tls-upstream", required=True)
    f.add_argument("--cert", help="serve gRPC over TLS with this certificate")
    f.add_argument("--key")
    f.add_argument("--client-ca", help="require a client certificate from this CA")
    f.add_argument("--ready")
    e = sub.add_parser("echo")
    e.add_argument("--listen", required=True)
    e.add_argument("--log", required=True, help="every request target, a line each")
    e.add_argument("--cert", help="serve TLS with this certificate")
    e.add_argument("--key")
    e.add_argument("--ready")
    for name in ("ws", "sse"):
        c = sub.add_parser(name)
        c.add_argument("--gateway", required=True)
        c.add_argument("--scope", required=True)
    args = ap.parse_args()
    {"fastpath": fastpath, "echo": echo, "ws": ws, "sse": sse}[args.cmd](args)


if __name__ == "__main__":
    os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
    main()
