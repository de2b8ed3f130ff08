/* sdl_dyn.c -- opening SDL2 on demand (why: sdl_dyn.h). */
#define _POSIX_C_SOURCE 200809L
#define VIZ_SDL_DYN_IMPL
#include "sdl_dyn.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

viz_sdl_t viz_sdl;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int loaded_ok;
static char load_error[512];

/* The SONAME of Debian's libsdl2-2.0-0, then the development link. */
static const char *const library_names[] = {"libSDL2-2.0.so.0", "libSDL2.so"};

static void load(void)
{
    const char *env = getenv("NCSIM_SDL_LIBRARY");
    void *h = NULL;
    const char *name = NULL, *why = NULL;
    if (env && *env) {
        name = env;
        h = dlopen(env, RTLD_NOW | RTLD_LOCAL);
        why = h ? NULL : dlerror();
    } else {
        for (size_t i = 0; i < sizeof library_names / sizeof *library_names && !h; i++) {
            name = library_names[i];
            h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
            if (!h && !why)
                why = dlerror(); /* the first name's reason is the telling one */
        }
    }
    if (!h) {
        snprintf(load_error, sizeof load_error,
                 "cannot load SDL2 (%s: %s); the viewer needs it: install the libsdl2-2.0-0 "
                 "package, or set NCSIM_SDL_LIBRARY to the library's path",
                 env && *env ? env : library_names[0], why ? why : "not found");
        return;
    }
    /* a pointer read from dlsym's void * through memcpy: ISO C has no conversion from
     * object to function pointers */
#define VIZ_SDL_RESOLVE(f)                                                                         \
    do {                                                                                           \
        void *sym = dlsym(h, #f);                                                                  \
        if (!sym) {                                                                                \
            snprintf(load_error, sizeof load_error,                                                \
                     "%s has no %s: the viewer needs SDL 2.0.18 or later", name, #f);              \
            dlclose(h);                                                                            \
            return;                                                                                \
        }                                                                                          \
        memcpy(&viz_sdl.f, &sym, sizeof sym);                                                      \
    } while (0);
    VIZ_SDL_FUNCTIONS(VIZ_SDL_RESOLVE)
#undef VIZ_SDL_RESOLVE
    loaded_ok = 1;
}

int viz_sdl_load(char *err, size_t errlen)
{
    pthread_once(&once, load);
    if (loaded_ok)
        return 0;
    if (err && errlen)
        snprintf(err, errlen, "%s", load_error);
    return -1;
}
