/*
 * canvas.c -- drawing without a display: SDL's dummy video driver and its software renderer
 * drawing into a surface in memory. `ncsim viz --png` writes the surface as a PNG (raster/); tests
 * read its pixels. The software renderer is the same code on every machine, and the font is
 * a bitmap, so the pixels are the same everywhere.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sdl_dyn.h"

#include "viz_internal.h"

struct viz_canvas {
    SDL_Surface *surface;
    SDL_Renderer *renderer;
    viz_gfx_t *gfx;
    uint32_t *pixels; /* ARGB8888 copy of the last render, read back on first use */
    int stale;
    int w, h;
    int own_video;    /* we initialised SDL's video subsystem */
};

/* Start SDL's video subsystem on the dummy driver (whatever SDL_VIDEODRIVER says: a headless
 * render must not open a window) with the software renderer. */
static int headless_video(int *own, char *err, size_t errlen)
{
    *own = 0;
    if (SDL_WasInit(SDL_INIT_VIDEO))
        return 0;
    SDL_SetHintWithPriority(SDL_HINT_VIDEODRIVER, "dummy", SDL_HINT_OVERRIDE);
    SDL_SetHintWithPriority(SDL_HINT_RENDER_DRIVER, "software", SDL_HINT_OVERRIDE);
    if (SDL_InitSubSystem(SDL_INIT_VIDEO) != 0) {
        snprintf(err, errlen, "cannot start SDL (dummy video driver): %s", SDL_GetError());
        return -1;
    }
    *own = 1;
    return 0;
}

ncsim_status_t viz_canvas_create(int width, int height, viz_canvas_t **out, char *err,
                                 size_t errlen)
{
    *out = NULL;
    if (width < 64 || height < 200 || width > 16384 || height > 16384) {
        snprintf(err, errlen, "canvas size %dx%d out of range (64x200 to 16384x16384)", width,
                 height);
        return NCSIM_USAGE;
    }
    if (viz_sdl_load(err, errlen))
        return NCSIM_INTERNAL;
    viz_canvas_t *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return NCSIM_NOMEM;
    }
    c->w = width;
    c->h = height;
    if (headless_video(&c->own_video, err, errlen)) {
        free(c);
        return NCSIM_INTERNAL;
    }
    c->surface = SDL_CreateRGBSurfaceWithFormat(0, width, height, 32, SDL_PIXELFORMAT_ARGB8888);
    c->pixels = malloc((size_t)width * (size_t)height * 4);
    if (!c->surface || !c->pixels) {
        snprintf(err, errlen, "out of memory for a %dx%d canvas", width, height);
        viz_canvas_free(c);
        return NCSIM_NOMEM;
    }
    c->renderer = SDL_CreateSoftwareRenderer(c->surface);
    if (!c->renderer || !(c->gfx = viz_gfx_create(c->renderer))) {
        snprintf(err, errlen, "cannot create the software renderer: %s", SDL_GetError());
        viz_canvas_free(c);
        return NCSIM_INTERNAL;
    }
    memset(c->pixels, 0, (size_t)width * (size_t)height * 4);
    *out = c;
    return NCSIM_OK;
}

void viz_canvas_free(viz_canvas_t *c)
{
    if (!c)
        return;
    viz_gfx_free(c->gfx);
    if (c->renderer)
        SDL_DestroyRenderer(c->renderer);
    if (c->surface)
        SDL_FreeSurface(c->surface);
    free(c->pixels);
    if (c->own_video)
        SDL_QuitSubSystem(SDL_INIT_VIDEO);
    free(c);
}

void viz_canvas_render(viz_canvas_t *c, viz_view_t *v)
{
    if (v->w != c->w || v->h != c->h)
        viz_view_resize(v, c->w, c->h);
    viz_render(c->gfx, v);
    SDL_RenderFlush(c->renderer); /* the frame's batched commands are drawn now */
    c->stale = 1;
}

/* Copy the surface out after a render, once. */
static void read_back(viz_canvas_t *c)
{
    if (!c->stale)
        return;
    if (SDL_RenderReadPixels(c->renderer, NULL, SDL_PIXELFORMAT_ARGB8888, c->pixels, c->w * 4))
        memset(c->pixels, 0, (size_t)c->w * (size_t)c->h * 4);
    c->stale = 0;
}

uint32_t viz_canvas_pixel(viz_canvas_t *c, int x, int y)
{
    if (x < 0 || y < 0 || x >= c->w || y >= c->h)
        return 0;
    read_back(c);
    return c->pixels[(size_t)y * (size_t)c->w + (size_t)x] & 0xffffffu;
}

ncsim_status_t viz_canvas_write_png(viz_canvas_t *c, const char *path, char *err, size_t errlen)
{
    read_back(c);
    rst_image_t im;
    if (rst_image_init(&im, c->w, c->h, (rst_rgb_t){0, 0, 0})) {
        snprintf(err, errlen, "out of memory writing %s", path);
        return NCSIM_NOMEM;
    }
    for (size_t i = 0; i < (size_t)c->w * (size_t)c->h; i++) {
        im.px[3 * i] = (uint8_t)(c->pixels[i] >> 16);
        im.px[3 * i + 1] = (uint8_t)(c->pixels[i] >> 8);
        im.px[3 * i + 2] = (uint8_t)c->pixels[i];
    }
    ncsim_status_t st = rst_write_png(&im, path, err, errlen);
    rst_image_free(&im);
    return st;
}
