// Include this instead of <doctest/doctest.h> in tests that use libtorch. libtorch pulls in glog,
// whose CHECK/CHECK_EQ/... macros would silently replace doctest's (aborting on failure and never
// counted), so torch comes first and glog's names are dropped before doctest defines its own.
#pragma once

#include <torch/torch.h>

#undef CHECK
#undef CHECK_EQ
#undef CHECK_NE
#undef CHECK_LT
#undef CHECK_LE
#undef CHECK_GT
#undef CHECK_GE

#include <doctest/doctest.h>
