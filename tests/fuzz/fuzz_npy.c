/*
 * fuzz_npy.c -- libFuzzer target for the .npy reader (models/npy.c): any bytes are either
 * refused with a message or give an array whose sizes agree; the layout normalisation
 * (big-endian, Fortran order) and every input conversion run on what is accepted.
 */
#include <stdint.h>
#include <string.h>

#include "fuzz_util.h"
#include "npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mdl_npy_t a;
    char err[512] = "";
    ncsim_status_t st = mdl_npy_parse(data, size, "fuzz.npy", &a, err, sizeof err);
    if (st != NCSIM_OK) {
        fz_check(err[0] != 0 && !a.data, "fuzz_npy", "a refusal without a message");
        return 0;
    }
    fz_check(a.data != NULL && a.nbytes == a.count * a.itemsize, "fuzz_npy",
             "sizes of an accepted array disagree");
    /* every conversion a tensor type may ask for, on copies */
    static const mdl_npy_type_t to[] = {MDL_NPY_F4, MDL_NPY_F2, MDL_NPY_I1, MDL_NPY_U1,
                                        MDL_NPY_I2, MDL_NPY_U2, MDL_NPY_I4, MDL_NPY_U4};
    for (size_t i = 0; i < sizeof to / sizeof to[0]; i++) {
        mdl_npy_t c = a;
        c.data = malloc(a.nbytes ? a.nbytes : 1);
        if (!c.data)
            break;
        memcpy(c.data, a.data, a.nbytes);
        st = mdl_npy_convert(&c, to[i], "fuzz.npy", "t", err, sizeof err);
        if (st == NCSIM_OK && mdl_npy_convertible(a.type, to[i]))
            fz_check(c.type == to[i] && c.nbytes == c.count * mdl_npy_type_size(to[i]),
                     "fuzz_npy", "a conversion gave the wrong type or size");
        free(c.data);
    }
    mdl_npy_free(&a);
    return 0;
}
