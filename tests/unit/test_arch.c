/*
 * test_arch.c -- architecture configs: presets load and validate, every preset number names
 * its source, strict parsing errors name the key and the file, --set, "base" inheritance,
 * validation messages, and the JSON dump round-trips.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "arch.h"
#include "testutil.h"

static const char *const expected_presets[] = {"inf2",       "inf2-48xl",    "trn1",
                                               "trn1-32xl",  "trn1-32xl-x2", "trn1n-32xl",
                                               "trn1n-32xl-x2"};
#define NPRESETS (sizeof expected_presets / sizeof expected_presets[0])

/* The reference's source tags (shared/reference/neuroncore-v2.md, "Source key"). */
static const char *const source_tags[] = {
    "ARCH", "PERF", "ISA-OLD",   "ISA",       "SHARED", "DMA-OV",   "DMA-BW", "DGE",   "TRN1",
    "INF2", "NCV2", "TRN1-INST", "INF2-INST", "SCHED",  "TRN2ARCH", "DTYPES", "ROUND", "FP8",
    "CC",   "NEFF", "KLR",       "PROF1",     "PROF2",  "EXPL",     "SIM",    "MEAS"};

static char tmpdir[256];

static int setup(void **state)
{
    (void)state;
    unsetenv("NCSIM_PRESET_DIR"); /* the built-in presets unless a test says otherwise */
    snprintf(tmpdir, sizeof tmpdir, "%s", tu_tmpdir());
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    tu_rmdir(tmpdir);
    return 0;
}

static mdl_arch_t load_ok(const char *name)
{
    mdl_arch_t a;
    char err[2048] = "";
    ncsim_status_t st = mdl_arch_load(name, &a, err, sizeof err);
    if (st != NCSIM_OK)
        fprintf(stderr, "load %s: %s\n", name, err);
    assert_int_equal(st, NCSIM_OK);
    st = mdl_arch_validate(&a, err, sizeof err);
    if (st != NCSIM_OK)
        fprintf(stderr, "validate %s: %s\n", name, err);
    assert_int_equal(st, NCSIM_OK);
    return a;
}

/* Write `text` to tmpdir/name and return the path (static buffer). */
static const char *write_tmp(const char *name, const char *text)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    assert_int_equal(tu_write_file(path, text, strlen(text)), 0);
    return path;
}

/* Loading `text` (as file `name`) must fail with `status` and a message containing every
 * one of the NULL-terminated strings that follow. */
static void expect_load_error(const char *name, const char *text, ncsim_status_t status, ...)
{
    const char *path = write_tmp(name, text);
    mdl_arch_t a;
    char err[2048] = "";
    ncsim_status_t st = mdl_arch_load(path, &a, err, sizeof err);
    if (st != status)
        fprintf(stderr, "%s: status %d, message: %s\n", name, (int)st, err);
    assert_int_equal(st, status);
    va_list ap;
    va_start(ap, status);
    for (const char *want; (want = va_arg(ap, const char *)) != NULL;) {
        if (!strstr(err, want))
            fprintf(stderr, "message \"%s\" lacks \"%s\"\n", err, want);
        assert_non_null(strstr(err, want));
    }
    va_end(ap);
    assert_non_null(strstr(err, path)); /* every load error names the file */
}

static void expect_set_error(mdl_arch_t *a, const char *assignment, const char *want)
{
    char err[1024] = "";
    mdl_arch_t before = *a;
    assert_int_equal(mdl_arch_set(a, assignment, err, sizeof err), NCSIM_USAGE);
    if (!strstr(err, want))
        fprintf(stderr, "--set %s: message \"%s\" lacks \"%s\"\n", assignment, err, want);
    assert_non_null(strstr(err, want));
    assert_memory_equal(&before, a, sizeof before); /* a rejected --set changes nothing */
}

static void expect_invalid(const mdl_arch_t *a, const char *want)
{
    char err[1024] = "";
    assert_int_equal(mdl_arch_validate(a, err, sizeof err), NCSIM_USAGE);
    if (!strstr(err, want))
        fprintf(stderr, "validate: message \"%s\" lacks \"%s\"\n", err, want);
    assert_non_null(strstr(err, want));
}

/* ---- Presets ------------------------------------------------------------------------------ */

static void test_preset_names(void **state)
{
    (void)state;
    const char *const *names = mdl_arch_preset_names();
    size_t n = 0;
    for (; names[n]; n++) {
        assert_true(n < NPRESETS);
        assert_string_equal(names[n], expected_presets[n]);
    }
    assert_int_equal(n, NPRESETS);
    assert_null(mdl_arch_preset_dir());
}

static void test_presets_load_and_validate(void **state)
{
    (void)state;
    for (size_t i = 0; i < NPRESETS; i++) {
        mdl_arch_t a = load_ok(expected_presets[i]);
        assert_string_equal(a.name, expected_presets[i]);
        assert_true(strlen(a.description) > 20);
    }
}

