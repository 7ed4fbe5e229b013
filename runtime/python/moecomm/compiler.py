"""moecomm.compile: an MoE graph (MLIR text) through moecomm-pipeline to
LLVM-dialect MLIR, LLVM IR or a shared library, in this process, through the
compiler's C API (capi.py; the steps of test/capi/pipeline.c and
moecomm-aot).

Every diagnostic MLIR emits goes to a handler on the compilation's context
(mlirContextAttachDiagnosticHandler), never to stderr: errors and their notes
become the CompileError of the step that failed; warnings and remarks (e.g.
"moecomm-schedule-overlap: not chunked: ...", expected with chunks > 1 for a
layer that returns tokens_per_expert) go to the logger "moecomm.compile"
(WARNING and INFO). Calls are serialized by a
process-wide lock: compile() may be called from any thread, one compilation
runs at a time. A handler of that logger runs during the compilation, so it
cannot call compile() (CompileError, rather than waiting on the lock for
ever), and an exception it raises cannot cross MLIR's C code: the first one
is kept and raised once the compilation is over, in place of its result.
"""

import contextlib
import logging
import os
import sys
import tempfile
import threading

from . import aot
from .capi import ffi, load
from .errors import CompileError

OUTPUTS = ("llvm", "mlir", "shared")

# The dialects graphs are written in and the pipeline produces (those of
# moecomm::registerAllDialects, as in moecomm-opt); each pass loads the
# dialects it creates.
_DIALECTS = ("moecomm", "func", "arith", "math", "tensor", "memref", "bufferization",
             "scf", "linalg", "llvm", "shard")
_SEVERITIES = {0: "error", 1: "warning", 2: "note", 3: "remark"}
_LOG_LEVELS = {"warning": logging.WARNING, "remark": logging.INFO}
# mlirModuleCreateParse names its buffer "-"; locations in it are reported
# under compile()'s source_name instead.
_PARSED_BUFFER = "-"

_log = logging.getLogger("moecomm.compile")
_lock = threading.Lock()
# Whether this thread is inside compile()'s compilation: only its own
# diagnostic handlers (the logger's) can call compile() again then.
_compiling = threading.local()


@ffi.callback("void(MlirStringRef, void *)")
def _append_string(string, chunks):
    """MlirStringCallback: the printers call it with pieces of their output."""
    ffi.from_handle(chunks).append(ffi.unpack(string.data, string.length))


@ffi.callback("MlirLogicalResult(MlirDiagnostic, void *)")
def _on_diagnostic(diagnostic, diagnostics):
    """MlirDiagnosticHandler: records the diagnostic; success stops MLIR
    from printing it to stderr. An exception (a logging handler's) must not
    unwind through MLIR: cffi would print it and go on; it is kept for
    compile() to raise."""
    recorder = ffi.from_handle(diagnostics)
    try:
        recorder.add(diagnostic)
    except BaseException as error:  # KeyboardInterrupt must not cross MLIR either
        recorder.handler_errors.append(error)
    return {"value": 1}


class _Diagnostics:
    """What one compilation's context reported, each diagnostic formatted as
    `<source_name>:LINE:COL: <severity>: <message>` with its notes on the
    following lines."""

    def __init__(self, lib, source_name):
        self.lib = lib
        self.source_name = source_name
        self.errors = []
        # Exceptions raised while reporting a diagnostic (by a handler of
        # the logger), in order.
        self.handler_errors = []

    def printed(self, print_function, value):
        chunks = []
        print_function(value, _append_string, ffi.new_handle(chunks))
        return b"".join(chunks).decode(errors="replace")

    def formatted(self, diagnostic):
        lib = self.lib
        location = lib.mlirDiagnosticGetLocation(diagnostic)
        if lib.mlirLocationIsAFileLineColRange(location):
            name = lib.mlirIdentifierStr(lib.mlirLocationFileLineColRangeGetFilename(location))
            name = ffi.unpack(name.data, name.length).decode(errors="replace")
            where = "{}:{}:{}".format(
                self.source_name if name == _PARSED_BUFFER else name,
                lib.mlirLocationFileLineColRangeGetStartLine(location),
                lib.mlirLocationFileLineColRangeGetStartColumn(location))
        else:  # unknown, fused, call-site or name locations: MLIR's own form
            where = self.printed(lib.mlirLocationPrint, location)
        severity = _SEVERITIES[lib.mlirDiagnosticGetSeverity(diagnostic)]
        lines = [f"{where}: {severity}: {self.printed(lib.mlirDiagnosticPrint, diagnostic)}"]
        for index in range(lib.mlirDiagnosticGetNumNotes(diagnostic)):
            lines.append(self.formatted(lib.mlirDiagnosticGetNote(diagnostic, index)))
        return "\n".join(lines)

    def add(self, diagnostic):
        severity = _SEVERITIES[self.lib.mlirDiagnosticGetSeverity(diagnostic)]
        text = self.formatted(diagnostic)
        if severity == "error":
            self.errors.append(text)
        else:
            _log.log(_LOG_LEVELS.get(severity, logging.INFO), "%s", text)

    def fail(self, step, extra=()):
        """A CompileError for `step` with the errors reported so far."""
        messages = list(extra) + self.errors
        self.errors = []
        return CompileError(step, messages)


