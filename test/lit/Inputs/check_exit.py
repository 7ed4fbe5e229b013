#!/usr/bin/env python3
"""Runs a command and checks its exit status (and, with --one-line, that its
stderr is exactly one line; with --one-write, that it is one line written
with a single write(2)). Prints the command's stderr then stdout to stdout so
FileCheck can read them; exits 0 when the checks pass, 1 otherwise.

A line written in pieces can be interleaved with other processes' output on a
shared stream (mpirun's ranks and banners), so the tools (moecomm-run,
moecomm-bench, moecomm-aot) write each line at once; --one-write hands the
command a SOCK_SEQPACKET socket as stderr, which keeps the boundaries of
every write, and the line must arrive as one message.

usage: check_exit.py STATUS [--one-line | --one-write] -- COMMAND [ARGS...]
"""
import socket
import subprocess
import sys
import threading


def main():
    argv = sys.argv[1:]
    if "--" not in argv:
        sys.exit("usage: check_exit.py STATUS [--one-line | --one-write] -- "
                 "COMMAND...")
    split = argv.index("--")
    opts, command = argv[:split], argv[split + 1:]
    want = int(opts[0])
    one_write = "--one-write" in opts[1:]
    one_line = one_write or "--one-line" in opts[1:]
    writes = []
    if one_write:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)

        def collect():
            while True:
                message = ours.recv(1 << 20)
                if not message:
                    return
                writes.append(message)

        # A daemon, and our end of the child's stderr closed even when the
        # command cannot start: the reader then sees the end instead of
        # keeping the interpreter from exiting.
        reader = threading.Thread(target=collect, daemon=True)
        reader.start()
        try:
            proc = subprocess.Popen(command, stdout=subprocess.PIPE,
                                    stderr=theirs)
        finally:
            theirs.close()
        out_bytes, _ = proc.communicate(timeout=120)
        reader.join(timeout=120)
        ours.close()
        err_bytes = b"".join(writes)
    else:
        proc = subprocess.run(command, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=120)
        out_bytes, err_bytes = proc.stdout, proc.stderr
    err = err_bytes.decode(errors="replace")
    out = out_bytes.decode(errors="replace")
    sys.stdout.write(err)
    sys.stdout.write(out)
    ok = True
    if proc.returncode != want:
        print(f"check_exit: exit status {proc.returncode}, expected {want}")
        ok = False
    if one_line and err.count("\n") != 1:
        print(f"check_exit: stderr has {err.count(chr(10))} lines, expected 1")
        ok = False
    elif one_write and len(writes) != 1:
        print(f"check_exit: stderr's line came in {len(writes)} writes, "
              "expected 1")
        ok = False
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
