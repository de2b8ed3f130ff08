/*
 * app.c -- `ncsim viz`: the window and its event loop (the options are cli/cmd_viz.c's).
 *
 * The window is thin: it turns SDL events into viz_view_* calls and redraws when one of
 * them reports a change. Printable keys arrive as SDL_TEXTINPUT (so '?', '+' and '/' are
 * what the keyboard layout says); the others as SDL_KEYDOWN. `--png` renders the same view
 * headless (canvas.c) and exits.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sdl_dyn.h"

#include "viz_internal.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- the window ------------------------------------------------------------------------------ */

static unsigned mods_of(SDL_Keymod m)
{
    unsigned r = 0;
    if (m & KMOD_SHIFT)
        r |= VIZ_MOD_SHIFT;
    if (m & KMOD_CTRL)
        r |= VIZ_MOD_CTRL;
    if (m & KMOD_ALT)
        r |= VIZ_MOD_ALT;
    return r;
}

static viz_key_t key_of(SDL_Keycode k)
{
    switch (k) {
    case SDLK_LEFT: return VIZ_KEY_LEFT;
    case SDLK_RIGHT: return VIZ_KEY_RIGHT;
    case SDLK_UP: return VIZ_KEY_UP;
    case SDLK_DOWN: return VIZ_KEY_DOWN;
    case SDLK_PAGEUP: return VIZ_KEY_PAGE_UP;
    case SDLK_PAGEDOWN: return VIZ_KEY_PAGE_DOWN;
    case SDLK_HOME: return VIZ_KEY_HOME;
    case SDLK_END: return VIZ_KEY_END;
    case SDLK_RETURN:
    case SDLK_KP_ENTER: return VIZ_KEY_ENTER;
    case SDLK_ESCAPE: return VIZ_KEY_ESCAPE;
    case SDLK_BACKSPACE: return VIZ_KEY_BACKSPACE;
    case SDLK_TAB: return VIZ_KEY_TAB;
    case SDLK_F1: return VIZ_KEY_F1;
    default: return VIZ_KEY_NONE;
    }
}

static int button_of(Uint8 b)
{
    return b == SDL_BUTTON_LEFT ? VIZ_BUTTON_LEFT
           : b == SDL_BUTTON_RIGHT ? VIZ_BUTTON_RIGHT
                                   : VIZ_BUTTON_MIDDLE;
}

typedef struct frame_stats {
    int verbose;
    unsigned long frames;
    double total_s, max_s;
} frame_stats_t;

/* One event; returns nonzero when the view must be redrawn. */
static int handle_event(viz_view_t *v, const SDL_Event *e, SDL_Window *win, int *quit)
{
    switch (e->type) {
    case SDL_QUIT: *quit = 1; return 0;
    case SDL_WINDOWEVENT:
        switch (e->window.event) {
        case SDL_WINDOWEVENT_SIZE_CHANGED:
        case SDL_WINDOWEVENT_RESIZED: {
            int w, h;
            SDL_GetWindowSize(win, &w, &h);
            viz_view_resize(v, w, h);
            return 1;
        }
        case SDL_WINDOWEVENT_LEAVE: return viz_view_hover(v, -1, -1);
        case SDL_WINDOWEVENT_EXPOSED:
        case SDL_WINDOWEVENT_SHOWN: return 1;
        default: return 0;
        }
    case SDL_KEYDOWN: {
        viz_key_t k = key_of(e->key.keysym.sym);
        if (k != VIZ_KEY_NONE)
            return viz_view_key(v, k, 0, mods_of((SDL_Keymod)e->key.keysym.mod));
        /* printable keys come as SDL_TEXTINPUT; ctrl+key has no text, so handle it here */
        if (e->key.keysym.mod & KMOD_CTRL) {
            SDL_Keycode sym = e->key.keysym.sym;
            if (sym == SDLK_q || sym == SDLK_w) {
                *quit = 1;
                return 0;
            }
        }
        return 0;
    }
    case SDL_TEXTINPUT: {
        int changed = 0;
        SDL_Keymod m = SDL_GetModState();
        for (const char *s = e->text.text; *s; s++)
            if ((unsigned char)*s >= 32 && (unsigned char)*s < 127)
                changed |= viz_view_key(v, VIZ_KEY_CHAR, *s, mods_of(m));
        return changed;
    }
    case SDL_MOUSEMOTION:
        return viz_view_mouse_move(v, e->motion.x, e->motion.y, mods_of(SDL_GetModState()));
    case SDL_MOUSEBUTTONDOWN:
        return viz_view_mouse_down(v, e->button.x, e->button.y, button_of(e->button.button),
                                   mods_of(SDL_GetModState()));
    case SDL_MOUSEBUTTONUP:
        return viz_view_mouse_up(v, e->button.x, e->button.y, button_of(e->button.button),
                                 mods_of(SDL_GetModState()));
    case SDL_MOUSEWHEEL: {
        int mx, my;
        SDL_GetMouseState(&mx, &my);
        double dy = e->wheel.preciseY, dx = e->wheel.preciseX;
        if (e->wheel.direction == SDL_MOUSEWHEEL_FLIPPED) {
            dy = -dy;
            dx = -dx;
        }
        return viz_view_wheel(v, mx, my, dx, dy, mods_of(SDL_GetModState()));
    }
    default: return 0;
    }
}

