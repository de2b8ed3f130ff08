/*
 * text.h -- the small string helpers every layer above isa/ used to repeat.
 */
#ifndef NCSIM_MODELS_TEXT_H
#define NCSIM_MODELS_TEXT_H

#include <stddef.h>

/* Format a message into err (at most errlen bytes, always terminated); nothing when err is
 * NULL or errlen is 0. */
void mdl_errf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* A malloc'd copy of s (NULL when out of memory). */
char *mdl_strdup(const char *s);

#endif
