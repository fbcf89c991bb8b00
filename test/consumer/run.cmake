# Driven by ctest: configure, build and run the consumer project in MODE
# (find_package: install normkit to a prefix first; add_subdirectory: use the source tree).
file(REMOVE_RECURSE ${WORK})
set(prefix ${WORK}/prefix)
set(extra)
if(MODE STREQUAL "find_package")
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${NORMKIT_SOURCE} -B ${WORK}/normkit-build
                          -DNORMKIT_BUILD_TESTS=OFF -DNORMKIT_BUILD_EXAMPLES=OFF -DNORMKIT_BUILD_BENCHMARKS=OFF
                          -DCMAKE_INSTALL_PREFIX=${prefix}
                  RESULT_VARIABLE rc)
  if(rc)
    message(FATAL_ERROR "configuring normkit for install failed")
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} --install ${WORK}/normkit-build RESULT_VARIABLE rc)
  if(rc)
    message(FATAL_ERROR "installing normkit failed")
  endif()
  set(extra -DCMAKE_PREFIX_PATH=${prefix})
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -S ${NORMKIT_SOURCE}/test/consumer -B ${WORK}/build
                        -DNORMKIT_CONSUMER_MODE=${MODE} -DNORMKIT_SOURCE=${NORMKIT_SOURCE}
                        -DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCHS} ${extra}
                RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "configuring the consumer (${MODE}) failed")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK}/build RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "building the consumer (${MODE}) failed")
endif()
execute_process(COMMAND ${WORK}/build/consumer RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "the consumer (${MODE}) did not succeed")
endif()