static int run_window(viz_view_t *v, const char *path, int width, int height,
                      frame_stats_t *fs)
{
    const char *drv = getenv("SDL_VIDEODRIVER");
    if ((!drv || !*drv) && !getenv("DISPLAY") && !getenv("WAYLAND_DISPLAY")) {
        fprintf(stderr, "ncsim viz: no display (DISPLAY is not set); render headless with "
                        "--png OUT.png, or run under xvfb-run\n");
        return 3;
    }
    char why[600];
    if (viz_sdl_load(why, sizeof why)) {
        fprintf(stderr, "ncsim viz: %s\n", why);
        return 4;
    }
    if (SDL_Init(SDL_INIT_VIDEO) != 0) {
        fprintf(stderr, "ncsim viz: cannot open a window: %s; render headless with --png "
                        "OUT.png\n",
                SDL_GetError());
        return 3;
    }
    char title[600];
    const char *base = strrchr(path, '/');
    snprintf(title, sizeof title, "ncsim viz - %s", base ? base + 1 : path);
    SDL_Window *win = SDL_CreateWindow(title, SDL_WINDOWPOS_CENTERED, SDL_WINDOWPOS_CENTERED,
                                       width, height, SDL_WINDOW_RESIZABLE);
    if (!win) {
        fprintf(stderr, "ncsim viz: cannot open a window: %s\n", SDL_GetError());
        SDL_Quit();
        return 3;
    }
    SDL_Renderer *r = SDL_CreateRenderer(win, -1, SDL_RENDERER_ACCELERATED);
    if (!r)
        r = SDL_CreateRenderer(win, -1, SDL_RENDERER_SOFTWARE);
    viz_gfx_t *gfx = r ? viz_gfx_create(r) : NULL;
    if (!gfx) {
        fprintf(stderr, "ncsim viz: cannot create a renderer: %s\n", SDL_GetError());
        if (r)
            SDL_DestroyRenderer(r);
        SDL_DestroyWindow(win);
        SDL_Quit();
        return 4;
    }
    if (fs->verbose) {
        SDL_RendererInfo info;
        if (SDL_GetRendererInfo(r, &info) == 0)
            fprintf(stderr, "ncsim viz: SDL video driver %s, renderer %s\n",
                    SDL_GetCurrentVideoDriver(), info.name);
    }
    SDL_StartTextInput();
    SDL_RaiseWindow(win);
    int w, h;
    SDL_GetWindowSize(win, &w, &h);
    viz_view_resize(v, w, h);
    int quit = 0, dirty = 1;
    while (!quit) {
        if (dirty) {
            double t0 = now_s();
            viz_render(gfx, v);
            SDL_RenderPresent(r);
            double dt = now_s() - t0;
            fs->frames++;
            fs->total_s += dt;
            if (dt > fs->max_s)
                fs->max_s = dt;
            dirty = 0;
        }
        SDL_Event e;
        if (!SDL_WaitEvent(&e))
            break;
        do {
            dirty |= handle_event(v, &e, win, &quit);
            if (viz_view_quit_requested(v))
                quit = 1;
        } while (!quit && SDL_PollEvent(&e));
    }
    SDL_StopTextInput();
    viz_gfx_free(gfx);
    SDL_DestroyRenderer(r);
    SDL_DestroyWindow(win);
    SDL_Quit();
    return 0;
}

