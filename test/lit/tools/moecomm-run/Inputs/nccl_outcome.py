#!/usr/bin/env python3
"""Runs a `moecomm-run --backend nccl` command and prints its outcome for
FileCheck, decided by the exit status the tool gives, not by probing for a
GPU: 0 (a usable GPU) must come with a verified run and prints
"nccl: verified"; 2 (no usable GPU, or a build without CUDA/NCCL: the
runtime's Unsupported error) prints "nccl: unavailable: <the tool's error
line>", which must be the first line of stderr (and, with --one-line, the
only one; mpirun adds its own after it). Any other status, or a run that
does not say it verified, prints what happened and exits 1.

usage: nccl_outcome.py [--one-line] -- COMMAND [ARGS...]
"""
import subprocess
import sys


def main():
    argv = sys.argv[1:]
    if "--" not in argv:
        sys.exit("usage: nccl_outcome.py [--one-line] -- COMMAND...")
    split = argv.index("--")
    one_line = "--one-line" in argv[:split]
    proc = subprocess.run(argv[split + 1:], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=300)
    out = proc.stdout.decode(errors="replace")
    err = proc.stderr.decode(errors="replace")
    lines = err.splitlines()
    if proc.returncode == 0 and "verified                yes" in out:
        print("nccl: verified")
        return 0
    if (proc.returncode == 2 and lines and
            lines[0].startswith("moecomm-run: error: ") and
            (not one_line or len(lines) == 1)):
        print("nccl: unavailable: " + lines[0])
        return 0
    print(f"nccl_outcome: exit status {proc.returncode}, stderr {len(lines)} "
          f"line(s):\n{err}{out}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
