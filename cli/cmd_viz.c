/*
 * cmd_viz.c -- `ncsim viz TRACE [TRACE_B] [options]` (CLI.md): the options, declared as a
 * table (cli/options.h); the viewer itself is viz/ (viz_run).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "options.h"

#ifdef NCSIM_HAVE_VIZ
#include "viz.h"

static int opt_size(void *p, const char *name, const char *arg)
{
    viz_options_t *o = p;
    int height = strcmp(name, "height") == 0;
    uint64_t lo = height ? 200 : 64, n;
    if (cli_parse_u64(arg, &n) || n < lo || n > 16384) {
        fprintf(stderr, "ncsim viz: --%s wants %d to 16384 pixels, not '%s'\n", name, (int)lo,
                arg);
        return -1;
    }
    *(height ? &o->height : &o->width) = (int)n;
    return 0;
}

static int opt_time(void *p, const char *name, const char *arg)
{
    viz_options_t *o = p;
    double d;
    if (cli_parse_double(arg, &d)) {
        fprintf(stderr, "ncsim viz: --%s wants a time in ns, not '%s'\n", name, arg);
        return -1;
    }
    if (strcmp(name, "start") == 0)
        o->start_ns = d, o->have_start = 1;
    else
        o->end_ns = d, o->have_end = 1;
    return 0;
}

static int opt_colour(void *p, const char *name, const char *arg)
{
    viz_options_t *o = p;
    (void)name;
    if (strcmp(arg, "engine") == 0)
        o->mode = VIZ_COLOUR_ENGINE;
    else if (strcmp(arg, "stall") == 0)
        o->mode = VIZ_COLOUR_STALL;
    else {
        fprintf(stderr, "ncsim viz: --colour wants engine or stall, not '%s'\n", arg);
        return -1;
    }
    return 0;
}

static int opt_hover(void *p, const char *name, const char *arg)
{
    viz_options_t *o = p;
    (void)name;
    char tail;
    if (sscanf(arg, "%d,%d%c", &o->hover_x, &o->hover_y, &tail) != 2) {
        fprintf(stderr, "ncsim viz: --hover wants X,Y in pixels, not '%s'\n", arg);
        return -1;
    }
    return 0;
}

static int opt_text(void *p, const char *name, const char *arg)
{
    viz_options_t *o = p;
    *(strcmp(name, "png") == 0 ? &o->png : strcmp(name, "search") == 0 ? &o->search
                                                                       : &o->keys) = arg;
    return 0;
}

static int opt_verbose(void *p, const char *name, const char *arg)
{
    (void)name;
    (void)arg;
    ((viz_options_t *)p)->verbose = 1;
    return 0;
}

static const cli_option_t viz_options[] = {
    {"png", 0, "OUT.png", opt_text, "render headless to a PNG file and exit (no display needed)"},
    {"width", 0, "W", opt_size, "window or picture width in pixels (default 1400)"},
    {"height", 0, "H", opt_size, "window or picture height in pixels (default 860)"},
    {"start", 0, "NS", opt_time, "left edge of the time window, in ns (default: the whole trace)"},
    {"end", 0, "NS", opt_time, "right edge of the time window, in ns"},
    {"colour", 0, "MODE", opt_colour,
     "engine (default) or stall: colour slices by engine kind or by the\n"
     "cause of the stall before them (also --color)"},
    {"color", 0, "MODE", opt_colour, "the same as --colour"},
    {"search", 0, "TEXT", opt_text,
     "highlight slices matching TEXT (mnemonic, operands, stall cause or\n"
     "'line N') and select the first"},
    {"hover", 0, "X,Y", opt_hover, "(with --png) draw the tooltip for the pointer at X,Y"},
    {"keys", 0, "TEXT", opt_text,
     "(with --png) press these keys first, as in the window: '?' shows\n"
     "the help, '+' zooms, 'c' switches colours; \\n is Enter"},
    {"verbose", 'v', NULL, opt_verbose,
     "print load time, frame times and the final window on exit"},
    {NULL, 0, NULL, NULL, NULL},
};

static const cli_command_t viz_command = {
    "viz",
    "usage: ncsim viz TRACE [TRACE_B] [options]\n"
    "\n"
    "Open a trace (.json, .json.gz or .pftrace from `ncsim run --trace`) in the viewer: lanes\n"
    "per engine, DMA queue, link and collective engine, grouped by chip and core; counters\n"
    "(HBM bandwidth, SBUF and PSUM in use) under the lanes; press ? in the window for the keys.\n"
    "With two traces, both runs share one time axis: A's groups above B's, to compare them.\n",
    viz_options,
    22,
    NULL,
    1,
    2,
    "expected one trace file, or two to compare",
};

int cli_viz(int argc, char **argv)
{
    viz_options_t o;
    memset(&o, 0, sizeof o);
    o.width = 1400;
    o.height = 860;
    o.hover_x = o.hover_y = -1;
    o.mode = VIZ_COLOUR_ENGINE;
    int first;
    int rc = cli_parse(&viz_command, argc, argv, &o, &first);
    if (rc >= 0)
        return rc;
    if (o.have_start && o.have_end && !(o.end_ns > o.start_ns)) {
        fprintf(stderr, "ncsim viz: --end (%g ns) must be after --start (%g ns)\n", o.end_ns,
                o.start_ns);
        return 2;
    }
    o.path = argv[first];
    o.path_b = first + 1 < argc ? argv[first + 1] : NULL;
    return viz_run(&o);
}

#else

int cli_viz(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fputs("ncsim viz: this ncsim was built without the viewer (it needs SDL2: install "
          "libsdl2-dev and rebuild with -DNCSIM_BUILD_VIZ=ON)\n",
          stderr);
    return 2;
}

#endif
