#include "version.h"

const char *ncsim_version(void)
{
    return "0.1.0";
}
