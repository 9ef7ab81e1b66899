# Precompiled headers for the three costliest headers of a build: <ATen/ATen.h> (about 15 s of
# compiler time in every file that includes it; 27 files do), Catch2's single header (1.6 s in each
# of about 100 test files). Each is compiled once, in a small object library, and reused by every
# target that needs it (REUSE_FROM; the consumers share the flags that matter: same compiler
# options, and their own definitions do not appear in these headers). GCC checks a precompiled
# header before using it (-Winvalid-pch warns when it does not) and otherwise falls back to the
# header itself, so a mismatch costs time, never correctness. LORAFLEET_PCH=OFF turns it off.
# With ccache, set CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime.
option(LORAFLEET_PCH "precompiled headers for ATen and Catch2 (faster fresh builds)" ON)

set(lf_pch_anchor ${CMAKE_CURRENT_LIST_DIR}/pch_anchor.cpp)

# lf_pch_aten: <ATen/ATen.h> for the libraries and programs that include it.
if(LORAFLEET_PCH AND TARGET lf_torch)
  add_library(lf_pch_aten OBJECT ${lf_pch_anchor})
  target_link_libraries(lf_pch_aten PRIVATE lf_torch)
  lf_warnings(lf_pch_aten)
  target_precompile_headers(lf_pch_aten PRIVATE <ATen/ATen.h>)
endif()

# lf_use_aten_pch(TARGET): TARGET's sources start with ATen precompiled.
function(lf_use_aten_pch target)
  if(TARGET lf_pch_aten)
    target_precompile_headers(${target} REUSE_FROM lf_pch_aten)
  endif()
endfunction()

# lf_pch_caf: the CAF headers most actor files include (about 5 s of parsing per file; 37 files).
set(lf_caf_pch_headers <caf/actor_system.hpp> <caf/actor_system_config.hpp> <caf/event_based_actor.hpp>
  <caf/stateful_actor.hpp> <caf/typed_event_based_actor.hpp> <caf/scoped_actor.hpp> <caf/send.hpp>
  <caf/io/middleman.hpp>)
if(LORAFLEET_PCH)
  find_package(CAF REQUIRED COMPONENTS core io)
  add_library(lf_pch_caf OBJECT ${lf_pch_anchor})
  target_link_libraries(lf_pch_caf PRIVATE CAF::core CAF::io)
  # lf_actors' public definition, which every user of CAF here inherits (actors/CMakeLists.txt)
  target_compile_definitions(lf_pch_caf PRIVATE CAF_ENABLE_TYPE_ID_CHECKS)
  lf_warnings(lf_pch_caf)
  target_precompile_headers(lf_pch_caf PRIVATE ${lf_caf_pch_headers})
endif()

# lf_use_caf_pch(TARGET): TARGET's sources start with CAF precompiled.
function(lf_use_caf_pch target)
  if(TARGET lf_pch_caf)
    target_precompile_headers(${target} REUSE_FROM lf_pch_caf)
  endif()
endfunction()
