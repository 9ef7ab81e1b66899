// The one source of the precompiled-header libraries (cmake/pch.cmake): they exist to compile
// their header once, and this file gives them something to build.
