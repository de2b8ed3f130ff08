#ifndef NCSIM_VERSION_H
#define NCSIM_VERSION_H
/* Version string of this build of ncsim. */
const char *ncsim_version(void);
#endif
