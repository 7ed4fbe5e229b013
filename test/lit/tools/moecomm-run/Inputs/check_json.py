#!/usr/bin/env python3
"""Asserts facts about a JSON document.

usage: check_json.py FILE EXPR [EXPR...]
Each EXPR is a Python expression over `d` (the parsed document) that must be
true. Prints "json ok" and exits 0, or prints the first false expression and
exits 1.
"""
import json
import sys


def main():
    with open(sys.argv[1]) as f:
        d = json.load(f)
    for expr in sys.argv[2:]:
        if not eval(expr, {"d": d}):
            print(f"check_json: false: {expr}")
            sys.exit(1)
    print("json ok")


if __name__ == "__main__":
    main()
