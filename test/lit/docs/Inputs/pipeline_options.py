#!/usr/bin/env python3
"""Compares the moecomm-pipeline options in `moecomm-opt --help` (stdin) with
the option table of docs/pipeline.md (argv[1]). Exits 1 naming the
difference."""
import re
import sys


def main():
    help_lines = sys.stdin.read().splitlines()
    start = next(i for i, l in enumerate(help_lines)
                 if l.strip().startswith("--moecomm-pipeline "))
    indent = len(help_lines[start]) - len(help_lines[start].lstrip())
    registered = set()
    for line in help_lines[start + 1:]:
        # llvm::cl lists an enum option's values ("=flat") below it, less
        # indented than the options.
        if line.lstrip().startswith("="):
            continue
        if len(line) - len(line.lstrip()) <= indent:
            break
        registered.add(re.match(r"\s*--([\w-]+)", line).group(1))
    with open(sys.argv[1]) as f:
        documented = set(re.findall(r"^\| `([\w-]+)` \|", f.read(), re.M))
    if registered != documented:
        sys.exit(f"registered only: {sorted(registered - documented)}; "
                 f"documented only: {sorted(documented - registered)}")
    print(f"pipeline options documented: {len(registered)}")


main()
