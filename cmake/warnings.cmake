# Warnings for our own targets: call lf_warnings(target). C++ sources only (nvcc takes other flags).
function(lf_warnings target)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter>)
endfunction()
