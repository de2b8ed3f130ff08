/*
 * raster.h -- pictures in memory without a graphics library: the project's bitmap font, an RGB
 * image with lines, discs, rectangles and text, and PNG files (libpng). The viewer (viz/,
 * which draws with SDL and reads its pixels back) and the sweep plots (explore/) share it:
 * one font, one PNG writer. No SDL here.
 */
#ifndef NCSIM_RASTER_H
#define NCSIM_RASTER_H

#include <stddef.h>
#include <stdint.h>

#include "ncsim.h"

/* ---- the font (font.c) ------------------------------------------------------------------------ */

#define RST_FONT_W 6      /* advance of every glyph */
#define RST_FONT_H 11     /* cell height: 1 blank row, 7 body rows, 2 descender rows, 1 blank */
#define RST_GLYPH_ROWS 9
#define RST_GLYPH_TOP 1   /* blank rows above the glyph in its cell */

enum {
    RST_GLYPH_MICRO = 128,
    RST_GLYPH_RIGHT,
    RST_GLYPH_DOWN,
    RST_GLYPH_MIDDOT,
    RST_GLYPH_ENDASH,
    RST_GLYPH_DELTA,
    RST_GLYPH_COUNT
};

/* Row bitmaps (bit 4 = leftmost pixel) of a glyph; unknown codes give '?'. */
const uint8_t *rst_font_glyph(unsigned code);
/* Next glyph code of UTF-8 text (advances *s). */
unsigned rst_font_decode(const char **s);
/* Width in pixels at scale 1 (every glyph advances RST_FONT_W). */
int rst_font_width(const char *s);
/* Bytes of `s` that fit in `width` pixels (whole glyphs). */
size_t rst_font_fit(const char *s, int width);

/* ---- images (raster.c) ------------------------------------------------------------------------ */

typedef struct rst_rgb {
    uint8_t r, g, b;
} rst_rgb_t;

typedef struct rst_image {
    int w, h;
    uint8_t *px; /* w * h * 3 bytes, rows top to bottom, R G B */
} rst_image_t;

/* A w x h image filled with `fill`; -1 when out of memory (im->px NULL). */
int rst_image_init(rst_image_t *im, int w, int h, rst_rgb_t fill);
void rst_image_free(rst_image_t *im);

/* Drawing clips to the image. */
void rst_put(rst_image_t *im, int x, int y, rst_rgb_t col);
void rst_fill_rect(rst_image_t *im, int x, int y, int w, int h, rst_rgb_t col);
/* A line `thick` pixels wide (Bresenham, a square pen). */
void rst_line(rst_image_t *im, int x0, int y0, int x1, int y1, int thick, rst_rgb_t col);
void rst_disc(rst_image_t *im, int cx, int cy, int r, rst_rgb_t col);
/* Text with the top-left corner of its first glyph's ink at (x, y), each font pixel drawn as
 * scale x scale; `vertical` runs it upwards from (x, y) as the bottom-left corner. */
void rst_text(rst_image_t *im, int x, int y, const char *s, rst_rgb_t col, int scale,
              int vertical);
/* Width of rst_text's ink: glyphs * RST_FONT_W * scale minus the last glyph's blank column. */
int rst_text_width(const char *s, int scale);

/* Write the image as an 8-bit RGB PNG, atomically (a temporary file renamed into place).
 * NCSIM_IO (or NCSIM_NOMEM) with a message naming the file. */
ncsim_status_t rst_write_png(const rst_image_t *im, const char *path, char *err, size_t errlen);

#endif
