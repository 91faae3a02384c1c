# One precompiled header for the code that does not include libtorch: nlohmann_json and the standard headers
# most files include. Measured on one core (GCC 12, -O2 -g1): daemon/runs/run_manager.cpp 22.3 -> 19.3 s,
# providers/guest/guest_machine.cpp 6.8 -> 5.6 s; loading it costs about 1 s where nothing is used. Boost.Asio
# and Beast were tried in it too: their files gained (api/http/http_server.cpp 19 -> 14 s) but a 315 MB header made
# every JSON-only file slower (billing/prices/catalog.cpp 13 -> 14 s), so they stay out. libtorch's is
# workload/CMakeLists.txt's. Targets share it with tsum_pch(TARGET...): all are built with the same flags.
add_library(tsum_pch_json OBJECT ${CMAKE_CURRENT_LIST_DIR}/pch_json.cpp)
target_link_libraries(tsum_pch_json PRIVATE tsum_common nlohmann_json::nlohmann_json)
target_precompile_headers(tsum_pch_json PRIVATE <nlohmann/json.hpp> <algorithm> <chrono> <cstdint> <filesystem>
  <functional> <map> <memory> <optional> <string> <string_view> <utility> <vector>)

function(tsum_pch)
  foreach(target IN LISTS ARGN)
    target_precompile_headers(${target} REUSE_FROM tsum_pch_json)
  endforeach()
endfunction()
