"""compile(output="shared")'s last steps: LLVM IR to a shared library linked
with the runtime, the object steps of tools/moecomm-aot (and of
moecomm_add_aot_graph, cmake/AddMoECommGraph.cmake):

1. `llc -O2 -filetype=obj -relocation-model=pic` on the graph's LLVM IR;
2. the graph's text as the exported constants moecomm_aot_graph_source
   ([N x i8]) and moecomm_aot_graph_source_size (i64 N), written as LLVM IR
   as cmake/EmbedGraphSource.cmake writes them, through llc too:
   `moecomm-run GRAPH --aot LIB` parses it and checks GRAPH's entry against
   it before calling the library;
3. `CC -shared` of both objects with the runtime library the package loaded
   (native.library_path), no run path: the library is loaded into a process
   that already holds the runtime, matched by its soname;
4. the library copied to the output path, last, so a write error is told
   apart from a toolchain failure.

llc and CC are the ones the build configured (moecomm/toolchain.py, which
CMake generates from runtime/python/toolchain.py.in into <build>/python and
installs into the package), as moecomm-aot has them configured in. Each
failure raises CompileError naming the step, with the tool's error lines.
"""

import os
import re
import subprocess
import tempfile

from . import native
from .errors import CompileError


def _toolchain():
    try:
        from . import toolchain
    except ImportError:
        raise CompileError("output='shared' needs the configured toolchain", [
            "moecomm/toolchain.py (llc and the C compiler the build used) was not found: "
            "the build writes it to <build>/python/moecomm (put <build>/python on "
            "PYTHONPATH after the package's folder) and installs it with the package"
        ]) from None
    return toolchain


def _run(step, command, cwd):
    """Runs one step; CompileError(step, its error lines) when it fails."""
    try:
        result = subprocess.run(command, cwd=cwd, stdin=subprocess.DEVNULL,
                                capture_output=True, text=True, errors="replace")
    except OSError as error:
        raise CompileError(step, [f"cannot run {command[0]}: {error.strerror}"]) from None
    if result.returncode == 0:
        return
    lines = (result.stdout + result.stderr).splitlines()
    errors = [line for line in lines if "error" in line] or lines
    if result.returncode < 0:
        errors.append(f"{command[0]} was killed by signal {-result.returncode}")
    raise CompileError(step, errors or [f"{command[0]}: exit status {result.returncode}"])


def embedded_source(source):
    """LLVM IR defining moecomm_aot_graph_source(_size) as `source` (bytes)."""
    size = len(source)
    init = 'c"' + re.sub("(..)", r"\\\1", source.hex()) + '"' if size else "zeroinitializer"
    return (f"@moecomm_aot_graph_source = constant [{size} x i8] {init}\n"
            f"@moecomm_aot_graph_source_size = constant i64 {size}\n")


def write_output(path, data, refused=()):
    """Writes `data` (bytes) to `path` in place (as moecomm-aot's cp does).
    `refused`: (description, file) pairs `path` must not name, through any
    spelling or link: files this process loads or runs."""
    for what, other in refused:
        if os.path.exists(path) and os.path.exists(other) and os.path.samefile(path, other):
            raise CompileError(f"cannot write {path}",
                               [f"it is {what}; write the output elsewhere"])
    try:
        with open(path, "wb") as output:
            output.write(data)
    except OSError as error:
        raise CompileError(f"cannot write {path}", [error.strerror or str(error)]) from None


def inputs(compiler_library):
    """The files compile() must not overwrite: the loaded libraries."""
    return [("the runtime library moecomm loaded", native.library_path),
            ("the compiler library moecomm.compile loaded", compiler_library)]


def link_shared(llvm_ir, source, path, compiler_library):
    """Links `llvm_ir` (text) with the runtime into the shared library
    `path`, embedding `source` (the graph's text, bytes)."""
    toolchain = _toolchain()
    refused = inputs(compiler_library) + [("the llc it runs", toolchain.LLC),
                                           ("the C compiler it links with", toolchain.CC)]
    with tempfile.TemporaryDirectory(prefix="moecomm-compile-") as work:
        with open(os.path.join(work, "graph.ll"), "w") as graph:
            graph.write(llvm_ir)
        with open(os.path.join(work, "source.ll"), "w") as embedded:
            embedded.write(embedded_source(source))
        _run("llc failed", [toolchain.LLC, "-O2", "-filetype=obj", "-relocation-model=pic",
                            "graph.ll", "-o", "graph.o"], work)
        _run("llc failed", [toolchain.LLC, "-filetype=obj", "-relocation-model=pic",
                            "source.ll", "-o", "source.o"], work)
        _run(f"linking {path} failed", [toolchain.CC, "-shared", "graph.o", "source.o",
                                        "-o", "graph.so", os.path.abspath(native.library_path)], work)
        with open(os.path.join(work, "graph.so"), "rb") as library:
            write_output(path, library.read(), refused)
