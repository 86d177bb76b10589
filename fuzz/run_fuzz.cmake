# run_fuzz.cmake: one `fuzz` test (fuzz/CMakeLists.txt).  Runs FUZZER for
# $AMPSCOPE_FUZZ_SECONDS (default 60) on a fresh copy of INPUTS (the seed
# corpus and the regressions) in WORK/NAME, so nothing is written into the
# source tree; a crash, leak, timeout or out-of-memory fails the test, its
# input saved as WORK/NAME-crash-... (libFuzzer's artifact).
#   cmake -DFUZZER=... -DNAME=... -DMAX_LEN=... -DINPUTS=dir;dir -DWORK=... -P run_fuzz.cmake
set(seconds 60)
if(DEFINED ENV{AMPSCOPE_FUZZ_SECONDS})
  set(seconds $ENV{AMPSCOPE_FUZZ_SECONDS})
endif()
if(NOT seconds MATCHES "^[1-9][0-9]*$")
  message(FATAL_ERROR "AMPSCOPE_FUZZ_SECONDS must be a positive number of seconds, not '${seconds}'")
endif()
set(corpus ${WORK}/${NAME})
file(REMOVE_RECURSE ${corpus})
file(MAKE_DIRECTORY ${corpus})
foreach(dir IN LISTS INPUTS)
  file(GLOB files LIST_DIRECTORIES false ${dir}/*)
  file(COPY ${files} DESTINATION ${corpus})
endforeach()
# fuzz/dict/NAME.dict: the format's keywords, which mutation alone finds slowly.
set(dict)
if(EXISTS ${CMAKE_CURRENT_LIST_DIR}/dict/${NAME}.dict)
  set(dict -dict=${CMAKE_CURRENT_LIST_DIR}/dict/${NAME}.dict)
endif()
execute_process(COMMAND ${FUZZER} -max_total_time=${seconds} -max_len=${MAX_LEN} -timeout=25
                        -rss_limit_mb=2048 -print_final_stats=1 ${dict}
                        -artifact_prefix=${WORK}/${NAME}- ${corpus}
                RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "fuzz_${NAME}: libFuzzer exited with ${status}: see the crash input "
                      "${WORK}/${NAME}-* and add it to fuzz/regress/${NAME}/ with the fix")
endif()
