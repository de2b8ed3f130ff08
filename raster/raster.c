/*
 * raster.c -- RGB images in memory, simple drawing, text in the bitmap font (font.c), and
 * PNG files through libpng.
 */
#include "raster.h"

#include "file.h"

#include <errno.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int rst_image_init(rst_image_t *im, int w, int h, rst_rgb_t fill)
{
    im->w = w > 0 ? w : 0;
    im->h = h > 0 ? h : 0;
    size_t n = (size_t)im->w * (size_t)im->h;
    im->px = malloc(n * 3 + 1);
    if (!im->px)
        return -1;
    for (size_t i = 0; i < n; i++) {
        im->px[3 * i] = fill.r;
        im->px[3 * i + 1] = fill.g;
        im->px[3 * i + 2] = fill.b;
    }
    return 0;
}

void rst_image_free(rst_image_t *im)
{
    free(im->px);
    im->px = NULL;
    im->w = im->h = 0;
}

void rst_put(rst_image_t *im, int x, int y, rst_rgb_t col)
{
    if (x < 0 || y < 0 || x >= im->w || y >= im->h)
        return;
    uint8_t *p = im->px + ((size_t)y * (size_t)im->w + (size_t)x) * 3;
    p[0] = col.r;
    p[1] = col.g;
    p[2] = col.b;
}

void rst_fill_rect(rst_image_t *im, int x, int y, int w, int h, rst_rgb_t col)
{
    for (int j = y; j < y + h; j++)
        for (int i = x; i < x + w; i++)
            rst_put(im, i, j, col);
}

void rst_line(rst_image_t *im, int x0, int y0, int x1, int y1, int thick, rst_rgb_t col)
{
    int dx = abs(x1 - x0), dy = -abs(y1 - y0);
    int sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1;
    int e = dx + dy;
    int lo = -(thick - 1) / 2, hi = thick / 2;
    for (;;) {
        for (int a = lo; a <= hi; a++)
            for (int b = lo; b <= hi; b++)
                rst_put(im, x0 + a, y0 + b, col);
        if (x0 == x1 && y0 == y1)
            break;
        int e2 = 2 * e;
        if (e2 >= dy) {
            e += dy;
            x0 += sx;
        }
        if (e2 <= dx) {
            e += dx;
            y0 += sy;
        }
    }
}

void rst_disc(rst_image_t *im, int cx, int cy, int r, rst_rgb_t col)
{
    for (int y = -r; y <= r; y++)
        for (int x = -r; x <= r; x++)
            if (x * x + y * y <= r * r + r)
                rst_put(im, cx + x, cy + y, col);
}

int rst_text_width(const char *s, int scale)
{
    int w = rst_font_width(s);
    return w ? (w - 1) * scale : 0;
}

void rst_text(rst_image_t *im, int x, int y, const char *s, rst_rgb_t col, int scale,
              int vertical)
{
    for (int i = 0; *s; i++) {
        const uint8_t *g = rst_font_glyph(rst_font_decode(&s));
        for (int row = 0; row < RST_GLYPH_ROWS; row++)
            for (int c = 0; c < 5; c++) {
                if (!(g[row] & (0x10 >> c)))
                    continue;
                int gx = i * RST_FONT_W + c, gy = row;
                for (int a = 0; a < scale; a++)
                    for (int b = 0; b < scale; b++) {
                        if (vertical)
                            rst_put(im, x + gy * scale + b, y - gx * scale - a, col);
                        else
                            rst_put(im, x + gx * scale + a, y + gy * scale + b, col);
                    }
            }
    }
}

/* libpng reports errors by longjmp: nothing that outlives setjmp lives in this frame. */
static int png_encode(FILE *f, const rst_image_t *im)
{
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    if (!png)
        return -1;
    png_infop info = png_create_info_struct(png);
    if (!info) {
        png_destroy_write_struct(&png, NULL);
        return -1;
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        return -1;
    }
    png_init_io(png, f);
    png_set_IHDR(png, info, (png_uint_32)im->w, (png_uint_32)im->h, 8, PNG_COLOR_TYPE_RGB,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (int y = 0; y < im->h; y++)
        png_write_row(png, im->px + (size_t)y * (size_t)im->w * 3);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    return 0;
}

ncsim_status_t rst_write_png(const rst_image_t *im, const char *path, char *err, size_t errlen)
{
    isa_file_out_t o;
    if (isa_file_begin(&o, path)) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        return errno == ENOMEM ? NCSIM_NOMEM : NCSIM_IO;
    }
    int bad = png_encode(o.f, im);
    if (isa_file_commit(&o, !bad)) {
        snprintf(err, errlen, "cannot write %s%s%s", path, bad ? "" : ": ",
                 bad ? "" : strerror(errno));
        return NCSIM_IO;
    }
    return NCSIM_OK;
}
