#!/usr/bin/env python3
"""Two threads ping-ponging over eventfds, with schedlab workload markers.

Usage: pingpong.py TRACE_MARKER [ITERATIONS [SPIN_US]]

`ping` (pinned to CPU 0) writes `schedlab signal obj=efd0` to the marker file,
writes eventfd efd0 and blocks reading efd1; `pong` (pinned to CPU 1) returns
from reading efd0 (`schedlab wait_done obj=efd0`), spins SPIN_US (default 50), and hands back
over efd1 the same way. Every iteration is two handoffs. The threads rename
themselves with prctl(PR_SET_NAME) after they start, so the trace sees each
tid first as `python3` and then as `ping`/`pong` (a comm change for a pid).
"""
import ctypes
import os
import sys
import threading
import time

PR_SET_NAME = 15
libc = ctypes.CDLL(None, use_errno=True)
marker = os.open(sys.argv[1], os.O_WRONLY)
iterations = int(sys.argv[2]) if len(sys.argv) > 2 else 100
spin_us = int(sys.argv[3]) if len(sys.argv) > 3 else 50
efd = [os.eventfd(0), os.eventfd(0)]
ready = threading.Barrier(2)


def mark(text):
    os.write(marker, text.encode())


def spin(us):
    end = time.perf_counter() + us / 1e6
    while time.perf_counter() < end:
        pass


def setup(name, cpu):
    libc.prctl(PR_SET_NAME, name.encode(), 0, 0, 0)
    os.sched_setaffinity(0, {cpu})
    ready.wait()


def ping():
    setup("ping", 0)
    for _ in range(iterations):
        spin(spin_us)
        mark("schedlab signal obj=efd0")
        os.eventfd_write(efd[0], 1)
        os.eventfd_read(efd[1])
        mark("schedlab wait_done obj=efd1")


def pong():
    setup("pong", 1)
    for _ in range(iterations):
        os.eventfd_read(efd[0])
        mark("schedlab wait_done obj=efd0")
        spin(spin_us)
        mark("schedlab signal obj=efd1")
        os.eventfd_write(efd[1], 1)


threads = [threading.Thread(target=ping), threading.Thread(target=pong)]
for t in threads:
    t.start()
for t in threads:
    t.join()
