# Warnings for our own targets: call lf_warnings(target).
function(lf_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wno-unused-parameter)
endfunction()
