# The emulator's tests.  Included by tests/CMakeLists.txt.
#
#   ctest -L unit -j2          every unit test (a few minutes on two cores)
#   ctest -L exhaustive -j2    all fp16/bf16 operand pairs and all fp32 inputs of the
#                              f32 -> f16/bf16 conversions, 8 shards per operation; all fp32
#                              inputs of the array rounding (test_chop_exhaustive); all
#                              fp16/bf16 pairs of the array arithmetic (test_array_exhaustive);
#                              all fp32 inputs of sqrt against the hardware (test_f32_sqrt_exhaustive)
#
# Knobs (environment): AMPSCOPE_TEST_SEED (default 20240601), AMPSCOPE_TEST_RANDOM
# (random cases per operation, format and mode; default 1000000).

# ---- the references -----------------------------------------------------------
# ampscope_oracle (the MPFR oracle and the fast oracle) is the library in
# oracle/: `ampscope emu verify` links it too, with or without tests.

# What the tests share: the emulator called through the oracle's operation codes,
# the mismatch printer, operand generators.
add_library(ampscope_test_support STATIC support/test_support.c)
target_link_libraries(ampscope_test_support PUBLIC ampscope_oracle ampscope_emu m)
target_include_directories(ampscope_test_support PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/support)

# One more ctest entry for an executable that already exists (other arguments).
function(add_ampscope_test_entry)
  cmake_parse_arguments(T "" "NAME;TARGET;TIMEOUT" "LABELS;ARGS" ${ARGN})
  if(NOT T_LABELS)
    set(T_LABELS unit)
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 1500)
  endif()
  add_test(NAME ${T_NAME} COMMAND ${T_TARGET} ${T_ARGS})
  set_tests_properties(${T_NAME} PROPERTIES LABELS "${T_LABELS}" SKIP_RETURN_CODE 77
                       TIMEOUT ${T_TIMEOUT})
endfunction()

set(AMPSCOPE_EMU_TEST_LIBS ampscope_test_support ampscope_oracle ampscope_emu PkgConfig::MPFR m)

# ---- unit ------------------------------------------------------------------------
add_ampscope_test(NAME test_oracle SOURCES test_oracle.c LIBS ${AMPSCOPE_EMU_TEST_LIBS}
                  TIMEOUT 900)
add_ampscope_test(NAME test_philox SOURCES test_philox.c LIBS ampscope_emu TIMEOUT 300)
add_ampscope_test(NAME test_emulate_compare SOURCES test_emulate_compare.c
                  LIBS ${AMPSCOPE_EMU_TEST_LIBS} TIMEOUT 900)
add_ampscope_test(NAME test_emulate_options SOURCES test_emulate_options.c
                  LIBS ${AMPSCOPE_EMU_TEST_LIBS} TIMEOUT 900)
add_ampscope_test(NAME test_emulate_stochastic SOURCES test_emulate_stochastic.c
                  LIBS ${AMPSCOPE_EMU_TEST_LIBS} TIMEOUT 900)
add_ampscope_test(NAME test_chop SOURCES test_chop.c LIBS ${AMPSCOPE_EMU_TEST_LIBS}
                  TIMEOUT 900)
# the array path's vector loop against the scalar conversion (every mode, edge inputs)
add_ampscope_test(NAME test_chop_scalar SOURCES test_chop_scalar.c LIBS ${AMPSCOPE_EMU_TEST_LIBS}
                  TIMEOUT 900)
add_ampscope_test(NAME test_emulate_convert SOURCES test_emulate_convert.c
                  LIBS ${AMPSCOPE_EMU_TEST_LIBS} TIMEOUT 900)
# fp32 sqrt's portable code (its host path: emulate/scalar_host.h)
add_ampscope_test_entry(NAME test_emulate_convert_portable TARGET test_emulate_convert
                        TIMEOUT 900)
set_tests_properties(test_emulate_convert_portable PROPERTIES ENVIRONMENT AMPSCOPE_EMU_PORTABLE=1)

# Every fp16 and bf16 input of every unary operation, one entry per format.
add_executable(test_emulate_unary test_emulate_unary.c)
target_link_libraries(test_emulate_unary PRIVATE ${AMPSCOPE_EMU_TEST_LIBS} PkgConfig::CHECK)
foreach(fmt fp16 bf16)
  add_ampscope_test_entry(NAME test_emulate_unary_${fmt} TARGET test_emulate_unary
                          ARGS ${fmt} TIMEOUT 900)
endforeach()
foreach(fmt fp16 bf16) # sqrt's portable code (see the host paths below)
  add_ampscope_test_entry(NAME test_emulate_unary_${fmt}_portable TARGET test_emulate_unary
                          ARGS ${fmt} TIMEOUT 900)
  set_tests_properties(test_emulate_unary_${fmt}_portable PROPERTIES
                       ENVIRONMENT AMPSCOPE_EMU_PORTABLE=1)
endforeach()

# add, sub, mul, div, mulAdd: special-value tables and random operands, one entry
# per format and operation so that ctest -j spreads them.
add_executable(test_emulate_arith test_emulate_arith.c)
target_link_libraries(test_emulate_arith PRIVATE ${AMPSCOPE_EMU_TEST_LIBS} PkgConfig::CHECK)
foreach(fmt fp16 bf16 fp32)
  foreach(op add sub mul div mulAdd)
    add_ampscope_test_entry(NAME test_emulate_arith_${fmt}_${op} TARGET test_emulate_arith
                            ARGS ${fmt} ${op} TIMEOUT 900)
  endforeach()
