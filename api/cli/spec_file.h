// A spec file a command reads (-f): JSON, or YAML when its name ends in .yaml or .yml, into the same JSON, so
// both have the same fields and the daemon gives the same errors. A file that does not parse is an error naming
// the file, the line and the column.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "common/result.h"

namespace tsum::api {

// `text` as JSON; `name` (the file's) chooses YAML by its suffix and names the file in errors.
Result<nlohmann::json> parse_spec(const std::string& text, const std::string& name);

}  // namespace tsum::api
