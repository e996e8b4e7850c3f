#!/usr/bin/env python3
"""A simulated Wi-Fi link between two network namespaces, in user space.

    relay.py NS_A ADDR_A NS_B ADDR_B --delay-ms 5 --rate-mbit 50 --ready FILE

Where the kernel has no `netem` or `tbf` qdisc (this machine's answers
"Specified qdisc kind is unknown"), the two ends of the link are tun devices,
`mclan0` in namespace NS_A with ADDR_A and `mclan0` in NS_B with ADDR_B, a
point-to-point /30. This process holds both devices and carries each IP
packet from one to the other as a link would: it waits until the previous
packet in the same direction has left (serialisation at the rate), then for
the propagation delay. A queue of more than 1,000 packets drops the packet
(netem's default limit). It writes FILE once both devices are up and runs
until SIGTERM or SIGINT; the devices go with it.
"""
import argparse
import collections
import ctypes
import fcntl
import os
import select
import signal
import struct
import subprocess
import sys
import time

TUNSETIFF = 0x400454CA
IFF_TUN = 0x0001
IFF_NO_PI = 0x1000
CLONE_NEWNET = 0x40000000
DEVICE = "mclan0"
QUEUE_LIMIT = 1000

libc = ctypes.CDLL(None, use_errno=True)


def enter(namespace_path):
    fd = os.open(namespace_path, os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"setns({namespace_path}): {os.strerror(err)}")
    finally:
        os.close(fd)


def open_tun(namespace, address, peer):
    """Creates the tun device inside `namespace` (it lives where it is made)
    and configures it there; the file descriptor stays ours."""
    home = "/proc/self/ns/net"
    home_fd = os.open(home, os.O_RDONLY)
    try:
        enter(f"/run/netns/{namespace}")
        fd = os.open("/dev/net/tun", os.O_RDWR)
        fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", DEVICE.encode(), IFF_TUN | IFF_NO_PI))
        os.set_blocking(fd, False)
    finally:
        if libc.setns(home_fd, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), "setns back to our own namespace")
        os.close(home_fd)
    run = ["ip", "netns", "exec", namespace, "ip"]
    subprocess.run(run + ["addr", "add", address, "peer", peer, "dev", DEVICE], check=True)
    subprocess.run(run + ["link", "set", DEVICE, "mtu", "1500", "up"], check=True)
    subprocess.run(run + ["link", "set", "lo", "up"], check=True)
    return fd


class Direction:
    """One way of the link: packets in flight, each with the time it arrives."""

    def __init__(self, source, sink, delay, rate_bytes):
        self.source, self.sink = source, sink
        self.delay, self.rate = delay, rate_bytes
        self.queue = collections.deque()
        self.free_at = 0.0  # when the previous packet has been sent out
        self.dropped = 0

    def take(self, now):
        while True:
            try:
                packet = os.read(self.source, 65536)
            except BlockingIOError:
                return
            if len(self.queue) >= QUEUE_LIMIT:
                self.dropped += 1
                continue
            self.free_at = max(now, self.free_at) + len(packet) / self.rate
            self.queue.append((self.free_at + self.delay, packet))

    def deliver(self, now):
        while self.queue and self.queue[0][0] <= now:
            _, packet = self.queue.popleft()
            try:
                os.write(self.sink, packet)
            except OSError:
                self.dropped += 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("ns_a")
    parser.add_argument("addr_a")
    parser.add_argument("ns_b")
    parser.add_argument("addr_b")
    parser.add_argument("--delay-ms", type=float, default=5.0)
    parser.add_argument("--rate-mbit", type=float, default=50.0)
    parser.add_argument("--ready", required=True)
    args = parser.parse_args()

    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    a = open_tun(args.ns_a, args.addr_a, args.addr_b)
    b = open_tun(args.ns_b, args.addr_b, args.addr_a)
    delay, rate = args.delay_ms / 1000.0, args.rate_mbit * 1e6 / 8
    ways = {a: Direction(a, b, delay, rate), b: Direction(b, a, delay, rate)}
    with open(args.ready, "w") as f:
        f.write(f"{os.getpid()}\n")
    clock = time.monotonic
    while not stop:
        now = clock()
        due = None
        for way in ways.values():
            way.deliver(now)
            if way.queue and (due is None or way.queue[0][0] < due):
                due = way.queue[0][0]
        timeout = None if due is None else max(0.0, due - clock())
        try:
            readable, _, _ = select.select(list(ways), [], [], timeout)
        except InterruptedError:
            continue
        now = clock()
        for fd in readable:
            ways[fd].take(now)
    dropped = sum(w.dropped for w in ways.values())
    if dropped:
        print(f"relay: {dropped} packets dropped (queue over {QUEUE_LIMIT})", file=sys.stderr)


if __name__ == "__main__":
    main()