/* The trn1 numbers the reference gives (spot checks of every section). */
static void test_trn1_values(void **state)
{
    (void)state;
    mdl_arch_t a = load_ok("trn1");
    assert_int_equal(a.chips, 1);
    assert_int_equal(a.cores_per_chip, 2);
    assert_int_equal(a.semaphores, 64);
    assert_true(a.pe.clock_ghz == 2.8);
    assert_int_equal(a.pe.rows, 128);
    assert_int_equal(a.pe.cols, 128);
    assert_true(a.pe.fp32_factor == 4.0);
    assert_true(a.pe.mm_init_latency_cycles == 64.0);
    assert_true(a.act.clock_ghz == 1.4);
    assert_true(a.dve.clock_ghz == 1.12);
    assert_true(a.pool.clock_ghz == 1.4);
    assert_true(a.act.min_ii_cycles == 64.0 && a.dve.min_ii_cycles == 64.0);
    assert_true(a.dve.static_overhead_cycles == 60.0);
    assert_true(a.costs.min_ii_dynamic_cycles == 600.0);
    assert_true(a.costs.gpsimd_start_cycles == 150.0);
    assert_true(a.costs.stride_penalty_bytes == 16.0 && a.costs.stride_penalty_factor == 2.0);
    assert_int_equal(a.sbuf.partitions, 128);
    assert_int_equal(a.sbuf.bytes_per_partition, 196608);
    assert_int_equal(a.psum.bytes_per_partition, 16384);
    assert_int_equal(a.psum.banks, 8);
    assert_int_equal(a.hbm.size_bytes, 32ull << 30);
    assert_true(a.hbm.bandwidth_gbps == 820.0);
    assert_int_equal(a.dma.engines, 16);
    assert_int_equal(a.dma.queues, 16);
    /* fitted to the published fig30 transfer (docs/validation.md), not the 27.2 GB/s prose */
    assert_true(a.dma.engine_bandwidth_gbps == 18.7);
    assert_true(a.dma.piece_overhead_ns == 7.0);
    assert_true(a.pe.throttle_factor == 1.0); /* off by default */
    assert_true(a.cc.min_latency_ns == 58000.0 && a.cc.rank_bandwidth_gbps > 0);
    assert_true(
        tu_close(a.link.bandwidth_gbps, 96.0 * 1073741824.0 / 1e9, 1e-15, 0)); /* 96 GiB/s */
    assert_true(a.link.hop_latency_ns == 1500.0);
    assert_int_equal(a.cc.packet_bytes, 65536);
    assert_int_equal(a.cc.algorithm, MDL_CC_AUTO);
    assert_int_equal(a.cc.inter_algorithm, MDL_CC_AUTO);

    isa_geometry_t g;
    mdl_arch_geometry(&a, &g);
    assert_int_equal(g.partitions, 128);
    assert_int_equal(g.sbuf_bytes, 196608);
    assert_int_equal(g.psum_bytes, 16384);
    assert_int_equal(g.psum_bank_bytes, 2048);
    assert_int_equal(g.hbm_bytes, 32ull << 30);
}

static void test_multichip_presets(void **state)
{
    (void)state;
    mdl_arch_t t = load_ok("trn1-32xl"), i2 = load_ok("inf2"), i48 = load_ok("inf2-48xl");
    mdl_arch_t t1 = load_ok("trn1");
    assert_int_equal(t.chips, 16);
    assert_int_equal(t.link.topology, MDL_TOPO_TORUS2D);
    assert_int_equal(t.link.torus_x, 4);
    assert_int_equal(t.link.torus_y, 4);
    assert_int_equal(t.link.links_per_chip, 4);
    assert_int_equal(i2.chips, 1);
    assert_int_equal(i2.link.links_per_chip, 2);
    assert_int_equal(i2.link.topology, MDL_TOPO_RING);
    assert_int_equal(i48.chips, 12);
    assert_int_equal(i48.link.topology, MDL_TOPO_RING);
    assert_int_equal(i48.link.links_per_chip, 2);
    /* Inherited from trn1 through inf2: the same NeuronCore-v2 device (ARCH). */
    assert_true(i48.pe.clock_ghz == t1.pe.clock_ghz);
    assert_int_equal(i48.hbm.size_bytes, t1.hbm.size_bytes);
    assert_true(i48.link.bandwidth_gbps == t1.link.bandwidth_gbps);
}

/* Does a source string start with a reference tag or say "assumption: "? */
static int source_is_tagged(const char *s)
{
    if (strncmp(s, "assumption: ", 12) == 0)
        return strlen(s) > 20; /* and gives a reason */
    for (size_t i = 0; i < sizeof source_tags / sizeof source_tags[0]; i++) {
        size_t n = strlen(source_tags[i]);
        if (strncmp(s, source_tags[i], n) == 0 && (s[n] == ':' || s[n] == ',' || s[n] == ' '))
            return 1;
    }
    return 0;
}

/*
 * Every preset, resolved through its "base" chain, has a tagged source for every key the
 * library knows: read straight from models/presets/ with jansson, independently of the
 * loader's own checks.
 */
