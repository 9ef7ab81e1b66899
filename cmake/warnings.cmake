# Warnings for our own targets: call lf_warnings(target). C++ sources only (nvcc takes other flags).
function(lf_warnings target)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter>)
endfunction()

# Code that runs once per process or per file read, never per token: command-line glue, config and
# checkpoint / adapter parsing, node set-up. In Release it compiles at LORAFLEET_COLD_OPT (-O1),
# about a third faster than -O3 (29 of 92 s for the six targets that use it, on 2 cores) at no
# measurable cost to start-up; the engine, kernels, sampler, scheduler and message paths keep -O3.
# LORAFLEET_COLD_OPT="" keeps the build type's flags.
set(LORAFLEET_COLD_OPT "-O1" CACHE STRING "optimisation flag for start-up / parsing code in Release builds")
function(lf_cold target)
  if(LORAFLEET_COLD_OPT)
    target_compile_options(${target} PRIVATE $<$<AND:$<CONFIG:Release>,$<COMPILE_LANGUAGE:CXX>>:${LORAFLEET_COLD_OPT}>)
  endif()
endfunction()
