/*
 * test_raster.c -- raster/: the shared bitmap font (glyphs, UTF-8, widths), drawing into RGB
 * images, and PNG files (the bytes read back with libpng).
 */
#include <png.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "raster.h"
#include "testutil.h"

static void test_font(void **state)
{
    (void)state;
    /* 'H' is two full columns joined by a bar on row 3 */
    const uint8_t *h = rst_font_glyph('H');
    for (int r = 0; r < 7; r++)
        assert_int_equal(h[r] & 0x11, 0x11);
    assert_int_equal(h[3], 0x1f);
    assert_int_equal(h[7] | h[8], 0); /* no descender */
    const uint8_t *g = rst_font_glyph('g');
    assert_true(g[7] | g[8]); /* a descender */
    /* unknown codes draw as '?' */
    assert_memory_equal(rst_font_glyph(7), rst_font_glyph('?'), RST_GLYPH_ROWS);
    /* UTF-8: micro sign, en dash; a broken sequence is one '?' */
    const char *s = "\xc2\xb5s\xe2\x80\x93\xc3";
    assert_int_equal(rst_font_decode(&s), RST_GLYPH_MICRO);
    assert_int_equal(rst_font_decode(&s), 's');
    assert_int_equal(rst_font_decode(&s), RST_GLYPH_ENDASH);
    assert_int_equal(rst_font_decode(&s), '?');
    assert_int_equal(*s, 0);
    assert_int_equal(rst_font_width("12.5 \xc2\xb5s"), 7 * RST_FONT_W);
    assert_int_equal(rst_font_fit("abcdef", 3 * RST_FONT_W + 2), 3);
    assert_int_equal(rst_text_width("ab", 2), (2 * RST_FONT_W - 1) * 2);
    assert_int_equal(rst_text_width("", 2), 0);
}

static rst_rgb_t px(const rst_image_t *im, int x, int y)
{
    const uint8_t *p = im->px + ((size_t)y * (size_t)im->w + (size_t)x) * 3;
    return (rst_rgb_t){p[0], p[1], p[2]};
}

static void test_drawing(void **state)
{
    (void)state;
    rst_image_t im;
    const rst_rgb_t white = {255, 255, 255}, red = {200, 10, 20};
    assert_int_equal(rst_image_init(&im, 40, 30, white), 0);
    rst_line(&im, 0, 0, 39, 0, 1, red);
    for (int x = 0; x < 40; x++)
        assert_int_equal(px(&im, x, 0).r, 200);
    assert_int_equal(px(&im, 0, 1).r, 255);
    rst_put(&im, -1, 5, red); /* clipped, no crash */
    rst_put(&im, 40, 5, red);
    rst_disc(&im, 20, 15, 3, red);
    assert_int_equal(px(&im, 20, 15).g, 10);
    assert_int_equal(px(&im, 20, 18).g, 10);
    assert_int_equal(px(&im, 20, 20).g, 255);
    /* 'H' at scale 2: its left column covers x 2..3, rows 0..13 from y 10 */
    rst_image_t t;
    assert_int_equal(rst_image_init(&t, 20, 30, white), 0);
    rst_text(&t, 2, 10, "H", red, 2, 0);
    assert_int_equal(px(&t, 2, 10).r, 200);
    assert_int_equal(px(&t, 3, 23).r, 200);
    assert_int_equal(px(&t, 4, 10).r, 255);  /* column 1 of row 0 is blank */
    assert_int_equal(px(&t, 10, 16).r, 200); /* the bar, row 3 */
    assert_int_equal(px(&t, 2, 24).r, 255);  /* below the glyph */
    rst_image_free(&t);
    rst_image_free(&im);
}

static void test_png(void **state)
{
    (void)state;
    rst_image_t im;
    assert_int_equal(rst_image_init(&im, 7, 5, (rst_rgb_t){1, 2, 3}), 0);
    rst_put(&im, 6, 4, (rst_rgb_t){250, 128, 7});
    char path[512], err[512];
    snprintf(path, sizeof path, "%s/r.png", tu_tmpdir());
    assert_int_equal(rst_write_png(&im, path, err, sizeof err), NCSIM_OK);
    png_image img;
    memset(&img, 0, sizeof img);
    img.version = PNG_IMAGE_VERSION;
    assert_true(png_image_begin_read_from_file(&img, path));
    assert_int_equal(img.width, 7);
    assert_int_equal(img.height, 5);
    img.format = PNG_FORMAT_RGB;
    uint8_t buf[7 * 5 * 3];
    assert_true(png_image_finish_read(&img, NULL, buf, 0, NULL));
    assert_memory_equal(buf, im.px, sizeof buf);
    assert_int_equal(buf[sizeof buf - 3], 250);
    /* a directory that does not exist: an error naming the file, nothing left behind */
    assert_int_equal(rst_write_png(&im, "/nonexistent-dir/x.png", err, sizeof err), NCSIM_IO);
    assert_non_null(strstr(err, "/nonexistent-dir/x.png"));
    rst_image_free(&im);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_font),
        cmocka_unit_test(test_drawing),
        cmocka_unit_test(test_png),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
