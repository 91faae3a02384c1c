// The schema migrations in sql/, compiled in, sorted by their NNNN_ prefix.
#pragma once

#include <span>

#include "common/embedded.h"

namespace tsum::sql {
std::span<const EmbeddedFile> migrations();
}