static void test_every_key_has_a_source(void **state)
{
    (void)state;
    size_t nkeys = mdl_arch_key_count();
    assert_true(nkeys >= 50);
    for (size_t p = 0; p < NPRESETS; p++) {
        int *covered = calloc(nkeys, sizeof *covered);
        assert_non_null(covered);
        char name[64];
        snprintf(name, sizeof name, "%s", expected_presets[p]);
        for (int depth = 0; depth < 8; depth++) {
            char rel[128];
            snprintf(rel, sizeof rel, "models/presets/%s.json", name);
            json_error_t jerr;
            json_t *root = json_load_file(tu_source_path(rel), 0, &jerr);
            if (!root)
                fprintf(stderr, "%s: %s\n", rel, jerr.text);
            assert_non_null(root);
            json_t *sources = json_object_get(root, "sources");
            assert_true(json_is_object(sources));
            const char *key;
            json_t *v;
            json_object_foreach(sources, key, v)
            {
                size_t k = 0;
                while (k < nkeys && strcmp(mdl_arch_key_name(k), key) != 0)
                    k++;
                if (k == nkeys)
                    fprintf(stderr, "%s: sources names unknown key %s\n", rel, key);
                assert_true(k < nkeys);
                assert_true(json_is_string(v));
                if (!source_is_tagged(json_string_value(v)))
                    fprintf(stderr, "%s: source of %s is not tagged: %s\n", rel, key,
                            json_string_value(v));
                assert_true(source_is_tagged(json_string_value(v)));
                /* The nearest file in the chain wins, as for the values. */
                if (!covered[k])
                    covered[k] = 1;
            }
            json_t *base = json_object_get(root, "base");
            if (!base) {
                json_decref(root);
                break;
            }
            snprintf(name, sizeof name, "%s", json_string_value(base));
            json_decref(root);
        }
        for (size_t k = 0; k < nkeys; k++) {
            if (!covered[k])
                fprintf(stderr, "preset %s: no source for %s\n", expected_presets[p],
                        mdl_arch_key_name(k));
            assert_true(covered[k]);
        }
        free(covered);
    }
}

/* A preset that sets a key without naming its source is refused by the loader too. */
static void test_preset_without_source_rejected(void **state)
{
    (void)state;
    char dir[300];
    snprintf(dir, sizeof dir, "%s/presets", tmpdir);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "mkdir -p %s", dir);
    assert_int_equal(tu_run(cmd, NULL), 0);
    char path[400];
    snprintf(path, sizeof path, "%s/fast.json", dir);
    const char *text = "{\"base\": \"trn1\", \"name\": \"fast\", \"description\": \"d\",\n"
                       " \"hbm\": {\"bandwidth_gbps\": 1640},\n"
                       " \"sources\": {}}\n";
    assert_int_equal(tu_write_file(path, text, strlen(text)), 0);
    setenv("NCSIM_PRESET_DIR", dir, 1);
    assert_string_equal(mdl_arch_preset_dir(), dir);
    mdl_arch_t a;
    char err[2048] = "";
    assert_int_equal(mdl_arch_load("fast", &a, err, sizeof err), NCSIM_USAGE);
    assert_non_null(strstr(err, "hbm.bandwidth_gbps"));
    assert_non_null(strstr(err, "sources"));
    assert_non_null(strstr(err, path));

    /* With its source it loads, and "trn1" still comes from the built-in copy. */
    text = "{\"base\": \"trn1\", \"name\": \"fast\", \"description\": \"d\",\n"
           " \"hbm\": {\"bandwidth_gbps\": 1640},\n"
           " \"sources\": {\"hbm.bandwidth_gbps\": \"assumption: what-if, twice trn1\"}}\n";
    assert_int_equal(tu_write_file(path, text, strlen(text)), 0);
    a = load_ok("fast");
    assert_true(a.hbm.bandwidth_gbps == 1640.0);
    assert_true(a.pe.clock_ghz == 2.8);

    /* A source for a key the file does not set is refused. */
    text = "{\"base\": \"trn1\", \"name\": \"fast\", \"description\": \"d\",\n"
           " \"sources\": {\"hbm.bandwidth_gbps\": \"assumption: stale entry here\"}}\n";
    assert_int_equal(tu_write_file(path, text, strlen(text)), 0);
    assert_int_equal(mdl_arch_load("fast", &a, err, sizeof err), NCSIM_USAGE);
    assert_non_null(strstr(err, "does not set"));
    unsetenv("NCSIM_PRESET_DIR");
}

/* NCSIM_PRESET_DIR pointing at the source tree gives exactly the built-in presets: the
 * compiled-in copies are not stale. */
static void test_builtin_matches_source_tree(void **state)
{
    (void)state;
    for (size_t i = 0; i < NPRESETS; i++) {
        unsetenv("NCSIM_PRESET_DIR");
        mdl_arch_t builtin = load_ok(expected_presets[i]);
        setenv("NCSIM_PRESET_DIR", tu_source_path("models/presets"), 1);
        mdl_arch_t files = load_ok(expected_presets[i]);
        char *a = mdl_arch_to_json(&builtin), *b = mdl_arch_to_json(&files);
        assert_non_null(a);
        assert_non_null(b);
        assert_string_equal(a, b);
        free(a);
        free(b);
    }
    unsetenv("NCSIM_PRESET_DIR");
}

