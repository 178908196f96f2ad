#!/usr/bin/python3
"""User-space delay line for `geomx bench --netns` (this kernel has no netem; ../shared/reference/build-notes.md §7).

    delay_line.py IF_A IF_B DELAY_SECONDS [LOSS [SEED]]

Creates two TUN devices IF_A and IF_B (the harness then moves each into its namespace: the file descriptors keep
working) and forwards every IP packet read from one to the other after DELAY_SECONDS, keeping order; each packet is
dropped instead with probability LOSS (0 by default; draws from a generator seeded with SEED, so a run repeats).
Rate limiting stays in the kernel (tc tbf on the devices). Prints "ready" once both devices exist; exits on SIGTERM,
and the devices disappear with it."""
import fcntl
import heapq
import os
import random
import select
import signal
import struct
import sys
import time

TUNSETIFF = 0x400454CA
IFF_TUN, IFF_NO_PI = 0x0001, 0x1000


def open_tun(name):
    fd = os.open("/dev/net/tun", os.O_RDWR)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TUN | IFF_NO_PI))
    os.set_blocking(fd, False)
    return fd


def main():
    a, b, delay = sys.argv[1], sys.argv[2], float(sys.argv[3])
    loss = float(sys.argv[4]) if len(sys.argv) > 4 else 0.0
    draws = random.Random(int(sys.argv[5]) if len(sys.argv) > 5 else 0)
    if not 0.0 <= loss < 1.0:
        sys.exit("delay_line.py: LOSS must be in [0, 1), got %s" % sys.argv[4])
    fa, fb = open_tun(a), open_tun(b)
    peer = {fa: fb, fb: fa}
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print("ready", flush=True)
    queue, seq = [], 0
    while True:
        timeout = max(0.0, queue[0][0] - time.monotonic()) if queue else 1.0
        readable, _, _ = select.select([fa, fb], [], [], timeout)
        now = time.monotonic()
        for fd in readable:
            while True:
                try:
                    pkt = os.read(fd, 65536)
                except (BlockingIOError, OSError):
                    break
                if loss > 0 and draws.random() < loss:
                    continue  # lost on the wire
                heapq.heappush(queue, (now + delay, seq, peer[fd], pkt))
                seq += 1
        while queue and queue[0][0] <= time.monotonic():
            _, _, fd, pkt = heapq.heappop(queue)
            try:
                os.write(fd, pkt)
            except OSError:
                pass  # the device is not up yet, or its queue is full: the packet is lost, as on a wire


if __name__ == "__main__":
    sys.exit(main())