/* ---- the command ----------------------------------------------------------------------------- */

int viz_run(const viz_options_t *o)
{
    const char *path = o->path, *path_b = o->path_b, *png = o->png, *keys = o->keys;
    int width = o->width, height = o->height, verbose = o->verbose;
    char err[1024];
    viz_trace_t *t = NULL;
    double t_load = now_s();
    ncsim_status_t st = path_b ? viz_trace_load_pair(path, path_b, &t, err, sizeof err)
                               : viz_trace_load(path, &t, err, sizeof err);
    t_load = now_s() - t_load;
    if (st != NCSIM_OK) {
        fprintf(stderr, "ncsim viz: %s\n", err);
        return ncsim_status_exit_code(st);
    }
    if (verbose)
        fprintf(stderr, "ncsim viz: loaded %s: %zu slices, %zu lanes, %zu counters, %zu flows "
                        "spanning %.3f ns in %.3f s\n",
                path, viz_trace_slice_count(t), viz_trace_lane_count(t),
                viz_trace_counter_count(t), viz_trace_flow_count(t),
                (double)(viz_trace_end_ps(t) - viz_trace_start_ps(t)) / 1000.0, t_load);
    viz_view_t *v = viz_view_create(t, width, height);
    if (!v) {
        fprintf(stderr, "ncsim viz: out of memory\n");
        viz_trace_free(t);
        return 4;
    }
    viz_view_set_colour_mode(v, o->mode);
    if (o->have_start || o->have_end) {
        double a, b;
        viz_view_window(v, &a, &b);
        viz_view_set_window(v, o->have_start ? o->start_ns * 1000.0 : a,
                            o->have_end ? o->end_ns * 1000.0 : b);
    }
    if (o->search)
        viz_view_search(v, o->search);
    int rc = 0;
    if (png) {
        viz_canvas_t *cv = NULL;
        st = viz_canvas_create(width, height, &cv, err, sizeof err);
        if (st == NCSIM_OK) {
            viz_view_resize(v, width, height);
            if (o->hover_x >= 0)
                viz_view_hover(v, o->hover_x, o->hover_y);
            for (const char *k = keys; k && *k; k++) {
                if (k[0] == '\\' && k[1] == 'n') {
                    viz_view_key(v, VIZ_KEY_ENTER, 0, 0);
                    k++;
                } else if (*k == '\n') {
                    viz_view_key(v, VIZ_KEY_ENTER, 0, 0);
                } else if ((unsigned char)*k >= 32 && (unsigned char)*k < 127) {
                    viz_view_key(v, VIZ_KEY_CHAR, *k, *k >= 'A' && *k <= 'Z' ? VIZ_MOD_SHIFT : 0);
                }
            }
            double t0 = now_s();
            viz_canvas_render(cv, v);
            double dt = now_s() - t0;
            st = viz_canvas_write_png(cv, png, err, sizeof err);
            if (verbose)
                fprintf(stderr, "ncsim viz: rendered %dx%d in %.1f ms\n", width, height,
                        dt * 1e3);
            viz_canvas_free(cv);
        }
        if (st != NCSIM_OK) {
            fprintf(stderr, "ncsim viz: %s\n", err);
            rc = ncsim_status_exit_code(st);
        } else {
            fprintf(stderr, "ncsim viz: wrote %s (%dx%d)\n", png, width, height);
        }
    } else {
        frame_stats_t fs = {verbose, 0, 0, 0};
        rc = run_window(v, path, width, height, &fs);
        if (verbose && rc == 0) {
            double a, b;
            viz_view_window(v, &a, &b);
            fprintf(stderr, "ncsim viz: %lu frames, mean %.2f ms, max %.2f ms; window %.3f .. "
                            "%.3f ns\n",
                    fs.frames, fs.frames ? fs.total_s / (double)fs.frames * 1e3 : 0.0,
                    fs.max_s * 1e3, a / 1000.0, b / 1000.0);
        }
    }
    viz_view_free(v);
    viz_trace_free(t);
    return rc;
}
