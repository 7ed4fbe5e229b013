# cmake -P script: configures SOURCE_DIR into a fresh WORK_DIR with OPTIONS
# (a list of -D flags) and fails with CMake's output when that fails.
file(REMOVE_RECURSE ${WORK_DIR})
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}
    -G ${GENERATOR} -DCMAKE_C_COMPILER=${CC} -DCMAKE_CXX_COMPILER=${CXX}
    ${OPTIONS}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configure with ${OPTIONS} failed (${rc}):\n${out}")
endif()
file(REMOVE_RECURSE ${WORK_DIR})
