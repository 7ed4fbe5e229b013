"""Compiling a graph from Python (docs/python.md, "Compiling graphs"):
examples/mixtral-8x7b.mlir through moecomm-pipeline for 4 ranks as 2 nodes
x 2 to LLVM IR, then to a shared library linked with the runtime, which
moecomm-run runs on 4 threads and verifies against its oracle; and one
error, a topology the graph cannot take.

    PYTHONPATH=runtime/python:build/python MOECOMM_RUNTIME_LIBRARY=build/lib/libmoecomm_runtime.so \\
        MOECOMM_C_LIBRARY=build/lib/libMoEComm-C.so PATH=build/bin:$PATH \\
        /usr/bin/python3 examples/python/compile_graph.py [OUTPUT_DIR]

OUTPUT_DIR (default: a new temporary folder) receives libmixtral.so.
moecomm-run is MOECOMM_RUN if set, else the one on PATH.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import moecomm

graph = Path(__file__).resolve().parents[1] / "mixtral-8x7b.mlir"
text = graph.read_text()
pipeline = "ranks=4 ranks-per-node=2 strategy=hierarchical"

ir = moecomm.compile(text, pipeline)  # LLVM IR text
calls = sorted(set(re.findall(r"^declare .*@(?:_mlir_ciface_)?(moecomm_rt_\w+)\(", ir, re.M)))
print(f"LLVM IR: {len(ir.splitlines())} lines, calls {len(calls)} runtime functions "
      f"({', '.join(calls[:3])}, ...)")

try:
    moecomm.compile(text, "ranks=3 ranks-per-node=2")
except moecomm.CompileError as error:  # error.step, error.messages
    print(f"{error.step}: {error.messages[0].splitlines()[0]}")

out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp())
out.mkdir(parents=True, exist_ok=True)
library = moecomm.compile(text, pipeline, output="shared", path=out / "libmixtral.so")
print(f"shared library: {library}")

moecomm_run = os.environ.get("MOECOMM_RUN") or shutil.which("moecomm-run")
if moecomm_run is None:
    sys.exit("moecomm-run not found: set MOECOMM_RUN or put it on PATH")
subprocess.run([moecomm_run, str(graph), "--aot", str(library), "--config", "mixtral-8x7b",
                "--ranks", "4", "--ranks-per-node", "2", "--tokens", "5"], check=True)
