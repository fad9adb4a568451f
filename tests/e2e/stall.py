#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Stops ONE thread of a process for a while, the others running on: the
way a wedged loop looks from outside (a liveness check must see it).
PTRACE_SEIZE + PTRACE_INTERRUPT stop the thread alone (PTRACE_ATTACH's
SIGSTOP would stop the whole process); PTRACE_DETACH lets it go.

    stall.py TID SECONDS
"""
import ctypes
import os
import sys
import time

PTRACE_DETACH = 17
PTRACE_SEIZE = 0x4206
PTRACE_INTERRUPT = 0x4207
WALL = 0x40000000

libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]


def call(req, tid):
    if libc.ptrace(req, tid, None, None) != 0:
        e = ctypes.get_errno()
        sys.exit("ptrace(%d, %d): %s" % (req, tid, os.strerror(e)))


def main():
    tid, seconds = int(sys.argv[1]), float(sys.argv[2])
    call(PTRACE_SEIZE, tid)
    call(PTRACE_INTERRUPT, tid)
    os.waitpid(tid, WALL)
    print("stopped", flush=True)
    time.sleep(seconds)
    call(PTRACE_DETACH, tid)
    return 0


if __name__ == "__main__":
    sys.exit(main())
