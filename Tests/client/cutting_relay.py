"""A loopback TCP relay that cuts connections: the first `cuts` connections
through it are reset (RST) after a random number of bytes, in whichever
direction, between `low` and `high`; later ones pass untouched. It listens on
`host` (127.0.0.1, or another loopback address), on a free port, and forwards
to 127.0.0.1:target.

Standard library only; runs in a thread of the suite's process.
"""
import random
import selectors
import socket
import struct
import threading


class CuttingRelay:
    def __init__(self, target_port, cuts, low, high, seed, host="127.0.0.1"):
        self.target_port = target_port
        self.remaining_cuts = cuts
        self.low, self.high = low, high
        self.random = random.Random(seed)
        self.cut_points = []  # bytes relayed before each cut
        self.connections = 0
        self.listener = socket.socket()
        self.listener.bind((host, 0))
        self.listener.listen(16)
        self.port = self.listener.getsockname()[1]
        self.closing = False
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self):
        while not self.closing:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            budget = None
            if self.remaining_cuts > 0:
                self.remaining_cuts -= 1
                budget = self.random.randint(self.low, self.high)
            threading.Thread(target=self._pipe, args=(client, budget), daemon=True).start()

    def _pipe(self, client, budget):
        try:
            server = socket.create_connection(("127.0.0.1", self.target_port), timeout=10)
        except OSError:
            client.close()
            return
        relayed = 0
        peers = {client: server, server: client}
        selector = selectors.DefaultSelector()
        for s in peers:
            s.setblocking(False)
            selector.register(s, selectors.EVENT_READ)
        try:
            while not self.closing:
                for key, _ in selector.select(timeout=30):
                    data = key.fileobj.recv(65536)
                    if not data:
                        return
                    if budget is not None and relayed + len(data) >= budget:
                        peers[key.fileobj].sendall(data[:max(0, budget - relayed)])
                        self.cut_points.append(budget)
                        return self._reset(client, server)
                    relayed += len(data)
                    peers[key.fileobj].setblocking(True)
                    peers[key.fileobj].sendall(data)
                    peers[key.fileobj].setblocking(False)
        except OSError:
            pass
        finally:
            selector.close()
            client.close()
            server.close()

    @staticmethod
    def _reset(*sockets):
        for s in sockets:
            try:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            except OSError:
                pass

    def close(self):
        self.closing = True
        self.listener.close()
