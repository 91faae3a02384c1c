// The one doctest main every test executable links (tsum_test_main in tests/CMakeLists.txt), compiled once.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
