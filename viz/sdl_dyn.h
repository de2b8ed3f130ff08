/*
 * sdl_dyn.h -- SDL2, opened when the viewer first needs it. Files of viz/ include this
 * instead of <SDL.h>.
 *
 * Linked normally, SDL2 brought 45 more shared libraries into every `ncsim` process (X11,
 * Wayland, PulseAudio, D-Bus, codecs...), and loading and initialising them was 5 of the 6 ms
 * that `ncsim run` took on a small program: a cost paid by every point of a sweep run as one
 * process per point, and by every subprocess a test suite starts, none of which draw
 * anything. So the viewer calls SDL through a table of pointers filled by viz_sdl_load()
 * (dlopen of libSDL2-2.0.so.0, or of NCSIM_SDL_LIBRARY), called where the viewer starts: a
 * window (viz_main) or a canvas (viz_canvas_create). The macros below let the code keep
 * SDL's own names. SDL's headers are still needed to build (types, constants).
 */
#ifndef VIZ_SDL_DYN_H
#define VIZ_SDL_DYN_H

#include <SDL.h>
#include <stddef.h>

/* Every SDL function the viewer calls. */
#define VIZ_SDL_FUNCTIONS(X)                                                                       \
    X(SDL_CreateRGBSurfaceWithFormat)                                                              \
    X(SDL_CreateRenderer)                                                                          \
    X(SDL_CreateSoftwareRenderer)                                                                  \
    X(SDL_CreateTextureFromSurface)                                                                \
    X(SDL_CreateWindow)                                                                            \
    X(SDL_DestroyRenderer)                                                                         \
    X(SDL_DestroyTexture)                                                                          \
    X(SDL_DestroyWindow)                                                                           \
    X(SDL_FreeSurface)                                                                             \
    X(SDL_GetCurrentVideoDriver)                                                                   \
    X(SDL_GetError)                                                                                \
    X(SDL_GetModState)                                                                             \
    X(SDL_GetMouseState)                                                                           \
    X(SDL_GetRendererInfo)                                                                         \
    X(SDL_GetWindowSize)                                                                           \
    X(SDL_Init)                                                                                    \
    X(SDL_InitSubSystem)                                                                           \
    X(SDL_LockSurface)                                                                             \
    X(SDL_PollEvent)                                                                               \
    X(SDL_Quit)                                                                                    \
    X(SDL_QuitSubSystem)                                                                           \
    X(SDL_RaiseWindow)                                                                             \
    X(SDL_RenderClear)                                                                             \
    X(SDL_RenderCopy)                                                                              \
    X(SDL_RenderDrawLinesF)                                                                        \
    X(SDL_RenderFillRect)                                                                          \
    X(SDL_RenderFlush)                                                                             \
    X(SDL_RenderGeometry)                                                                          \
    X(SDL_RenderPresent)                                                                           \
    X(SDL_RenderReadPixels)                                                                        \
    X(SDL_RenderSetClipRect)                                                                       \
    X(SDL_SetHintWithPriority)                                                                     \
    X(SDL_SetRenderDrawBlendMode)                                                                  \
    X(SDL_SetRenderDrawColor)                                                                      \
    X(SDL_SetTextureBlendMode)                                                                     \
    X(SDL_SetTextureColorMod)                                                                      \
    X(SDL_StartTextInput)                                                                          \
    X(SDL_StopTextInput)                                                                           \
    X(SDL_UnlockSurface)                                                                           \
    X(SDL_WaitEvent)                                                                               \
    X(SDL_WasInit)

typedef struct viz_sdl {
#define VIZ_SDL_FIELD(f) __typeof__(&f) f;
    VIZ_SDL_FUNCTIONS(VIZ_SDL_FIELD)
#undef VIZ_SDL_FIELD
} viz_sdl_t;

extern viz_sdl_t viz_sdl;

/* Open SDL2 and fill viz_sdl (once; later calls return the first outcome). 0, or -1 with a
 * message naming the library and what to install. */
int viz_sdl_load(char *err, size_t errlen);

#ifndef VIZ_SDL_DYN_IMPL
#define SDL_CreateRGBSurfaceWithFormat viz_sdl.SDL_CreateRGBSurfaceWithFormat
#define SDL_CreateRenderer viz_sdl.SDL_CreateRenderer
#define SDL_CreateSoftwareRenderer viz_sdl.SDL_CreateSoftwareRenderer
#define SDL_CreateTextureFromSurface viz_sdl.SDL_CreateTextureFromSurface
#define SDL_CreateWindow viz_sdl.SDL_CreateWindow
#define SDL_DestroyRenderer viz_sdl.SDL_DestroyRenderer
#define SDL_DestroyTexture viz_sdl.SDL_DestroyTexture
#define SDL_DestroyWindow viz_sdl.SDL_DestroyWindow
#define SDL_FreeSurface viz_sdl.SDL_FreeSurface
#define SDL_GetCurrentVideoDriver viz_sdl.SDL_GetCurrentVideoDriver
#define SDL_GetError viz_sdl.SDL_GetError
#define SDL_GetModState viz_sdl.SDL_GetModState
#define SDL_GetMouseState viz_sdl.SDL_GetMouseState
#define SDL_GetRendererInfo viz_sdl.SDL_GetRendererInfo
#define SDL_GetWindowSize viz_sdl.SDL_GetWindowSize
#define SDL_Init viz_sdl.SDL_Init
#define SDL_InitSubSystem viz_sdl.SDL_InitSubSystem
#define SDL_LockSurface viz_sdl.SDL_LockSurface
#define SDL_PollEvent viz_sdl.SDL_PollEvent
#define SDL_Quit viz_sdl.SDL_Quit
#define SDL_QuitSubSystem viz_sdl.SDL_QuitSubSystem
#define SDL_RaiseWindow viz_sdl.SDL_RaiseWindow
#define SDL_RenderClear viz_sdl.SDL_RenderClear
#define SDL_RenderCopy viz_sdl.SDL_RenderCopy
#define SDL_RenderDrawLinesF viz_sdl.SDL_RenderDrawLinesF
#define SDL_RenderFillRect viz_sdl.SDL_RenderFillRect
#define SDL_RenderFlush viz_sdl.SDL_RenderFlush
#define SDL_RenderGeometry viz_sdl.SDL_RenderGeometry
#define SDL_RenderPresent viz_sdl.SDL_RenderPresent
#define SDL_RenderReadPixels viz_sdl.SDL_RenderReadPixels
#define SDL_RenderSetClipRect viz_sdl.SDL_RenderSetClipRect
#define SDL_SetHintWithPriority viz_sdl.SDL_SetHintWithPriority
#define SDL_SetRenderDrawBlendMode viz_sdl.SDL_SetRenderDrawBlendMode
#define SDL_SetRenderDrawColor viz_sdl.SDL_SetRenderDrawColor
#define SDL_SetTextureBlendMode viz_sdl.SDL_SetTextureBlendMode
#define SDL_SetTextureColorMod viz_sdl.SDL_SetTextureColorMod
#define SDL_StartTextInput viz_sdl.SDL_StartTextInput
#define SDL_StopTextInput viz_sdl.SDL_StopTextInput
#define SDL_UnlockSurface viz_sdl.SDL_UnlockSurface
#define SDL_WaitEvent viz_sdl.SDL_WaitEvent
#define SDL_WasInit viz_sdl.SDL_WasInit
#endif

#endif
