/*
 * app.c -- `ncsim viz`: the command line, the window and its event loop.
 *
 * The window is thin: it turns SDL events into viz_view_* calls and redraws when one of
 * them reports a change. Printable keys arrive as SDL_TEXTINPUT (so '?', '+' and '/' are
 * what the keyboard layout says); the others as SDL_KEYDOWN. `--png` renders the same view
 * headless (canvas.c) and exits.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sdl_dyn.h"

#include "viz_internal.h"

static const char usage_viz[] =
    "usage: ncsim viz TRACE [TRACE_B] [options]\n"
    "\n"
    "Open a trace (.json, .json.gz or .pftrace from `ncsim run --trace`) in the viewer: lanes\n"
    "per engine, DMA queue, link and collective engine, grouped by chip and core; counters\n"
    "(HBM bandwidth, SBUF and PSUM in use) under the lanes; press ? in the window for the keys.\n"
    "With two traces, both runs share one time axis: A's groups above B's, to compare them.\n"
    "  --png OUT.png       render headless to a PNG file and exit (no display needed)\n"
    "  --width W           window or picture width in pixels (default 1400)\n"
    "  --height H          window or picture height in pixels (default 860)\n"
    "  --start NS          left edge of the time window, in ns (default: the whole trace)\n"
    "  --end NS            right edge of the time window, in ns\n"
    "  --colour MODE       engine (default) or stall: colour slices by engine kind or by the\n"
    "                      cause of the stall before them (also --color)\n"
    "  --search TEXT       highlight slices matching TEXT (mnemonic, operands, stall cause or\n"
    "                      'line N') and select the first\n"
    "  --hover X,Y         (with --png) draw the tooltip for the pointer at X,Y\n"
    "  --keys TEXT         (with --png) press these keys first, as in the window: '?' shows\n"
    "                      the help, '+' zooms, 'c' switches colours; \\n is Enter\n"
    "  -v, --verbose       print load time, frame times and the final window on exit\n";

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int parse_double(const char *s, double *out)
{
    char *end;
    double d = strtod(s, &end);
    if (end == s || *end || d != d)
        return -1;
    *out = d;
    return 0;
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
    char *end;
    long n = strtol(s, &end, 10);
    if (end == s || *end || n < lo || n > hi)
        return -1;
    *out = (int)n;
    return 0;
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

int viz_main(int argc, char **argv)
{
    static const struct option opts[] = {{"png", required_argument, 0, 'p'},
                                         {"width", required_argument, 0, 'W'},
                                         {"height", required_argument, 0, 'H'},
                                         {"start", required_argument, 0, 's'},
                                         {"end", required_argument, 0, 'e'},
                                         {"colour", required_argument, 0, 'c'},
                                         {"color", required_argument, 0, 'c'},
                                         {"search", required_argument, 0, 'f'},
                                         {"hover", required_argument, 0, 'o'},
                                         {"keys", required_argument, 0, 'k'},
                                         {"verbose", no_argument, 0, 'v'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *png = NULL, *search = NULL, *keys = NULL;
    int width = 1400, height = 860, verbose = 0, hover_x = -1, hover_y = -1;
    double start_ns = -1, end_ns = -1;
    int have_start = 0, have_end = 0;
    viz_colour_mode_t mode = VIZ_COLOUR_ENGINE;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "vh", opts, NULL)) != -1) {
        switch (c) {
        case 'p': png = optarg; break;
        case 'W':
            if (parse_int(optarg, 64, 16384, &width)) {
                fprintf(stderr, "ncsim viz: --width wants 64 to 16384 pixels, not '%s'\n", optarg);
                return 2;
            }
            break;
        case 'H':
            if (parse_int(optarg, 200, 16384, &height)) {
                fprintf(stderr, "ncsim viz: --height wants 200 to 16384 pixels, not '%s'\n",
                        optarg);
                return 2;
            }
            break;
        case 's':
            if (parse_double(optarg, &start_ns)) {
                fprintf(stderr, "ncsim viz: --start wants a time in ns, not '%s'\n", optarg);
                return 2;
            }
            have_start = 1;
            break;
        case 'e':
            if (parse_double(optarg, &end_ns)) {
                fprintf(stderr, "ncsim viz: --end wants a time in ns, not '%s'\n", optarg);
                return 2;
            }
            have_end = 1;
            break;
        case 'c':
            if (strcmp(optarg, "engine") == 0)
                mode = VIZ_COLOUR_ENGINE;
            else if (strcmp(optarg, "stall") == 0)
                mode = VIZ_COLOUR_STALL;
            else {
                fprintf(stderr, "ncsim viz: --colour wants engine or stall, not '%s'\n", optarg);
                return 2;
            }
            break;
        case 'f': search = optarg; break;
        case 'o':
            if (sscanf(optarg, "%d,%d", &hover_x, &hover_y) != 2) {
                fprintf(stderr, "ncsim viz: --hover wants X,Y in pixels, not '%s'\n", optarg);
                return 2;
            }
            break;
        case 'k': keys = optarg; break;
        case 'v': verbose = 1; break;
        case 'h': fputs(usage_viz, stdout); return 0;
        default: fputs(usage_viz, stderr); return 2;
        }
    }
    if (optind != argc - 1 && optind != argc - 2) {
        fprintf(stderr, "ncsim viz: expected one trace file, or two to compare\n%s", usage_viz);
        return 2;
    }
    const char *path_b = optind == argc - 2 ? argv[optind + 1] : NULL;
    if (have_start && have_end && !(end_ns > start_ns)) {
        fprintf(stderr, "ncsim viz: --end (%g ns) must be after --start (%g ns)\n", end_ns,
                start_ns);
        return 2;
    }
    const char *path = argv[optind];
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
    viz_view_set_colour_mode(v, mode);
    if (have_start || have_end) {
        double a, b;
        viz_view_window(v, &a, &b);
        viz_view_set_window(v, have_start ? start_ns * 1000.0 : a, have_end ? end_ns * 1000.0 : b);
    }
    if (search)
        viz_view_search(v, search);
    int rc = 0;
    if (png) {
        viz_canvas_t *cv = NULL;
        st = viz_canvas_create(width, height, &cv, err, sizeof err);
        if (st == NCSIM_OK) {
            viz_view_resize(v, width, height);
            if (hover_x >= 0)
                viz_view_hover(v, hover_x, hover_y);
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
