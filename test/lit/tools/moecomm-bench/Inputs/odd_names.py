#!/usr/bin/env python3
"""User text that CSV and gnuplot must escape: model configs with odd names.

usage: odd_names.py make DIR
         writes DIR/a,b.json and DIR/we"ir'd x.json, whose models hold a
         comma, both quotes, a line break, a backquoted command (which would
         create DIR/pwned if run) and a gnuplot macro
       odd_names.py csv CSV
         parses CSV (RFC 4180) and prints, per row, the field count (equal
         to the header's) and the config and model columns
"""
import csv
import json
import sys

MODEL = 'Odd, "model" \'x\'\n`touch pwned` @x \\n'


def main():
    if sys.argv[1] == "make":
        for name in ["a,b", "we\"ir'd x"]:
            config = {"format": "moecomm-model-config-v1", "model": MODEL,
                      "moe": {"hidden": 8, "num_experts": 8, "topk": 2}}
            with open(f"{sys.argv[2]}/{name}.json", "w") as f:
                json.dump(config, f)
    elif sys.argv[1] == "csv":
        with open(sys.argv[2], newline="") as f:
            rows = list(csv.reader(f))
        header = rows[0]
        for row in rows[1:]:
            fields = dict(zip(header, row))
            print(len(row) == len(header), repr(fields["config"]),
                  fields["model"] == MODEL)
    else:
        sys.exit(f"unknown command {sys.argv[1]}")


if __name__ == "__main__":
    main()
