#pragma once
/// Catch2 for tests that use ATen. ATen pulls in glog, whose CHECK(cond) macro silently replaces
/// Catch's CHECK (assertions then vanish from the report). Include ATen first, drop glog's macro,
/// then let Catch define its own. Use this header instead of <catch2/catch.hpp> in such tests.

#include <ATen/ATen.h>

#undef CHECK
#include <catch2/catch.hpp>
