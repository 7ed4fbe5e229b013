"""moecomm.compile: an example graph through moecomm-pipeline to LLVM IR and
LLVM-dialect MLIR (the same text moecomm-opt and mlir-translate give), to a
shared library that moecomm-run --aot runs on threads and verifies against
its oracle, and every error as a CompileError with the message of the step
that failed, nothing printed to stderr.

The ctest (test/python/CMakeLists.txt) sets MOECOMM_C_LIBRARY and the paths
of the build's moecomm-run (MOECOMM_RUN), moecomm-opt (MOECOMM_OPT) and
mlir-translate (MOECOMM_MLIR_TRANSLATE)."""

import ctypes
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

import moecomm

SOURCE = Path(__file__).resolve().parents[2]
GRAPH = SOURCE / "examples" / "mixtral-8x7b.mlir"
TEXT = GRAPH.read_text()
PIPELINE = "ranks=4 ranks-per-node=2 strategy=hierarchical"
BAD_IR = "func.func @f(%x: i32) {\n  %y = arith.addi %x, %z : i32\n}\n"


def moecomm_run(*args):
    return subprocess.run([os.environ["MOECOMM_RUN"], *map(str, args)],
                          capture_output=True, text=True)


def test_llvm_ir_is_the_tools_output_and_calls_the_runtime():
    ir = moecomm.compile(TEXT, PIPELINE)
    assert "declare void @moecomm_rt_wait(ptr)" in ir
    assert "call ptr @moecomm_rt_layout_i32(" in ir
    assert "@moe_layer(" in ir and "@_mlir_ciface_training_step(" in ir
    opt = subprocess.run([os.environ["MOECOMM_OPT"], str(GRAPH),
                          f"--moecomm-pipeline={PIPELINE}"],
                         capture_output=True, text=True, check=True).stdout
    translated = subprocess.run([os.environ["MOECOMM_MLIR_TRANSLATE"], "--mlir-to-llvmir"],
                                input=opt, capture_output=True, text=True, check=True).stdout
    assert ir == translated
    assert moecomm.compile(TEXT, PIPELINE, output="mlir") == opt


def test_text_written_to_path(tmp_path):
    path = tmp_path / "graph.ll"
    ir = moecomm.compile(TEXT.encode(), PIPELINE, path=path)
    assert path.read_text() == ir


def test_shared_library_runs_under_moecomm_run(tmp_path):
    library = tmp_path / "libmixtral.so"
    assert moecomm.compile(TEXT, PIPELINE, output="shared", path=library) == library
    # The graph's text is embedded as moecomm-aot embeds it. The library
    # needs the runtime by soname, which this process has loaded.
    loaded = ctypes.CDLL(str(library))
    size = ctypes.c_int64.in_dll(loaded, "moecomm_aot_graph_source_size").value
    embedded = ctypes.string_at(ctypes.addressof(
        ctypes.c_char.in_dll(loaded, "moecomm_aot_graph_source")), size)
    assert embedded == TEXT.encode()
    for entry in ("moe_layer", "training_step"):
        run = moecomm_run(GRAPH, "--aot", library, "--entry", entry, "--config",
                          "mixtral-8x7b", "--ranks", 4, "--ranks-per-node", 2, "--tokens", 5)
        assert run.returncode == 0, run.stdout + run.stderr
        assert "backend threads" in run.stdout
        assert "strategy hierarchical (built into the library)" in run.stdout
        assert "verified                yes" in run.stdout
    # Another graph's @moe_layer has another type: moecomm-run refuses the
    # library, having read the embedded text.
    other = moecomm_run(SOURCE / "examples" / "deepseek-v3.mlir", "--aot", library,
                        "--config", "deepseek-v3", "--ranks", 4, "--ranks-per-node", 2)
    assert other.returncode == 2
    assert "was built from a graph whose @moe_layer has type" in other.stderr