/* A built-in preset is parsed once per process and handed out as a copy: loading it again
 * gives the same config, whatever a caller did to an earlier copy; with NCSIM_PRESET_DIR
 * set, that directory's file is used, not the kept copy, and unset again the built-in one. */
static void test_builtin_kept_as_copy(void **state)
{
    (void)state;
    unsetenv("NCSIM_PRESET_DIR");
    mdl_arch_t a = load_ok("trn1");
    char *ja = mdl_arch_to_json(&a);
    a.pe.clock_ghz = 99.0;
    snprintf(a.description, sizeof a.description, "changed by a caller");
    mdl_arch_t b = load_ok("trn1");
    assert_true(b.pe.clock_ghz == 2.8);
    char *jb = mdl_arch_to_json(&b);
    assert_string_equal(ja, jb);
    free(jb);

    char dir[300], path[400], cmd[700];
    snprintf(dir, sizeof dir, "%s/kept", tmpdir);
    snprintf(cmd, sizeof cmd, "mkdir -p %s", dir);
    assert_int_equal(tu_run(cmd, NULL), 0);
    size_t n;
    char *text = tu_read_file(tu_source_path("models/presets/trn1.json"), &n);
    assert_non_null(text);
    char *desc = strstr(text, "\"description\": \"");
    assert_non_null(desc);
    desc += strlen("\"description\": \"");
    snprintf(path, sizeof path, "%s/trn1.json", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "%.*sFROM THE DIRECTORY %s", (int)(desc - text), text, desc);
    assert_int_equal(fclose(f), 0);
    free(text);
    setenv("NCSIM_PRESET_DIR", dir, 1);
    mdl_arch_t c = load_ok("trn1");
    assert_non_null(strstr(c.description, "FROM THE DIRECTORY"));
    unsetenv("NCSIM_PRESET_DIR");
    mdl_arch_t d = load_ok("trn1");
    assert_null(strstr(d.description, "FROM THE DIRECTORY"));
    char *jd = mdl_arch_to_json(&d);
    assert_string_equal(ja, jd);
    free(jd);
    free(ja);
}

/* ---- Strict parsing ------------------------------------------------------------------------- */

static void test_unknown_key_and_section(void **state)
{
    (void)state;
    expect_load_error("k.json", "{\"base\": \"trn1\", \"pe\": {\"clockghz\": 3.0}}", NCSIM_USAGE,
                      "unknown key 'pe.clockghz'", NULL);
    expect_load_error("s.json", "{\"base\": \"trn1\", \"tensor\": {\"clock_ghz\": 3.0}}",
                      NCSIM_USAGE, "unknown section 'tensor'", NULL);
    expect_load_error("src.json",
                      "{\"base\": \"trn1\", \"sources\": {\"pe.clok_ghz\": \"ARCH: x\"}}",
                      NCSIM_USAGE, "sources: unknown key 'pe.clok_ghz'", NULL);
    expect_load_error("src2.json", "{\"base\": \"trn1\", \"sources\": {\"pe.clock_ghz\": 2.8}}",
                      NCSIM_USAGE, "'pe.clock_ghz' must be a non-empty string", NULL);
}

static void test_missing_key(void **state)
{
    (void)state;
    /* A full config minus one key. */
    mdl_arch_t a = load_ok("trn1");
    char *json = mdl_arch_to_json(&a);
    assert_non_null(json);
    const char *drop = "    \"channels\": 16,\n";
    char *line = strstr(json, drop);
    assert_non_null(line);
    memmove(line, line + strlen(drop), strlen(line + strlen(drop)) + 1);
    expect_load_error("missing.json", json, NCSIM_USAGE, "missing key 'hbm.channels'", NULL);
    free(json);
    expect_load_error("noname.json", "{\"description\": \"x\"}", NCSIM_USAGE, "missing key 'name'",
                      NULL);
}

