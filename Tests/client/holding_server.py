"""A TLS server that holds its answer: it presents a stack's certificate
(signed by that stack's CA, so a client that trusts the CA gets as far as
sending its request), reads one HTTP/1.1 request, and answers only when
released, 200 with `{}`. It records when the request arrived and whether
the client closed the connection while the answer was held: what a
cancellation test needs to show that a cancelled request returned before
the server answered, and that its transfer was stopped.

Listens on 127.0.0.1 only, on a free port; one connection at a time; a
thread of the suite's process. Standard library only.
"""
import socket
import ssl
import threading


class HoldingServer:
    def __init__(self, cert, key, hold_seconds=60):
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        context.set_alpn_protocols(["http/1.1"])
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(4)
        self.port = self.listener.getsockname()[1]
        self.url = f"https://127.0.0.1:{self.port}"
        self.context, self.hold_seconds = context, hold_seconds
        self.requested = threading.Event()  # a whole request head arrived
        self.closed_by_client = threading.Event()  # EOF or reset while the answer was held
        self.released = threading.Event()
        self.answered = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        try:
            raw, _ = self.listener.accept()
        except OSError:
            return
        try:
            with self.context.wrap_socket(raw, server_side=True) as conn:
                head = b""
                while b"\r\n\r\n" not in head:
                    data = conn.recv(65536)
                    if not data:
                        return
                    head += data
                self.requested.set()
                conn.settimeout(0.05)
                waited = 0.0
                while not self.released.is_set() and waited < self.hold_seconds:
                    try:
                        if not conn.recv(65536):
                            self.closed_by_client.set()
                            return
                    except socket.timeout:
                        waited += 0.05
                    except (OSError, ssl.SSLError):
                        self.closed_by_client.set()
                        return
                self.answered = True
                conn.settimeout(5)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
        except (OSError, ssl.SSLError):
            pass

    def close(self):
        self.released.set()
        self.listener.close()
        self.thread.join(timeout=10)
