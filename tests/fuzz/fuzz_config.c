/*
 * fuzz_config.c -- libFuzzer target for architecture configs (models/arch.c): a config file
 * is refused with a message or loads into a config that validates, prints as JSON and loads
 * back to the same JSON. The first line of the input, when it looks like KEY=VALUE, is also
 * applied as a --set override.
 */
#include <stdint.h>
#include <string.h>

#include "arch.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fz_write("config.json", data, size);
    if (!path)
        return 0;
    mdl_arch_t a;
    char err[1024] = "";
    ncsim_status_t st = mdl_arch_load(path, &a, err, sizeof err);
    if (st != NCSIM_OK) {
        fz_check(err[0] != 0, "fuzz_config", "a refusal without a message");
    } else {
        if (mdl_arch_validate(&a, err, sizeof err) == NCSIM_OK) {
            char *j1 = mdl_arch_to_json(&a);
            fz_check(j1 != NULL, "fuzz_config", "a valid config does not print");
            const char *p2 = fz_write("again.json", (const uint8_t *)j1, strlen(j1));
            mdl_arch_t b;
            fz_check(p2 && mdl_arch_load(p2, &b, err, sizeof err) == NCSIM_OK, "fuzz_config",
                     "a printed config does not load");
            char *j2 = mdl_arch_to_json(&b);
            fz_check(j2 && strcmp(j1, j2) == 0, "fuzz_config", "print -> load -> print differs");
            free(j1);
            free(j2);
        }
    }
    /* the first line as an override of trn1 */
    char line[512];
    size_t n = 0;
    while (n < size && n < sizeof line - 1 && data[n] != '\n')
        n++;
    memcpy(line, data, n);
    line[n] = 0;
    if (memchr(line, '=', n) && mdl_arch_load("trn1", &a, err, sizeof err) == NCSIM_OK) {
        err[0] = 0;
        if (mdl_arch_set(&a, line, err, sizeof err) != NCSIM_OK)
            fz_check(err[0] != 0, "fuzz_config", "an override refused without a message");
        else
            (void)mdl_arch_validate(&a, err, sizeof err);
    }
    return 0;
}