static void test_wrong_types(void **state)
{
    (void)state;
    expect_load_error("t1.json", "{\"base\": \"trn1\", \"pe\": {\"rows\": 128.5}}", NCSIM_USAGE,
                      "'pe.rows' must be an integer", NULL);
    expect_load_error("t2.json", "{\"base\": \"trn1\", \"pe\": {\"clock_ghz\": \"2.8\"}}",
                      NCSIM_USAGE, "'pe.clock_ghz' must be a number", NULL);
    expect_load_error("t3.json", "{\"base\": \"trn1\", \"system\": {\"chips\": -1}}", NCSIM_USAGE,
                      "'system.chips' must be an integer", NULL);
    expect_load_error("t4.json", "{\"base\": \"trn1\", \"system\": {\"chips\": 4294967296}}",
                      NCSIM_USAGE, "'system.chips' = 4294967296 is too large", NULL);
    expect_load_error("t5.json", "{\"base\": \"trn1\", \"link\": {\"topology\": \"mesh\"}}",
                      NCSIM_USAGE, "'link.topology' = \"mesh\" is not one of", "\"torus2d\"", NULL);
    expect_load_error("t6.json", "{\"base\": \"trn1\", \"cc\": {\"algorithm\": 1}}", NCSIM_USAGE,
                      "'cc.algorithm' must be a string", "\"rdh\"", NULL);
    expect_load_error("t7.json", "{\"base\": \"trn1\", \"hbm\": 820}", NCSIM_USAGE,
                      "section 'hbm' must be an object", NULL);
    expect_load_error("t8.json", "[1, 2]", NCSIM_USAGE, "top level must be a JSON object", NULL);
    expect_load_error("t9.json", "{\"base\": \"trn1\", \"name\": 5}", NCSIM_USAGE,
                      "'name' must be a string", NULL);
    expect_load_error("t10.json", "{\"base\": 1}", NCSIM_USAGE, "'base' must be a string", NULL);
}

static void test_syntax_errors_have_positions(void **state)
{
    (void)state;
    /* Line 3, column of the stray token. */
    expect_load_error("syntax.json", "{\n  \"base\": \"trn1\",\n  \"pe\": {\"rows\": }\n}\n",
                      NCSIM_USAGE, "syntax.json:3:", NULL);
    expect_load_error("dup.json", "{\"base\": \"trn1\",\n \"pe\": {\"rows\": 1, \"rows\": 2}}",
                      NCSIM_USAGE, "dup.json:2:", "duplicate", NULL);
}

static void test_missing_file_and_unknown_preset(void **state)
{
    (void)state;
    mdl_arch_t a;
    char err[1024] = "";
    char path[400];
    snprintf(path, sizeof path, "%s/nope.json", tmpdir);
    assert_int_equal(mdl_arch_load(path, &a, err, sizeof err), NCSIM_IO);
    assert_non_null(strstr(err, path));
    assert_int_equal(mdl_arch_load("trn9", &a, err, sizeof err), NCSIM_USAGE);
    assert_non_null(strstr(err, "unknown architecture 'trn9'"));
    assert_non_null(strstr(err, "trn1-32xl")); /* lists the presets */
    /* A failed load leaves the caller's config untouched. */
    mdl_arch_t before = load_ok("inf2");
    a = before;
    assert_int_equal(mdl_arch_load("trn9", &a, err, sizeof err), NCSIM_USAGE);
    assert_memory_equal(&a, &before, sizeof a);
}

/* ---- base ----------------------------------------------------------------------------------- */

static void test_base_inheritance(void **state)
{
    (void)state;
    const char *path = write_tmp("wide.json", "{\"base\": \"trn1\",\n"
                                              " \"hbm\": {\"bandwidth_gbps\": 1640},\n"
                                              " \"pe\": {\"clock_ghz\": 3.5}}\n");
    mdl_arch_t a = load_ok(path), t = load_ok("trn1");
    assert_string_equal(a.name, "wide"); /* the file's name when it gives none */
    assert_string_equal(a.description, t.description);
    assert_true(a.hbm.bandwidth_gbps == 1640.0);
    assert_true(a.pe.clock_ghz == 3.5);
    /* Everything else is trn1's. */
    t.hbm.bandwidth_gbps = 1640.0;
    t.pe.clock_ghz = 3.5;
    snprintf(t.name, sizeof t.name, "wide");
    char *ja = mdl_arch_to_json(&a), *jt = mdl_arch_to_json(&t);
    assert_string_equal(ja, jt);
    free(ja);
    free(jt);

    /* A base given as a path is relative to the file naming it; chains work. */
    write_tmp("wider.json", "{\"base\": \"wide.json\", \"name\": \"wider\", \"system\": "
                            "{\"chips\": 4}, \"link\": {\"torus_x\": 2, \"torus_y\": 2}}");
    char p2[400];
    snprintf(p2, sizeof p2, "%s/wider.json", tmpdir);
    a = load_ok(p2);
    assert_string_equal(a.name, "wider");
    assert_int_equal(a.chips, 4);
    assert_true(a.hbm.bandwidth_gbps == 1640.0);

    /* Errors in the base name the base; cycles stop. */
    expect_load_error("badbase.json", "{\"base\": \"trn7\"}", NCSIM_USAGE, "in base 'trn7'",
                      "unknown architecture", NULL);
    write_tmp("cyc_a.json", "{\"base\": \"cyc_b.json\"}");
    expect_load_error("cyc_b.json", "{\"base\": \"cyc_a.json\"}", NCSIM_USAGE, "chain deeper than",
                      NULL);
    /* The error inside a base names the base's file and the key. */
    write_tmp("broken.json", "{\"base\": \"trn1\", \"dma\": {\"engins\": 4}}");
    expect_load_error("uses_broken.json", "{\"base\": \"broken.json\"}", NCSIM_USAGE,
                      "broken.json: unknown key 'dma.engins'", NULL);
}

