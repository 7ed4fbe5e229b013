#!/usr/bin/env python3
"""Runs a command and checks its exit status (and, with --one-line, that its
stderr is exactly one line). Prints the command's stderr then stdout to stdout
so FileCheck can read them; exits 0 when the checks pass, 1 otherwise.

usage: check_exit.py STATUS [--one-line] -- COMMAND [ARGS...]
"""
import subprocess
import sys


def main():
    argv = sys.argv[1:]
    if "--" not in argv:
        sys.exit("usage: check_exit.py STATUS [--one-line] -- COMMAND...")
    split = argv.index("--")
    opts, command = argv[:split], argv[split + 1:]
    want = int(opts[0])
    one_line = "--one-line" in opts[1:]
    proc = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=120)
    err = proc.stderr.decode(errors="replace")
    out = proc.stdout.decode(errors="replace")
    sys.stdout.write(err)
    sys.stdout.write(out)
    ok = True
    if proc.returncode != want:
        print(f"check_exit: exit status {proc.returncode}, expected {want}")
        ok = False
    if one_line and err.count("\n") != 1:
        print(f"check_exit: stderr has {err.count(chr(10))} lines, expected 1")
        ok = False
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