def test_imported_jax_layer_runs_under_moecomm_run(tmp_path):
    # A JAX-style layer whose ragged all-to-alls moecomm-opt imported
    # (docs/pipeline.md): its runtime checks call the runtime.
    inputs = SOURCE / "test" / "lit" / "tools" / "moecomm-run" / "Inputs"
    imported = tmp_path / "imported.mlir"
    subprocess.run([os.environ["MOECOMM_OPT"], str(inputs / "graph-jax-ragged.mlir"),
                    "--moecomm-import-ragged-all-to-all", "-o", str(imported)], check=True)
    library = tmp_path / "libjax.so"
    # Its routing is 2 nodes x 2 ranks.
    moecomm.compile(imported.read_text(), "ranks=4 ranks-per-node=2", output="shared",
                    path=library)
    for entry in ("moe_layer", "moe_layer_rules"):
        run = moecomm_run(imported, "--aot", library, "--entry", entry,
                          "--routing", inputs / "routing-jax-ragged.json")
        assert run.returncode == 0, run.stdout + run.stderr
        assert "verified                yes" in run.stdout


def test_remarks_go_to_the_logger(caplog, capfd):
    with caplog.at_level(logging.INFO, logger="moecomm.compile"):
        moecomm.compile(TEXT, PIPELINE + " chunks=2")
    assert any(": remark: moecomm-schedule-overlap: not chunked: it uses tokens_per_expert"
               in r.getMessage() for r in caplog.records if r.levelno == logging.INFO)
    assert capfd.readouterr().err == ""


def compile_error(capfd, *args, **kwargs):
    with pytest.raises(moecomm.CompileError) as error:
        moecomm.compile(*args, **kwargs)
    assert capfd.readouterr().err == ""  # captured, not printed
    return error.value


def test_bad_ir(capfd):
    error = compile_error(capfd, BAD_IR, source_name="bad.mlir")
    assert error.step == "cannot parse the module"
    assert error.messages == ["bad.mlir:2:23: error: use of undeclared SSA value name"]
    assert str(error) == ("cannot parse the module: "
                          "bad.mlir:2:23: error: use of undeclared SSA value name")


@pytest.mark.parametrize("options, message", [
    ("chunks=0", "moecomm-pipeline: chunks must be in [1, 64], got 0"),
    ("chunks=x", "for the --chunks option: 'x' value invalid for long argument!"),
    ("strategy=best", "for the --strategy option: Cannot find option named 'best'!"),
    ("bogus=1", "moecomm-pipeline: no such option bogus"),
    ("ranks=4} canonicalize{", "moecomm-pipeline's options contain no braces"),
    # MLIR's option parser would skip a nameless option and keep the last of
    # a repeated one: both are refused.
    ("=", "moecomm-pipeline: an option without a name; options are NAME=VALUE"),
    ("=4", "moecomm-pipeline: an option without a name; options are NAME=VALUE"),
    (" = ", "moecomm-pipeline: an option without a name; options are NAME=VALUE"),
    ("==", "moecomm-pipeline: an option without a name; options are NAME=VALUE"),
    ("ranks=4 ranks=8", "moecomm-pipeline: option ranks given twice"),
    ("ranks=4\nchunks=2", "moecomm-pipeline's options are on one line"),
])
def test_bad_pipeline_options(capfd, options, message):
    error = compile_error(capfd, TEXT, options)
    assert error.step == "bad pipeline options"
    assert message in error.messages[0]


def test_control_characters_in_pipeline_options(capfd):
    """A tab or newline would end up in a value, and the option parser's
    message about it would span lines (messages)."""
    error = compile_error(capfd, TEXT, "ranks=4\tchunks=2")
    assert error.messages == [
        "'ranks=4\\tchunks=2': moecomm-pipeline's options are on one line, separated by "
        "spaces, without control characters"]


def with_module_attributes(attributes):
    """The graph as an explicit module with `attributes` (its attribute
    aliases stay before it)."""
    body = TEXT.index("\nfunc.func")
    return f"{TEXT[:body]}\nmodule attributes {{{attributes}}} {{{TEXT[body:]}}}\n"


