# -*- Python -*-
# lit configuration for moecomm's FileCheck tests (run by `check-moecomm` and
# ctest). Tools come from the build tree and from LLVM 22's bin directory.
import os

import lit.formats
from lit.llvm import llvm_config

config.name = "moecomm"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test", ".c"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.moecomm_obj_root, "test", "lit")

llvm_config.with_system_environment(["HOME", "TMPDIR", "PATH"])
llvm_config.use_default_substitutions()

# Our tools first, then LLVM's (FileCheck, not, mlir-translate, ...), then
# the system's (each call prepends).
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.moecomm_tools_dir, append_path=True)

config.substitutions.append(("%moecomm_src", config.moecomm_src_root))
config.substitutions.append(("%moecomm_lib", config.moecomm_lib_dir))
# The build tree (docs tests run commands written as `build/...`).
config.substitutions.append(("%moecomm_obj", config.moecomm_obj_root))
# MLIR's runner libraries (printMemrefF32) for graphs run with mlir-runner.
config.substitutions.append(("%llvm_lib", config.llvm_lib_dir))
config.substitutions.append(("%python", config.python_executable))
# mpirun calls take a lock: several lit workers (and ctest's MPI tests, which
# share the ctest RESOURCE_LOCK "mpi" with this suite) each starting 4-8
# oversubscribed ranks on 2 cores make Open MPI's PMIx start-up time out.
config.substitutions.append(
    ("%mpirun", "flock " + os.path.join(config.test_exec_root, "mpirun.lock") +
     " " + config.mpirun))
# `%check_exit STATUS [--one-line] -- CMD...`: runs CMD, checks its exit status
# (and that stderr is one line), prints its stderr for FileCheck.
config.substitutions.append(
    ("%check_exit", config.python_executable + " " +
     os.path.join(config.moecomm_src_root, "test", "lit", "Inputs", "check_exit.py")))

# Open MPI refuses to run as root without these; tests start their own ranks.
config.environment["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
config.environment["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
config.environment["OMPI_MCA_rmaps_base_oversubscribe"] = "1"

for feature in config.moecomm_features:
    config.available_features.add(feature)
