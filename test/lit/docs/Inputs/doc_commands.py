#!/usr/bin/env python3
"""Runs every ```sh block of a Markdown file (argv[3]) as one bash script
(`set -euo pipefail`), as a reader would from the source root after
`cmake --preset default && cmake --build --preset default`: the blocks run in
a scratch folder where examples/, runtime/, test/ and docs/ are the source's
(argv[1]) and build/ is the build tree (argv[2]), so what the commands write
stays out of both. Exits 1 naming the first block that fails, with its
stderr's last lines; prints how many blocks ran."""
import os
import re
import subprocess
import sys
import tempfile

FENCE = re.compile(r"^```sh\n(.*?)^```\n", re.MULTILINE | re.DOTALL)


def main():
    src, build, doc = sys.argv[1:4]
    with open(doc) as f:
        blocks = FENCE.findall(f.read())
    with tempfile.TemporaryDirectory() as scratch:
        for name in ("examples", "runtime", "test", "docs"):
            os.symlink(os.path.join(src, name), os.path.join(scratch, name))
        os.symlink(build, os.path.join(scratch, "build"))
        for number, block in enumerate(blocks, 1):
            done = subprocess.run(["bash", "-c", "set -euo pipefail\n" + block],
                                  cwd=scratch, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True)
            if done.returncode != 0:
                tail = "\n".join(done.stderr.strip().splitlines()[-5:])
                sys.exit(f"{os.path.basename(doc)}: block {number} exited "
                         f"{done.returncode}:\n{block}\n{tail}")
    print(f"{os.path.basename(doc)}: sh blocks run: {len(blocks)}")


main()