def test_module_attributes_the_translation_would_crash_on(capfd):
    """MLIR's translation casts llvm.target_triple & co. unchecked (a crash
    of this process); moecomm-pipeline's first pass refuses them."""
    for attribute, message in [
            ("llvm.target_triple = 5 : i32",
             "module attribute 'llvm.target_triple' must be a string (the target triple), "
             "got 5 : i32"),
            ("llvm.dependent_libraries = [1]",
             "module attribute 'llvm.dependent_libraries' must be an array of strings"),
    ]:
        for output in ("llvm", "mlir"):
            error = compile_error(capfd, with_module_attributes(attribute), PIPELINE,
                                  output=output)
            assert error.step == "moecomm-pipeline failed"
            assert len(error.messages) == 1
            assert error.messages[0].startswith(f"<module_text>:34:1: error: {message}")
    # llvm.data_layout is checked by the LLVM dialect's verifier, at the parse.
    error = compile_error(capfd, "module attributes {llvm.data_layout = 5} {}")
    assert error.step == "cannot parse the module"
    assert "expected 'llvm.data_layout' to be a string" in error.messages[0]
    ir = moecomm.compile(with_module_attributes('llvm.target_triple = "x86_64-unknown-linux-gnu"'),
                         PIPELINE)
    assert 'target triple = "x86_64-unknown-linux-gnu"' in ir


def test_topology_the_graph_cannot_take(capfd):
    error = compile_error(capfd, TEXT, "ranks=3 ranks-per-node=2")
    assert error.step == "moecomm-pipeline failed"
    assert error.messages[0].startswith(
        "<module_text>:36:55: error: cannot retarget 8 ranks x 8 per node to 3 ranks x 2 "
        "per node: ranks (3) must be a multiple of ranks_per_node (2)")


@pytest.mark.parametrize("output", ["llvm", "shared"])
def test_unwritable_path(capfd, tmp_path, output):
    missing = tmp_path / "no" / "lib.so"
    error = compile_error(capfd, TEXT, PIPELINE, output=output, path=missing)
    assert str(error) == f"cannot write {missing}: No such file or directory"
    error = compile_error(capfd, TEXT, PIPELINE, output=output, path="/dev/full")
    assert str(error) == "cannot write /dev/full: No space left on device"
    error = compile_error(capfd, TEXT, PIPELINE, output=output, path=tmp_path)
    assert str(error) == f"cannot write {tmp_path}: Is a directory"


def test_loaded_libraries_are_not_overwritten(capfd, tmp_path):
    runtime = Path(moecomm.library_path)
    before = runtime.read_bytes()
    link = tmp_path / "link.so"
    link.symlink_to(runtime)
    error = compile_error(capfd, TEXT, PIPELINE, output="shared", path=link)
    assert error.messages == ["it is the runtime library moecomm loaded; "
                              "write the output elsewhere"]
    error = compile_error(capfd, TEXT, PIPELINE, path=os.environ["MOECOMM_C_LIBRARY"])
    assert error.messages[0].startswith("it is the compiler library")
    assert runtime.read_bytes() == before


def test_bad_arguments():
    with pytest.raises(ValueError, match="output must be one of llvm, mlir, shared, got 'obj'"):
        moecomm.compile(TEXT, PIPELINE, output="obj")
    with pytest.raises(ValueError, match="output='shared' needs path="):
        moecomm.compile(TEXT, PIPELINE, output="shared")
    with pytest.raises(TypeError, match="module_text must be str or bytes, got int"):
        moecomm.compile(3)
    # open() would take an int as a file descriptor, write to it and close it.
    for path in (1, True, 2.5):
        with pytest.raises(TypeError, match="path must be a str, bytes or os.PathLike file "
                                            f"name, got {type(path).__name__}"):
            moecomm.compile("module {}", path=path)
    os.fstat(1)  # still open


