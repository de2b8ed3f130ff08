/*
 * arch_internal.h -- the presets compiled into ncsim_models.
 *
 * The top-level CMakeLists.txt turns every models/presets/NAME.json into a byte array in the
 * generated file arch_presets.c, so `ncsim --arch trn1` works without the source tree.
 * Only arch.c uses these.
 */
#ifndef NCSIM_MODELS_ARCH_INTERNAL_H
#define NCSIM_MODELS_ARCH_INTERNAL_H

#include <stddef.h>

typedef struct mdl_preset_text {
    const char *name;          /* file name without ".json" */
    const unsigned char *text; /* the file's bytes, NUL-terminated */
    size_t len;                /* bytes, without the NUL */
} mdl_preset_text_t;

/* Sorted by name; ends with an entry whose name is NULL. */
extern const mdl_preset_text_t mdl_preset_texts[];
/* The same names, NULL-terminated (what mdl_arch_preset_names() returns). */
extern const char *const mdl_preset_names[];

#endif