@contextlib.contextmanager
def _stderr_to(captured):
    """Sends file descriptor 2 to a temporary file for the block and appends
    what was written there to `captured`. LLVM's option parser reports a
    value it cannot parse (`for the --chunks option: 'x' value invalid for
    long argument!`) on llvm::errs(), fd 2, not through the pipeline
    parser's callback; this keeps it for the CompileError."""
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no fd 2 (a daemon): nothing to keep
        captured.append(b"")
        yield
        return
    with tempfile.TemporaryFile() as capture:
        os.dup2(capture.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            capture.seek(0)
            captured.append(capture.read())


def _string_ref(data):
    """(MlirStringRef, owner): keep `owner` alive while the ref is used."""
    owner = ffi.from_buffer(data)
    return ffi.new("MlirStringRef *", (owner, len(data)))[0], owner


def _pipeline_text(pipeline):
    if not isinstance(pipeline, str):
        raise TypeError(f"pipeline must be a str of moecomm-pipeline options, "
                        f"got {type(pipeline).__name__}")
    # Options are separated by spaces; a newline or tab would become part of
    # a value, and the option parser's message about it would span lines.
    if not pipeline.isprintable():
        raise CompileError("bad pipeline options", [
            f"{pipeline!r}: moecomm-pipeline's options are on one line, separated by "
            "spaces, without control characters"])
    # Braces would end the option list and let the string name other passes.
    if "{" in pipeline or "}" in pipeline:
        raise CompileError("bad pipeline options", [
            f"{pipeline!r}: moecomm-pipeline's options contain no braces "
            "(docs/pipeline.md: e.g. \"ranks=16 ranks-per-node=8 strategy=hierarchical\")"])
    options = pipeline.strip()
    return f"builtin.module(moecomm-pipeline{{{options}}})" if options else \
        "builtin.module(moecomm-pipeline)"


def _lower(lib, source, pipeline, output, source_name):
    """The module `source` (bytes) through moecomm-pipeline{pipeline}: its
    LLVM-dialect text (output "mlir") or LLVM IR text. The first exception a
    logging handler raised meanwhile is raised instead, once the context is
    destroyed (any CompileError as its __context__)."""
    diagnostics = _Diagnostics(lib, source_name)
    try:
        return _lower_reporting(lib, diagnostics, source, pipeline, output)
    finally:
        if diagnostics.handler_errors:
            raise diagnostics.handler_errors[0]


def _lower_reporting(lib, diagnostics, source, pipeline, output):
    """_lower with `diagnostics` recording what the context reports."""
    keep_alive = ffi.new_handle(diagnostics)
    context = lib.mlirContextCreate()
    module = pass_manager = None
    try:
        for dialect in _DIALECTS:
            handle = getattr(lib, f"mlirGetDialectHandle__{dialect}__")()
            lib.mlirDialectHandleRegisterDialect(handle, context)
        lib.mlirRegisterAllLLVMTranslations(context)
        lib.mlirContextAttachDiagnosticHandler(context, _on_diagnostic, keep_alive, ffi.NULL)

        source_ref, source_owner = _string_ref(source)
        module = lib.mlirModuleCreateParse(context, source_ref)
        if module.ptr == ffi.NULL:
            raise diagnostics.fail("cannot parse the module")
        operation = lib.mlirModuleGetOperation(module)

        anchor_ref, anchor_owner = _string_ref(b"builtin.module")
        pass_manager = lib.mlirPassManagerCreateOnOperation(context, anchor_ref)
        pipeline_ref, pipeline_owner = _string_ref(pipeline.encode())
        parser_output, stderr_output = [], []
        with _stderr_to(stderr_output):
            parsed = lib.mlirParsePassPipeline(
                lib.mlirPassManagerGetAsOpPassManager(pass_manager), pipeline_ref,
                _append_string, ffi.new_handle(parser_output))
        if parsed.value == 0:
            # The option parser's line first (it names the value), without
            # the program name LLVM puts before it (none in this process).
            text = b"".join(stderr_output + parser_output).decode(errors="replace")
            messages = [line.strip().removeprefix(": ") for line in text.splitlines()]
            raise diagnostics.fail("bad pipeline options", [line for line in messages if line])
        # Another thread's output to fd 2 meanwhile: not the parser's.
        if stderr_output[0]:
            os.write(2, stderr_output[0])
        if lib.mlirPassManagerRunOnOp(pass_manager, operation).value == 0:
            raise diagnostics.fail("moecomm-pipeline failed")

        if output == "mlir":
            # Ends with a newline, as moecomm-opt prints it.
            return diagnostics.printed(lib.mlirOperationPrint, operation) + "\n"
        llvm_context = lib.LLVMContextCreate()
        try:
            llvm_module = lib.mlirTranslateModuleToLLVMIR(operation, llvm_context)
            if llvm_module == ffi.NULL:
                raise diagnostics.fail("cannot translate to LLVM IR")
            text = lib.LLVMPrintModuleToString(llvm_module)
            try:
                return ffi.string(text).decode(errors="replace")
            finally:
                lib.LLVMDisposeMessage(text)
                lib.LLVMDisposeModule(llvm_module)
        finally:
            lib.LLVMContextDispose(llvm_context)
    finally:
        if pass_manager is not None:
            lib.mlirPassManagerDestroy(pass_manager)
        if module is not None and module.ptr != ffi.NULL:
            lib.mlirModuleDestroy(module)
        lib.mlirContextDestroy(context)


def compile(module_text, pipeline="", output="llvm", path=None, *,
            source_name="<module_text>"):
    """Compiles an MoE graph with moecomm-pipeline.

    module_text: the graph, MLIR text (str, or UTF-8 bytes) in the dialects
    moecomm-opt reads (examples/*.mlir). pipeline: moecomm-pipeline's
    options as moecomm-aot's --pipeline takes them (docs/pipeline.md), e.g.
    "ranks=4 ranks-per-node=2 strategy=hierarchical chunks=2"; "" keeps the
    graph's topology with the defaults. output:

    * "llvm": LLVM IR text (mlirTranslateModuleToLLVMIR) that declares and
      calls the runtime's compiled-graph ABI (moecomm_compiled.h,
      moecomm_rt_*); functions with llvm.emit_c_interface are also defined
      as _mlir_ciface_<name>;
    * "mlir": the LLVM-dialect module the pipeline produced;
    * "shared": a shared library linked with the runtime the package uses,
      as tools/moecomm-aot builds it (llc -O2 to a PIC object, the graph's
      text embedded as moecomm_aot_graph_source, linked by the configured C
      compiler, no run path), written to `path`, which is required; run it
      with `moecomm-run GRAPH --aot PATH` (GRAPH: module_text's file).

    path: where to write the result (text for "llvm" / "mlir", optional): a
    str, bytes or os.PathLike file name (not a file descriptor).
    source_name: the name diagnostics give the text (`NAME:LINE:COL:`).

    Returns the text ("llvm", "mlir") or `path` ("shared"). Raises
    ValueError / TypeError for a bad output, missing path or wrong argument
    type, and CompileError (step and messages) when a step fails: the
    compiler's library or the toolchain missing, the parse (MLIR's
    diagnostics), the pipeline's options (its parser's message), the
    pipeline's run, the translation, llc, the link, or writing `path`, and
    when called from a handler of the logger "moecomm.compile" during a
    compilation (the module docstring). Compiled functions write into their
    arguments' buffers (docs/python.md, "Compiling graphs").
    """
    if output not in OUTPUTS:
        raise ValueError(f"output must be one of {', '.join(OUTPUTS)}, got {output!r}")
    if output == "shared" and path is None:
        raise ValueError("output='shared' needs path=, the library to write")
    # open() would take an int (bool included) as a file descriptor to write
    # to and close.
    if path is not None and not isinstance(path, (str, bytes, os.PathLike)):
        raise TypeError(f"path must be a str, bytes or os.PathLike file name, "
                        f"got {type(path).__name__}")
    if isinstance(module_text, str):
        source = module_text.encode()
    elif isinstance(module_text, (bytes, bytearray, memoryview)):
        source = bytes(module_text)
    else:
        raise TypeError(f"module_text must be str or bytes, got {type(module_text).__name__}")
    pipeline_text = _pipeline_text(pipeline)
    lib, library_path = load()
    if getattr(_compiling, "active", False):
        raise CompileError("called during a compilation", [
            "moecomm.compile() cannot be called from its own diagnostics (a handler of the "
            "logger \"moecomm.compile\"): compile after the call that logged returns"])
    with _lock:
        _compiling.active = True
        try:
            text = _lower(lib, source, pipeline_text, "mlir" if output == "mlir" else "llvm",
                          source_name)
        finally:
            _compiling.active = False
    if output == "shared":
        aot.link_shared(text, source, path, compiler_library=library_path)
        return path
    if path is not None:
        aot.write_output(path, text.encode(), aot.inputs(library_path))
    return text