/* ---- --set ---------------------------------------------------------------------------------- */

static void test_set(void **state)
{
    (void)state;
    mdl_arch_t a = load_ok("trn1");
    char err[1024] = "";
    assert_int_equal(mdl_arch_set(&a, "hbm.bandwidth_gbps=1200", err, sizeof err), NCSIM_OK);
    assert_true(a.hbm.bandwidth_gbps == 1200.0);
    assert_int_equal(mdl_arch_set(&a, "pe.clock_ghz=1.4e0", err, sizeof err), NCSIM_OK);
    assert_true(a.pe.clock_ghz == 1.4);
    assert_int_equal(mdl_arch_set(&a, "system.chips=16", err, sizeof err), NCSIM_OK);
    assert_int_equal(a.chips, 16);
    assert_int_equal(mdl_arch_set(&a, "hbm.size_bytes=68719476736", err, sizeof err), NCSIM_OK);
    assert_int_equal(a.hbm.size_bytes, 64ull << 30);
    assert_int_equal(mdl_arch_set(&a, "link.topology=full", err, sizeof err), NCSIM_OK);
    assert_int_equal(a.link.topology, MDL_TOPO_FULL);
    assert_int_equal(mdl_arch_set(&a, "cc.algorithm=rdh", err, sizeof err), NCSIM_OK);
    assert_int_equal(a.cc.algorithm, MDL_CC_RDH);
    assert_int_equal(mdl_arch_set(&a, "cc.inter_algorithm=flat_ring", err, sizeof err), NCSIM_OK);
    assert_int_equal(a.cc.inter_algorithm, MDL_CC_FLAT_RING);

    char buf[64];
    assert_int_equal(mdl_arch_get(&a, "hbm.bandwidth_gbps", buf, sizeof buf), NCSIM_OK);
    assert_string_equal(buf, "1200.0");
    assert_int_equal(mdl_arch_get(&a, "link.topology", buf, sizeof buf), NCSIM_OK);
    assert_string_equal(buf, "full");
    assert_int_equal(mdl_arch_get(&a, "system.chips", buf, sizeof buf), NCSIM_OK);
    assert_string_equal(buf, "16");
    assert_int_equal(mdl_arch_get(&a, "hbm.nope", buf, sizeof buf), NCSIM_USAGE);

    expect_set_error(&a, "hbm.bandwith_gbps=1200", "unknown key 'hbm.bandwith_gbps'");
    expect_set_error(&a, "bandwidth_gbps=1200", "unknown key 'bandwidth_gbps'");
    expect_set_error(&a, "hbm.bandwidth_gbps", "expected SECTION.KEY=VALUE");
    expect_set_error(&a, "hbm.bandwidth_gbps=", "missing value");
    expect_set_error(&a, "hbm.bandwidth_gbps=fast", "must be a finite number");
    expect_set_error(&a, "hbm.bandwidth_gbps=12x", "must be a finite number");
    expect_set_error(&a, "hbm.bandwidth_gbps=inf", "must be a finite number");
    expect_set_error(&a, "hbm.bandwidth_gbps=nan", "must be a finite number");
    expect_set_error(&a, "hbm.bandwidth_gbps=1e999", "must be a finite number");
    expect_set_error(&a, "hbm.bandwidth_gbps= 5", "must be a finite number");
    expect_set_error(&a, "system.chips=1.5", "must be an integer");
    expect_set_error(&a, "system.chips=-2", "must be an integer");
    expect_set_error(&a, "system.chips=0x10", "must be an integer");
    expect_set_error(&a, "system.chips=4294967296", "too large");
    expect_set_error(&a, "hbm.size_bytes=99999999999999999999999", "too large");
    expect_set_error(&a, "link.topology=mesh", "\"ring\", \"torus2d\" or \"full\"");
    expect_set_error(&a, "cc.algorithm=tree",
                     "\"auto\", \"ring\", \"mesh\", \"kangaring\", \"rdh\" or \"flat_ring\"");

    /* --set then validate: the override is checked. */
    a = load_ok("trn1");
    assert_int_equal(mdl_arch_set(&a, "sbuf.partitions=256", err, sizeof err), NCSIM_OK);
    expect_invalid(&a, "sbuf.partitions = 256");
}

/* ---- Validation -------------------------------------------------------------------------------
 */

