# FindCAF: the C++ Actor Framework 0.17 as Debian's libcaf-dev installs it (no CMake config there).
#
# Components: core (always), io, openssl.
# Defines imported targets CAF::core, CAF::io, CAF::openssl and CAF_FOUND.
find_path(CAF_INCLUDE_DIR caf/all.hpp)
set(_caf_components core ${CAF_FIND_COMPONENTS})
list(REMOVE_DUPLICATES _caf_components)
set(_caf_required CAF_INCLUDE_DIR)
foreach(comp IN LISTS _caf_components)
  find_library(CAF_${comp}_LIBRARY NAMES caf_${comp})
  list(APPEND _caf_required CAF_${comp}_LIBRARY)
  if(CAF_${comp}_LIBRARY AND NOT TARGET CAF::${comp})
    add_library(CAF::${comp} UNKNOWN IMPORTED)
    set_target_properties(CAF::${comp} PROPERTIES
      IMPORTED_LOCATION "${CAF_${comp}_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${CAF_INCLUDE_DIR}")
    if(NOT comp STREQUAL "core")
      set_property(TARGET CAF::${comp} APPEND PROPERTY INTERFACE_LINK_LIBRARIES CAF::core)
    endif()
  endif()
endforeach()
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(CAF REQUIRED_VARS ${_caf_required})
mark_as_advanced(CAF_INCLUDE_DIR)
