/*
 * status.h -- status codes shared by every ncsim library, and the exit codes they map to.
 *
 * Library code returns these; only the command line turns them into process exit codes
 * (shared/spec/CLI.md, "Exit codes"). The table itself (NCSIM_STATUS_MAP) is part of the public
 * API and lives in include/ncsim.h, which depends on nothing: it is the lowest layer.
 */
#ifndef NCSIM_STATUS_H
#define NCSIM_STATUS_H

#include "ncsim.h"

#endif