static void test_validate(void **state)
{
    (void)state;
    const mdl_arch_t t = load_ok("trn1");
    mdl_arch_t a;

    a = t, a.chips = 0;
    expect_invalid(&a, "system.chips = 0");
    a = t, a.chips = ISA_MAX_CHIPS + 1;
    expect_invalid(&a, "system.chips = 65");
    a = t, a.cores_per_chip = 4;
    expect_invalid(&a, "system.cores_per_chip");
    a = t, a.semaphores = 65;
    expect_invalid(&a, "system.semaphores");
    a = t, a.pe.clock_ghz = 0;
    expect_invalid(&a, "pe.clock_ghz = 0");
    a = t, a.dve.clock_ghz = -1;
    expect_invalid(&a, "dve.clock_ghz");
    a = t, a.sp.clock_ghz = 0;
    expect_invalid(&a, "sp.clock_ghz");
    a = t, a.act.latency_cycles = -5;
    expect_invalid(&a, "act.latency_cycles");
    a = t, a.pool.min_ii_cycles = NAN;
    expect_invalid(&a, "pool.min_ii_cycles");
    a = t, a.pe.rows = 129;
    expect_invalid(&a, "pe.rows = 129");
    a = t, a.sbuf.partitions = 0;
    expect_invalid(&a, "sbuf.partitions = 0");
    a = t, a.psum.partitions = 129;
    expect_invalid(&a, "psum.partitions = 129");
    a = t, a.psum.banks = 3;
    expect_invalid(&a, "psum.bytes_per_partition = 16384: must be a positive multiple of "
                       "psum.banks (3)");
    a = t, a.psum.banks = 0;
    expect_invalid(&a, "psum.banks");
    a = t, a.psum.banks = 16;
    expect_invalid(&a, "pe.max_moving_free = 512"); /* 1 KiB banks cannot hold 512 fp32 */
    a = t, a.hbm.bandwidth_gbps = 0;
    expect_invalid(&a, "hbm.bandwidth_gbps");
    a = t, a.dma.queues = 17;
    expect_invalid(&a, "dma.queues = 17");
    a = t, a.dma.engines = 0;
    expect_invalid(&a, "dma.engines");
    a = t, a.costs.stride_penalty_factor = 0.5;
    expect_invalid(&a, "costs.stride_penalty_factor");
    a = t, a.link.topology = (mdl_topology_t)7;
    expect_invalid(&a, "link.topology");

    /* Topology consistency. */
    a = t, a.chips = 16, a.link.torus_x = 4, a.link.torus_y = 3;
    expect_invalid(&a, "link.torus_x * link.torus_y = 4 x 3: must equal system.chips (16)");
    a = t, a.chips = 16, a.link.torus_x = 4, a.link.torus_y = 4, a.link.links_per_chip = 3;
    expect_invalid(&a, "link.links_per_chip = 3: a torus2d of 16 chips needs 4 links");
    a = load_ok("inf2-48xl"), a.link.links_per_chip = 1;
    expect_invalid(&a, "a ring of 12 chips needs 2 links");
    a = load_ok("inf2-48xl"), a.link.topology = MDL_TOPO_FULL;
    expect_invalid(&a, "a full of 12 chips needs 11 links");
    a = load_ok("inf2-48xl"), a.link.links_per_chip = 11, a.link.topology = MDL_TOPO_FULL;
    char err[512];
    assert_int_equal(mdl_arch_validate(&a, err, sizeof err), NCSIM_OK);
    /* A 2-chip ring needs one link; a 2 x 1 torus needs one. */
    a = t, a.chips = 2, a.link.topology = MDL_TOPO_RING, a.link.links_per_chip = 1;
    assert_int_equal(mdl_arch_validate(&a, err, sizeof err), NCSIM_OK);
    a = t, a.chips = 2, a.link.torus_x = 2, a.link.torus_y = 1, a.link.links_per_chip = 1;
    assert_int_equal(mdl_arch_validate(&a, err, sizeof err), NCSIM_OK);
    a = t, a.chips = 2, a.link.torus_x = 2, a.link.torus_y = 1, a.link.links_per_chip = 1,
    a.link.bandwidth_gbps = 0;
    expect_invalid(&a, "link.bandwidth_gbps");
}

/* ---- Dump ----------------------------------------------------------------------------------- */

