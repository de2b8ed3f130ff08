/*
 * replay_main.c -- runs a fuzz target over every file of a corpus directory, for builds
 * without libFuzzer (ctest: `fuzz_NAME tests/fuzz/corpus/fuzz_NAME`). Files are visited in
 * name order so a failure is reproducible; the name of each is printed before it runs.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return -1;
    }
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            uint8_t *t = realloc(buf, cap * 2);
            if (!t) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = t;
            cap *= 2;
        }
    }
    fclose(f);
    if (!buf) {
        fprintf(stderr, "replay: out of memory reading %s\n", path);
        return -1;
    }
    /* an exact-size copy, so a sanitizer build catches reads past the end */
    uint8_t *exact = malloc(n ? n : 1);
    if (!exact) {
        free(buf);
        return -1;
    }
    memcpy(exact, buf, n);
    free(buf);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
        return 2;
    }
    struct dirent **names;
    int count = scandir(argv[1], &names, NULL, by_name);
    if (count < 0) {
        fprintf(stderr, "replay: cannot read directory %s\n", argv[1]);
        return 2;
    }
    int failed = 0, ran = 0;
    for (int i = 0; i < count; i++) {
        if (names[i]->d_name[0] != '.') {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[1], names[i]->d_name);
            printf("%s\n", path);
            fflush(stdout);
            if (replay_file(path))
                failed = 1;
            else
                ran++;
        }
        free(names[i]);
    }
    free(names);
    printf("replayed %d inputs\n", ran);
    return failed;
}
