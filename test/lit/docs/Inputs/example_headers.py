#!/usr/bin/env python3
"""Runs the commands each example graph suggests in its header comment
(`//   moecomm-opt ...`, `//   moecomm-run ...`) from the source root
(argv[1]), with the tools on PATH. moecomm-run gets `--tokens 4 --quiet` so a
run takes seconds; everything else is run as written. Exits 1 naming the
first command that fails."""
import glob
import os
import shlex
import subprocess
import sys


def main():
    root = sys.argv[1]
    count = 0
    for path in sorted(glob.glob(os.path.join(root, "examples", "*.mlir"))):
        with open(path) as f:
            for line in f:
                if not line.startswith("//"):
                    break
                text = line[2:].strip()
                if not text.startswith(("moecomm-opt ", "moecomm-run ")):
                    continue
                argv = shlex.split(text)
                if argv[0] == "moecomm-run":
                    argv += ["--tokens", "4", "--quiet"]
                done = subprocess.run(argv, cwd=root, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE, text=True)
                if done.returncode != 0:
                    first = (done.stderr.strip().splitlines() or [""])[0]
                    sys.exit(f"{os.path.basename(path)}: `{text}` exited "
                             f"{done.returncode}: {first}")
                count += 1
    print(f"example header commands run: {count}")


main()