endforeach()
# add, sub, mul, div, sqrt and fp32 mulAdd have host paths (emulate/scalar_host.h: fp16 on
# F16C, bf16 and fp32 through binary64) where the CPU has them; the entries above test the path
# the host takes, these the portable code
foreach(case fp16_add fp16_sub fp16_mul fp16_div bf16_add bf16_sub bf16_mul bf16_div
             fp32_add fp32_sub fp32_mul fp32_div fp32_mulAdd)
  string(REPLACE "_" ";" fmt_op ${case})
  add_ampscope_test_entry(NAME test_emulate_arith_${case}_portable TARGET test_emulate_arith
                          ARGS ${fmt_op} TIMEOUT 900)
  set_tests_properties(test_emulate_arith_${case}_portable PROPERTIES
                       ENVIRONMENT AMPSCOPE_EMU_PORTABLE=1)
endforeach()

# ---- exhaustive (opt-in: ctest -L exhaustive) -----------------------------------
add_executable(test_emulate_exhaustive test_emulate_exhaustive.c)
target_link_libraries(test_emulate_exhaustive PRIVATE ampscope_oracle ampscope_emu m)
target_compile_options(test_emulate_exhaustive PRIVATE -O3)
set(AMPSCOPE_EXHAUSTIVE_SHARDS 8)
math(EXPR _last_shard "${AMPSCOPE_EXHAUSTIVE_SHARDS} - 1")
foreach(op f16_add f16_sub f16_mul f16_div bf16_add bf16_sub bf16_mul bf16_div
           f32_to_f16 f32_to_bf16)
  foreach(shard RANGE 0 ${_last_shard})
    add_ampscope_test_entry(NAME test_emulate_exhaustive_${op}_${shard}
                            TARGET test_emulate_exhaustive
                            ARGS --op ${op} --shard ${shard}/${AMPSCOPE_EXHAUSTIVE_SHARDS}
                            LABELS exhaustive TIMEOUT 7200)
  endforeach()
endforeach()

# fp32 sqrt over all 2^32 inputs against the hardware's (x86 SSE) in every deterministic mode.
add_executable(test_f32_sqrt_exhaustive test_f32_sqrt_exhaustive.c)
target_link_libraries(test_f32_sqrt_exhaustive PRIVATE ampscope_emu m)
target_compile_options(test_f32_sqrt_exhaustive PRIVATE -O2)
foreach(shard RANGE 0 ${_last_shard})
  add_ampscope_test_entry(NAME test_f32_sqrt_exhaustive_${shard} TARGET test_f32_sqrt_exhaustive
                          ARGS --shard ${shard}/${AMPSCOPE_EXHAUSTIVE_SHARDS}
                          LABELS exhaustive TIMEOUT 7200)
endforeach()

# The array rounding against the scalar conversion over all 2^32 binary32 inputs.
add_executable(test_chop_exhaustive test_chop_exhaustive.c)
target_link_libraries(test_chop_exhaustive PRIVATE ampscope_emu m)
target_compile_options(test_chop_exhaustive PRIVATE -O3)
foreach(fmt fp16 bf16)
  foreach(shard RANGE 0 ${_last_shard})
    add_ampscope_test_entry(NAME test_chop_exhaustive_${fmt}_${shard}
                            TARGET test_chop_exhaustive
                            ARGS --format ${fmt} --shard ${shard}/${AMPSCOPE_EXHAUSTIVE_SHARDS}
                            LABELS exhaustive TIMEOUT 7200)
  endforeach()
endforeach()

# The array arithmetic (issue 19) against the scalar operations: one entry per format and
# operation (every mode and setting, special pairs, random arrays; sqrt: all inputs).
add_executable(test_array_ops test_array_ops.c)
target_link_libraries(test_array_ops PRIVATE ${AMPSCOPE_EMU_TEST_LIBS} PkgConfig::CHECK)
foreach(fmt fp16 bf16)
  foreach(op add sub mul div fma sqrt)
    add_ampscope_test_entry(NAME test_array_ops_${fmt}_${op} TARGET test_array_ops
                            ARGS ${fmt} ${op} TIMEOUT 900)
  endforeach()
endforeach()

# The array arithmetic over every fp16/bf16 operand pair (add, mul, div; near_even and
# minMag), 8 shards per format and operation.  sub is add with b negated in the same vector
# loop (test_array_ops checks it in every setting).
add_executable(test_array_exhaustive test_array_exhaustive.c)
target_link_libraries(test_array_exhaustive PRIVATE ampscope_emu m)
target_compile_options(test_array_exhaustive PRIVATE -O3)
foreach(fmt fp16 bf16)
  foreach(op add mul div)
    foreach(shard RANGE 0 ${_last_shard})
      add_ampscope_test_entry(NAME test_array_exhaustive_${fmt}_${op}_${shard}
                              TARGET test_array_exhaustive
                              ARGS --format ${fmt} --op ${op}
                                   --shard ${shard}/${AMPSCOPE_EXHAUSTIVE_SHARDS}
                              LABELS exhaustive TIMEOUT 7200)
    endforeach()
  endforeach()
endforeach()
