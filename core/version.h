#pragma once

// The version of Mneme a program was compiled against (the macros) and runs with (version()).

#include <mneme/core/export.h>

// "0.2.0"
#define MNEME_VERSION_STR "0.2.0"
// 0x000200: major, minor and patch in one byte each, comparable with MNEME_VERSION_CHECK.
#define MNEME_VERSION_MAJOR 0
#define MNEME_VERSION_MINOR 2
#define MNEME_VERSION_PATCH 0
#define MNEME_VERSION_CHECK(major, minor, patch) (((major) << 16) | ((minor) << 8) | (patch))
#define MNEME_VERSION MNEME_VERSION_CHECK(MNEME_VERSION_MAJOR, MNEME_VERSION_MINOR, MNEME_VERSION_PATCH)

namespace mneme {

// The version of the libmneme_core loaded at run time, such as "0.2.0" (MNEME_VERSION_STR is the one
// the program was compiled against).
MNEME_CORE_EXPORT const char *version();

} // namespace mneme
