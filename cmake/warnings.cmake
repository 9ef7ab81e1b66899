# Compile flags for our own targets. Warnings: call lf_warnings(target). C++ sources only (nvcc
# takes other flags).
# In a unity batch GCC sees each .cpp as an included file, so a class defined in a .cpp with a
# member from that file's anonymous namespace (a pimpl's helpers) draws -Wsubobject-linkage, which
# is meant for headers; it is off for unity targets only (LORAFLEET_UNITY=OFF builds keep it).
function(lf_warnings target)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter>
    $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<BOOL:$<TARGET_PROPERTY:UNITY_BUILD>>>:-Wno-subobject-linkage>)
endfunction()

# lf_release_opt(target FLAG): FLAG (an optimisation level) after the build type's own in Release
# builds, for C++ sources; an empty FLAG keeps the build type's flags. Used by lf_cold below and
# by the tests' lf_test_opt (tests/CMakeLists.txt).
function(lf_release_opt target flag)
  if(flag)
    target_compile_options(${target} PRIVATE $<$<AND:$<CONFIG:Release>,$<COMPILE_LANGUAGE:CXX>>:${flag}>)
  endif()
endfunction()

# Code that runs once per process or per file read, never per token: command-line glue, config and
# checkpoint / adapter parsing, node set-up. In Release it compiles at LORAFLEET_COLD_OPT (-O1),
# about a third faster than -O3 (63 s instead of 92 s for the six targets that use it, each
# compiled alone; docs/benchmarks.md) at no measurable cost to loading a model; the engine,
# kernels, sampler, scheduler and message paths keep -O3.
set(LORAFLEET_COLD_OPT "-O1" CACHE STRING "optimisation flag for start-up / parsing code in Release builds")
function(lf_cold target)
  lf_release_opt(${target} "${LORAFLEET_COLD_OPT}")
endfunction()
