#!/usr/bin/env python3
"""Several requests on one HTTP/2 connection, and a stream reset while the
connection stays open: what an app does when it cancels one of the requests
it has in flight (URLSession sends RST_STREAM), which curl's command line
cannot do.

    h2_streams.py BASE SOURCE CA|-k HEADER... -- PATH...

opens one connection to BASE (https://host:port) from the address SOURCE,
sends a GET of each PATH with the HEADERs ("Name: value"), each on its own
stream, prints `sent N` (N paths), then takes commands on stdin, one a line:
`reset I` cancels the I-th request (1-based; RST_STREAM, CANCEL), `close`
ends. Each answer's first frame prints `answered I`. At end of input it
closes too. Standard library only; a few frames of HTTP/2 (RFC 9113), the
headers as HPACK literals (RFC 7541), nothing it receives decoded.
"""
import socket
import ssl
import struct
import sys
import threading
import urllib.parse

HEADERS, RST_STREAM, SETTINGS = 0x1, 0x3, 0x4
END_STREAM, END_HEADERS = 0x1, 0x4
CANCEL = 0x8


def frame(kind, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def literal(name, value):
    """A header field as a literal without indexing, its name new (RFC 7541 §6.2.2)."""
    out = b"\x00"
    for text in (name.lower().encode(), value.encode()):
        assert len(text) < 127, text
        out += bytes([len(text)]) + text
    return out


def read_exactly(conn, count):
    data = b""
    while len(data) < count:
        chunk = conn.recv(count - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def main():
    base, source, ca = sys.argv[1], sys.argv[2], sys.argv[3]
    rest = sys.argv[4:]
    split = rest.index("--")
    headers, paths = rest[:split], rest[split + 1:]
    url = urllib.parse.urlsplit(base)
    context = ssl.create_default_context(cafile=None if ca == "-k" else ca)
    if ca == "-k":
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    context.set_alpn_protocols(["h2"])
    raw = socket.create_connection((url.hostname, url.port), timeout=120, source_address=(source, 0))
    conn = context.wrap_socket(raw, server_hostname=url.hostname)
    if conn.selected_alpn_protocol() != "h2":
        sys.exit("h2_streams.py: the server did not offer HTTP/2")
    streams = [1 + 2 * i for i in range(len(paths))]
    out = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(SETTINGS, 0, 0)
    for stream, path in zip(streams, paths):
        fields = [(":method", "GET"), (":scheme", "https"), (":path", path), (":authority", url.netloc)]
        fields += [tuple(part.strip() for part in h.split(":", 1)) for h in headers]
        out += frame(HEADERS, END_STREAM | END_HEADERS, stream, b"".join(literal(n, v) for n, v in fields))
    conn.sendall(out)
    print("sent %d" % len(paths), flush=True)
    lock = threading.Lock()

    def read():
        told = set()
        try:
            while True:
                head = read_exactly(conn, 9)
                length = struct.unpack(">I", b"\0" + head[:3])[0]
                kind, flags, stream = head[3], head[4], struct.unpack(">I", head[5:9])[0] & 0x7FFFFFFF
                read_exactly(conn, length)
                if kind == SETTINGS and not flags & 0x1:
                    with lock:
                        conn.sendall(frame(SETTINGS, 0x1, 0))
                if stream in streams and stream not in told:
                    told.add(stream)
                    print("answered %d" % (streams.index(stream) + 1), flush=True)
        except (OSError, EOFError, ValueError):
            return

    threading.Thread(target=read, daemon=True).start()
    for line in sys.stdin:
        words = line.split()
        if words[:1] == ["reset"]:
            with lock:
                conn.sendall(frame(RST_STREAM, 0, streams[int(words[1]) - 1], struct.pack(">I", CANCEL)))
            print("reset %s" % words[1], flush=True)
        elif words[:1] == ["close"]:
            break
    conn.close()


if __name__ == "__main__":
    main()
