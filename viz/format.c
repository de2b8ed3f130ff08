/*
 * format.c -- numbers as the viewer shows them: times with their unit (ps, ns, µs, ms, s),
 * axis tick steps and labels, counter values with theirs (bytes as KiB/MiB/GiB).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "viz_internal.h"

static const struct {
    double ps;
    const char *name;
} time_units[] = {{1.0, "ps"}, {1e3, "ns"}, {1e6, "\xc2\xb5s"}, {1e9, "ms"}, {1e12, "s"}};
#define NUNITS (sizeof time_units / sizeof time_units[0])

/* Print v with at most `sig` significant digits and no trailing zeros. */
static void fmt_sig(char *buf, size_t n, double v, int sig)
{
    double a = fabs(v);
    int digits = a >= 1.0 ? (int)floor(log10(a)) + 1 : 1;
    int dec = sig - digits;
    if (dec < 0)
        dec = 0;
    if (dec > 6)
        dec = 6;
    snprintf(buf, n, "%.*f", dec, v);
    if (dec > 0 && strchr(buf, '.')) {
        size_t len = strlen(buf);
        while (len > 0 && buf[len - 1] == '0')
            buf[--len] = 0;
        if (len > 0 && buf[len - 1] == '.')
            buf[--len] = 0;
    }
}

void viz_fmt_time(char *buf, size_t n, double ps)
{
    double a = fabs(ps);
    size_t u = 0;
    while (u + 1 < NUNITS && a >= time_units[u + 1].ps)
        u++;
    char num[48];
    fmt_sig(num, sizeof num, ps / time_units[u].ps, 6);
    snprintf(buf, n, "%s %s", num, time_units[u].name);
}

void viz_axis_unit(double step_ps, double *unit_ps, const char **name, int *decimals)
{
    size_t u = 0;
    while (u + 1 < NUNITS && step_ps >= time_units[u + 1].ps / 10.0 * 0.999)
        u++;
    *unit_ps = time_units[u].ps;
    *name = time_units[u].name;
    /* decimals the step needs in that unit: step / unit is 0.1 .. 1000 (or less than 1 ps) */
    double s = step_ps / time_units[u].ps;
    int d = 0;
    while (d < 3 && fabs(s * pow(10.0, d) - floor(s * pow(10.0, d) + 0.5)) > 1e-6)
        d++;
    *decimals = d;
}

void viz_fmt_time_fixed(char *buf, size_t n, double ps, double unit_ps, int decimals,
                        const char *unit_name)
{
    double v = ps / unit_ps;
    if (fabs(v) < 0.5 * pow(10.0, -decimals))
        v = 0.0; /* no "-0" */
    snprintf(buf, n, "%.*f %s", decimals, v, unit_name);
}

double viz_axis_step(double span_ps, double width, double min_px)
{
    if (width < 1.0)
        width = 1.0;
    double raw = span_ps * min_px / width; /* smallest step that keeps labels apart */
    if (raw < 1.0)
        raw = 1.0;
    double p = pow(10.0, floor(log10(raw)));
    static const double mult[] = {1.0, 2.0, 5.0, 10.0};
    for (size_t i = 0; i < 4; i++)
        if (p * mult[i] >= raw * 0.9999)
            return p * mult[i];
    return p * 10.0;
}

void viz_fmt_value(char *buf, size_t n, double v, const char *unit)
{
    char num[48];
    if (unit && strcmp(unit, "bytes") == 0) {
        static const char *const names[] = {"B", "KiB", "MiB", "GiB", "TiB"};
        double a = fabs(v);
        size_t i = 0;
        while (i + 1 < 5 && a >= 1024.0) {
            a /= 1024.0;
            v /= 1024.0;
            i++;
        }
        fmt_sig(num, sizeof num, v, i ? 4 : 12);
        snprintf(buf, n, "%s %s", num, names[i]);
        return;
    }
    fmt_sig(num, sizeof num, v, fabs(v) >= 1e6 ? 12 : 5);
    if (unit && *unit && strcmp(unit, "value") != 0)
        snprintf(buf, n, "%s %s", num, unit);
    else
        snprintf(buf, n, "%s", num);
}

void viz_fmt_count(char *buf, size_t n, uint64_t v)
{
    char tmp[32];
    int len = snprintf(tmp, sizeof tmp, "%llu", (unsigned long long)v);
    size_t o = 0;
    for (int i = 0; i < len && o + 2 < n; i++) {
        if (i > 0 && (len - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = tmp[i];
    }
    buf[o < n ? o : n - 1] = 0;
}
