# cmake -P script: install BUILD_DIR into WORK_DIR/prefix, build the consumer
# projects against it (C++, C, and C++ with MPI) and run them, then run the
# installed programs. Every program runs without LD_LIBRARY_PATH: the
# installed files must find their libraries themselves (run paths). Fails on the first failing step.
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
set(build ${WORK_DIR}/build)

# expect(<status> <regex> COMMAND...): runs COMMAND, which must exit with
# <status> and print (stdout and stderr together) something matching <regex>.
function(expect status regex)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=LD_LIBRARY_PATH ${ARGN}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  list(JOIN ARGN " " command)
  message("$ ${command}\n${out}")
  if(NOT rc STREQUAL status)
    message(FATAL_ERROR "exit status ${rc}, expected ${status}: ${command}")
  endif()
  if(NOT regex STREQUAL "" AND NOT out MATCHES "${regex}")
    message(FATAL_ERROR "no match for '${regex}' in the output of: ${command}")
  endif()
endfunction()

expect(0 "" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
expect(0 "" ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${build} -G ${GENERATOR}
       -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_PREFIX_PATH=${prefix})
expect(0 "" ${CMAKE_COMMAND} --build ${build})

# The dialect alone; the passes and pipeline through InitAll.
expect(0 "#moecomm.topology<ranks = 16, ranks_per_node = 8, experts = 256> !moecomm.handle<ranks = 16, ranks_per_node = 8, experts = 256> local_experts=16 nodes=2"
       ${build}/consumer)
expect(0 "moecomm-pipeline: LLVM dialect only, [1-9][0-9]* calls into the runtime"
       ${build}/consumer-pipeline ${SOURCE_DIR}/graph.mlir)

# The C API alone (project-c, a C project): moecomm-pipeline run from C on
# the graph, then translated to LLVM IR (test/capi/pipeline.c).
set(build_c ${WORK_DIR}/build-c)
expect(0 "" ${CMAKE_COMMAND} -S ${SOURCE_DIR}-c -B ${build_c} -G ${GENERATOR}
       -DCMAKE_C_COMPILER=${CC} -DCMAKE_PREFIX_PATH=${prefix})
expect(0 "" ${CMAKE_COMMAND} --build ${build_c})
expect(0 "ops outside the LLVM dialect: 0, calls into the runtime: [1-9][0-9]*\n.*status: 0\n$"
       ${build_c}/consumer-capi ${SOURCE_DIR}/graph.mlir)

# moecomm_mpi.h and Reference.h with their libraries (project-mpi), under
# mpirun, when the package has the MPI backend.
if(MPIEXEC)
  set(build_mpi ${WORK_DIR}/build-mpi)
  expect(0 "" ${CMAKE_COMMAND} -S ${SOURCE_DIR}-mpi -B ${build_mpi} -G ${GENERATOR}
         -DCMAKE_C_COMPILER=${CC} -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_PREFIX_PATH=${prefix})
  expect(0 "" ${CMAKE_COMMAND} --build ${build_mpi})
  expect(0 "mpi comm size=1 \\(success\\) reference rows=3"
         ${CMAKE_COMMAND} -E env OMPI_ALLOW_RUN_AS_ROOT=1
         OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
         ${MPIEXEC} -n 1 ${build_mpi}/consumer-runtime-mpi)
endif()

# The installed Python package (docs/python.md) finds the installed runtime
# library and moecomm.h by itself: only PYTHONPATH is set.
expect(0 "rank 3: received [0-9]+ rows[^\n]*verified"
       ${CMAKE_COMMAND} -E env --unset=MOECOMM_RUNTIME_LIBRARY
       PYTHONPATH=${prefix}/${LIBDIR}/python3/dist-packages PYTHONDONTWRITEBYTECODE=1
       ${PYTHON} ${PYTHON_EXAMPLE})
# Its compile() finds the installed libMoEComm-C.so and toolchain.py as well;
# the shared library it links runs in the installed moecomm-run.
expect(0 "shared library: [^\n]*libmixtral.so\n.*verified +yes"
       ${CMAKE_COMMAND} -E env --unset=MOECOMM_RUNTIME_LIBRARY --unset=MOECOMM_C_LIBRARY
       PYTHONPATH=${prefix}/${LIBDIR}/python3/dist-packages PYTHONDONTWRITEBYTECODE=1
       MOECOMM_RUN=${prefix}/bin/moecomm-run
       ${PYTHON} ${PYTHON_COMPILE_EXAMPLE} ${WORK_DIR}/compile-example)

# The installed programs start; moecomm-run exits 0 when its (tiny, default)
# run verified.
expect(0 "LLVM version 22" ${prefix}/bin/moecomm-opt --version)
expect(0 "moecomm-bench" ${prefix}/bin/moecomm-bench --help)
expect(0 "" ${prefix}/bin/moecomm-run --quiet)

# The graph compiled by moecomm_add_aot_graph, and by the installed
# moecomm-aot, runs in the installed moecomm-run and verifies.
set(run ${prefix}/bin/moecomm-run ${SOURCE_DIR}/graph.mlir --ranks 4
    --ranks-per-node 2 --experts 8 --topk 2 --hidden 64 --tokens 5 --quiet)
expect(0 "" ${run} --aot ${build}/libconsumer_graph.so)
expect(0 "" ${prefix}/bin/moecomm-aot ${SOURCE_DIR}/graph.mlir
       -o ${WORK_DIR}/libgraph.so --pipeline "ranks=4 ranks-per-node=2 strategy=flat")
expect(0 "" ${run} --aot ${WORK_DIR}/libgraph.so)
# Bad input: one line, exit status 2.
expect(2 "^moecomm-aot: error: [^\n]*\n$" ${prefix}/bin/moecomm-aot
       ${SOURCE_DIR}/graph.mlir -o ${WORK_DIR}/no/such/dir/lib.so)
expect(2 "^moecomm-aot: error: [^\n]*\n$" ${prefix}/bin/moecomm-aot
       ${SOURCE_DIR}/graph.mlir -o ${WORK_DIR}/lib.so --pipeline "ranks=three")
