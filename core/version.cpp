#include <mneme/core/version.h>

namespace mneme {

const char *version()
{
    return MNEME_VERSION_STR;
}

} // namespace mneme
