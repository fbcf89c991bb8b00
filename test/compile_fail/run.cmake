# ctest: compiles SOURCE with the CUDA compiler and passes only if that fails
# with a diagnostic containing EXPECT (a static_assert's message).
execute_process(
  COMMAND ${COMPILER} -std=c++17 -arch=sm_${ARCH} -I${INCLUDE} -c ${SOURCE} -o ${WORK}/compile_fail.o
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0)
  message(FATAL_ERROR "${SOURCE} compiled; it must not")
endif()
string(FIND "${out}${err}" "${EXPECT}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "${SOURCE} failed without the expected message \"${EXPECT}\":\n${out}${err}")
endif()
message(STATUS "refused as expected: ${EXPECT}")
