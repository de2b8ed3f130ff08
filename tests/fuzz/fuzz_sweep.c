/*
 * fuzz_sweep.c -- libFuzzer target for sweep specs (explore/sweep.c): a spec is refused with
 * a message, or loads; its first points are then validated one by one, as `sweep --index`
 * does, and listed. The program a spec names, p.nca, exists beside it.
 */
#include <stdint.h>
#include <string.h>

#include "fuzz_util.h"
#include "sweep.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char prog[] = ".hbm x fp32 [128, 64] input\n.hbm y fp32 [128, 64] output\n"
                               ".engine sp\n    dma y, x\n";
    if (!fz_write("p.nca", (const uint8_t *)prog, sizeof prog - 1))
        return 0;
    const char *spec = fz_write("spec.json", data, size);
    if (!spec)
        return 0;
    sim_sweep_t *sw = NULL;
    char err[2048] = "";
    ncsim_status_t st = sim_sweep_load_unchecked(spec, &sw, err, sizeof err);
    if (st != NCSIM_OK) {
        fz_check(err[0] != 0 && !sw, "fuzz_sweep", "a refusal without a message");
        return 0;
    }
    uint64_t n = sim_sweep_point_count(sw);
    fz_check(n >= 1, "fuzz_sweep", "a sweep without points");
    for (uint64_t i = 0; i < n && i < 8; i++) {
        err[0] = 0;
        if (sim_sweep_check_points(sw, i, i, err, sizeof err) != NCSIM_OK)
            fz_check(err[0] != 0, "fuzz_sweep", "a bad point without a message");
    }
    sim_sweep_free(sw);
    return 0;
}