static void test_to_json_round_trip(void **state)
{
    (void)state;
    for (size_t i = 0; i < NPRESETS; i++) {
        mdl_arch_t a = load_ok(expected_presets[i]);
        char *json = mdl_arch_to_json(&a);
        assert_non_null(json);
        char *again = mdl_arch_to_json(&a);
        assert_string_equal(json, again); /* deterministic */
        free(again);

        char name[64];
        snprintf(name, sizeof name, "dump-%s.json", expected_presets[i]);
        mdl_arch_t b = load_ok(write_tmp(name, json));
        char *json_b = mdl_arch_to_json(&b);
        assert_string_equal(json, json_b);
        free(json_b);
        assert_memory_equal(&a.pe, &b.pe, sizeof a.pe);
        assert_memory_equal(&a.link, &b.link, sizeof a.link);
        assert_true(a.dma.engine_bandwidth_gbps == b.dma.engine_bandwidth_gbps);

        /* The dump is JSON with every key, in the table's order. */
        json_error_t jerr;
        json_t *root = json_loads(json, 0, &jerr);
        assert_non_null(root);
        for (size_t k = 0; k < mdl_arch_key_count(); k++) {
            char section[32];
            const char *path = mdl_arch_key_name(k);
            const char *dot = strchr(path, '.');
            assert_non_null(dot);
            snprintf(section, sizeof section, "%.*s", (int)(dot - path), path);
            assert_non_null(json_object_get(json_object_get(root, section), dot + 1));
        }
        assert_null(json_object_get(root, "sources"));
        json_decref(root);
        free(json);
    }

    /* Awkward numbers survive: shortest round-trip digits, not %g's 6. */
    mdl_arch_t a = load_ok("trn1");
    char err[256];
    assert_int_equal(mdl_arch_set(&a, "pe.clock_ghz=0.30000000000000004", err, sizeof err),
                     NCSIM_OK);
    assert_int_equal(mdl_arch_set(&a, "dma.trigger_latency_ns=1e-300", err, sizeof err), NCSIM_OK);
    assert_int_equal(mdl_arch_set(&a, "hbm.latency_ns=123456789.123456789", err, sizeof err),
                     NCSIM_OK);
    assert_int_equal(mdl_arch_set(&a, "hbm.size_bytes=18446744073709551615", err, sizeof err),
                     NCSIM_OK);
    snprintf(a.description, sizeof a.description, "quote \" backslash \\ tab \t done");
    char *json = mdl_arch_to_json(&a);
    assert_non_null(strstr(json, "\"clock_ghz\": 0.30000000000000004"));
    assert_non_null(strstr(json, "\"bandwidth_gbps\": 820.0"));
    assert_non_null(strstr(json, "\"chips\": 1,"));
    mdl_arch_t b;
    char lerr[1024];
    /* size_bytes above INT64_MAX cannot be read back by jansson: use a readable value. */
    free(json);
    a.hbm.size_bytes = (1ull << 62) + 1;
    json = mdl_arch_to_json(&a);
    assert_int_equal(mdl_arch_load(write_tmp("awkward.json", json), &b, lerr, sizeof lerr),
                     NCSIM_OK);
    assert_true(b.pe.clock_ghz == a.pe.clock_ghz);
    assert_true(b.dma.trigger_latency_ns == 1e-300);
    assert_true(b.hbm.latency_ns == a.hbm.latency_ns);
    assert_int_equal(b.hbm.size_bytes, (1ull << 62) + 1);
    assert_string_equal(b.description, a.description);
    free(json);
}

static void test_key_list(void **state)
{
    (void)state;
    size_t n = mdl_arch_key_count();
    assert_string_equal(mdl_arch_key_name(0), "system.chips");
    assert_string_equal(mdl_arch_key_name(n - 1), "cc.packet_bytes");
    assert_null(mdl_arch_key_name(n));
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            assert_true(strcmp(mdl_arch_key_name(i), mdl_arch_key_name(j)) != 0);
}

/* docs/architecture.md lists every key with trn1's value: the table stays in step with the
 * preset (row format: | `section.key` | unit | meaning | value | source |). */
static void test_docs_list_every_key(void **state)
{
    (void)state;
    char *doc = tu_read_file(tu_source_path("docs/architecture.md"), NULL);
    assert_non_null(doc);
    mdl_arch_t a = load_ok("trn1");
    for (size_t k = 0; k < mdl_arch_key_count(); k++) {
        char row[128];
        snprintf(row, sizeof row, "\n| `%s` |", mdl_arch_key_name(k));
        const char *p = strstr(doc, row);
        if (!p)
            fprintf(stderr, "docs/architecture.md has no row for %s\n", mdl_arch_key_name(k));
        assert_non_null(p);
        for (int col = 0; col < 3 && p; col++) /* to the value column */
            p = strstr(p + 1, " | ");
        assert_non_null(p);
        p += 3;
        if (*p == '"')
            p++;
        char want[64];
        assert_int_equal(mdl_arch_get(&a, mdl_arch_key_name(k), want, sizeof want), NCSIM_OK);
        size_t n = strlen(want);
        int same = strncmp(p, want, n) == 0 && (p[n] == '"' || p[n] == ' ');
        if (!same)
            fprintf(stderr, "docs/architecture.md: %s is not %s\n", mdl_arch_key_name(k), want);
        assert_true(same);
    }
    free(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_preset_names),
        cmocka_unit_test(test_presets_load_and_validate),
        cmocka_unit_test(test_trn1_values),
        cmocka_unit_test(test_builtin_kept_as_copy),
        cmocka_unit_test(test_multichip_presets),
        cmocka_unit_test(test_every_key_has_a_source),
        cmocka_unit_test(test_preset_without_source_rejected),
        cmocka_unit_test(test_builtin_matches_source_tree),
        cmocka_unit_test(test_unknown_key_and_section),
        cmocka_unit_test(test_missing_key),
        cmocka_unit_test(test_wrong_types),
        cmocka_unit_test(test_syntax_errors_have_positions),
        cmocka_unit_test(test_missing_file_and_unknown_preset),
        cmocka_unit_test(test_base_inheritance),
        cmocka_unit_test(test_set),
        cmocka_unit_test(test_validate),
        cmocka_unit_test(test_to_json_round_trip),
        cmocka_unit_test(test_key_list),
        cmocka_unit_test(test_docs_list_every_key),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