class CompilingHandler(logging.Handler):
    """Calls compile() for each record of the logger "moecomm.compile"."""

    def __init__(self):
        super().__init__()
        self.errors = []

    def emit(self, record):
        try:
            moecomm.compile("module {}")
        except moecomm.CompileError as error:
            self.errors.append(error)
            raise


class RaisingHandler(logging.Handler):
    def emit(self, record):
        raise RuntimeError(f"handler failed on {record.getMessage()[:20]}")


@pytest.fixture
def compile_logger():
    """The logger "moecomm.compile" at INFO (the remark of chunks=2 reaches
    it), a handler to add, and as it was afterwards."""
    logger = logging.getLogger("moecomm.compile")
    level = logger.level
    logger.setLevel(logging.INFO)
    added = []
    yield lambda handler: (added.append(handler), logger.addHandler(handler))
    for handler in added:
        logger.removeHandler(handler)
    logger.setLevel(level)


def test_handler_that_compiles_gets_an_error(capfd, compile_logger):
    """compile() from its own diagnostics raises instead of waiting for
    ever on the lock its caller holds; the error reaches the outer call."""
    handler = CompilingHandler()
    compile_logger(handler)
    with pytest.raises(moecomm.CompileError) as error:
        moecomm.compile(TEXT, PIPELINE + " chunks=2")
    assert error.value.step == "called during a compilation"
    assert error.value.messages == [
        "moecomm.compile() cannot be called from its own diagnostics (a handler of the "
        "logger \"moecomm.compile\"): compile after the call that logged returns"]
    assert handler.errors and handler.errors[0] is error.value
    assert capfd.readouterr().err == ""
    # The lock and the flag were released: compile() works again.
    logging.getLogger("moecomm.compile").removeHandler(handler)
    assert "moecomm_rt_wait" in moecomm.compile(TEXT, PIPELINE + " chunks=2")


def test_handler_exception_is_raised_after_the_compilation(capfd, compile_logger):
    compile_logger(RaisingHandler())
    with pytest.raises(RuntimeError, match="handler failed on <module_text>:"):
        moecomm.compile(TEXT, PIPELINE + " chunks=2")
    assert capfd.readouterr().err == ""  # no "Exception ignored from cffi callback"


def run_python(code, **env):
    environment = dict(os.environ, **env)
    return subprocess.run([sys.executable, "-c", code], env=environment,
                          capture_output=True, text=True)


def test_runtime_only():
    """Without the compiler's library `import moecomm` works and compile()
    says what is missing."""
    run = run_python(
        "import moecomm\n"
        "try:\n"
        "    moecomm.compile('')\n"
        "except moecomm.CompileError as error:\n"
        "    print(error)\n",
        MOECOMM_C_LIBRARY="/nonexistent/libMoEComm-C.so")
    assert run.returncode == 0, run.stderr
    assert run.stdout == ("moecomm.compile needs the compiler: moecomm: MOECOMM_C_LIBRARY="
                          "/nonexistent/libMoEComm-C.so: /nonexistent/libMoEComm-C.so "
                          "does not exist\n")


def test_shared_without_the_toolchain_module(tmp_path):
    """The package without its generated toolchain.py (here: the source
    folder alone on the path) compiles text but not a shared library."""
    run = run_python(
        "import sys, moecomm\n"
        f"text = open({str(GRAPH)!r}).read()\n"
        f"assert 'moecomm_rt_wait' in moecomm.compile(text, {PIPELINE!r})\n"
        "try:\n"
        f"    moecomm.compile(text, {PIPELINE!r}, output='shared', path={str(tmp_path / 'x.so')!r})\n"
        "except moecomm.CompileError as error:\n"
        "    print(error.step)\n",
        PYTHONPATH=str(SOURCE / "runtime" / "python"))
    assert run.returncode == 0, run.stderr
    assert run.stdout == "output='shared' needs the configured toolchain\n"
