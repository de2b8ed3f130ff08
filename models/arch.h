/*
 * arch.h -- the architecture configuration: every number the models use.
 *
 * A config is a JSON object of sections ("pe", "act", ...) of keys; each key of this struct
 * is addressed as "section.key" (e.g. "hbm.bandwidth_gbps") by --set and by sweeps.
 * Presets live in models/presets/NAME.json. Parsing is strict: an unknown section or key,
 * a missing key, or a value of the wrong type is an error naming the key and the file.
 * Every preset also carries a "sources" object mapping each "section.key" to the source of
 * its number (a tag of shared/reference/neuroncore-v2.md) or to "assumption: why".
 */
#ifndef NCSIM_MODELS_ARCH_H
#define NCSIM_MODELS_ARCH_H

#include <stddef.h>
#include <stdint.h>

#include "isa.h"

typedef enum mdl_topology {
    MDL_TOPO_RING,
    MDL_TOPO_TORUS2D,
    MDL_TOPO_FULL /* fully connected */
} mdl_topology_t;

/* Collective algorithms (docs/data-movement.md). cc.algorithm picks the one used within an
 * instance, cc.inter_algorithm the stage across instances; auto chooses by size and ranks. */
typedef enum mdl_cc_algorithm {
    MDL_CC_AUTO,
    MDL_CC_RING,
    MDL_CC_MESH,      /* direct writes to every member, O(1) steps */
    MDL_CC_KANGARING, /* ring of chip pairs (primaries), two counter-rotating cycles */
    MDL_CC_RDH,       /* recursive doubling / halving */
    MDL_CC_FLAT_RING  /* across instances only: one ring over every member, no hierarchy */
} mdl_cc_algorithm_t;

/* What cc.algorithm=auto may choose: the runtime of the May 2023 nccom-test tables (SDK 2.10:
 * Ring within and across instances, hierarchical across them), or the current one (Mesh, RDH,
 * KangaRing within, Mesh and RDH across, by size). */
typedef enum mdl_cc_runtime {
    MDL_CC_RUNTIME_SDK2_10,
    MDL_CC_RUNTIME_CURRENT
} mdl_cc_runtime_t;

/* Per compute engine (act, dve, pool): clock and the published cost-model constants. */
typedef struct mdl_engine_cfg {
    double clock_ghz;            /* engine clock */
    double min_ii_cycles;        /* MIN_II: smallest initiation interval (64) */
    double latency_cycles;       /* pipeline latency added to II for completion (assumption) */
    double static_overhead_cycles; /* fixed access overhead per instruction (about 60) */
} mdl_engine_cfg_t;

typedef struct mdl_arch {
    char name[64];
    char description[256];

    /* "system" */
    uint32_t chips;              /* chips in the system */
    uint32_t cores_per_chip;     /* 2 */
    uint32_t semaphores;         /* per core, 64 */

    /* "pe" */
    struct {
        double clock_ghz;            /* 2.8 */
        uint32_t rows, cols;         /* 128 x 128 systolic array */
        double fp32_factor;          /* fp32 inputs cost 4x */
        double fp8_factor;           /* fp8 cost relative to bf16 on NC-v2: 1.0 */
        double mm_init_latency_cycles; /* MM_INIT_LATENCY 64 (also the min II) */
        double ldweights_speedup;    /* LoadStationary up to 4x faster than an MM */
        double latency_cycles;       /* extra pipeline latency to PSUM (assumption) */
        double max_moving_free;      /* 512 */
        double throttle_factor;      /* multiplies every pe II; 1 = no throttle */
    } pe;

    /* "act", "dve", "pool" */
    mdl_engine_cfg_t act, dve, pool;

    /* "sp" */
    struct {
        double clock_ghz;            /* not published: assumption 1.4 */
        double issue_cycles;         /* cost of one sequencer instruction (dma trigger, nop) */
    } sp;

    /* "costs": engine-independent cost-model constants (reference section 5) */
    struct {
        double min_ii_dynamic_cycles;   /* 600 */
        double gpsimd_start_cycles;     /* 150 */
        double stride_penalty_bytes;    /* strides above this (16) halve the bandwidth */
        double stride_penalty_factor;   /* 2 */
        double act_reduce_cycles;       /* ActReadAccumulator, about 64 */
        double dve_reciprocal_factor;   /* 8 */
        double dve_tensor_tensor_factor; /* 2: a two-input tensor_tensor streams k N */
        double bn_aggr_factor;          /* 13 per triple */
        double semaphore_latency_ns;    /* semaphore update to the waiting instruction's start */
    } costs;

    /* "sbuf", "psum" */
    struct {
        uint32_t partitions;         /* 128 */
        uint64_t bytes_per_partition; /* 196,608 */
    } sbuf;
    struct {
        uint32_t partitions;         /* 128 */
        uint64_t bytes_per_partition; /* 16,384 */
        uint32_t banks;              /* 8 */
    } psum;

    /* "hbm" */
    struct {
        uint64_t size_bytes;         /* per chip, 32 GiB */
        double bandwidth_gbps;       /* per chip, 820 GB/s */
        double latency_ns;           /* access latency (assumption) */
        uint32_t channels;           /* independent channels (assumption) */
        uint64_t interleave_bytes;   /* address interleave between channels (assumption) */
    } hbm;

    /* "dma" */
    struct {
        uint32_t engines;            /* per core, 16 */
        uint32_t queues;             /* per core, 16 */
        double engine_bandwidth_gbps; /* per engine peak, 27.2 GB/s */
        double trigger_latency_ns;   /* trigger to first descriptor: a latency, not a resource */
        double descriptor_ns;        /* one engine's processing of one descriptor (piece) */
        uint32_t queue_round_robin;  /* 1: queues share the descriptor stages round-robin;
                                      * 0: whole transfers, first come, first served */
        double piece_overhead_ns;    /* per contiguous piece (descriptor element) overhead */
        double min_efficient_bytes;  /* bytes per piece at which efficiency is near peak (2 KiB) */
    } dma;

    /* "link": NeuronLink between chips */
    struct {
        mdl_topology_t topology;
        uint32_t torus_x, torus_y;   /* for the 2D torus */
        uint32_t links_per_chip;
        double bandwidth_gbps;       /* per link, per direction */
        double hop_latency_ns;
    } link;

    /* "efa": instances joined by Elastic Fabric Adapter (the network between instances). The
     * system's chips are split evenly among the instances; the NeuronLink topology ("link")
     * describes the chips of one instance. */
    struct {
        uint32_t instances;          /* instances in the system (1: no network crossing) */
        double bandwidth_gbits;      /* network bandwidth per instance, per direction, Gbit/s */
        double latency_ns;           /* added to a collective step that crosses instances */
    } efa;

    /* "cc": collective engine */
    struct {
        mdl_cc_runtime_t runtime;           /* the rule of auto */
        mdl_cc_algorithm_t algorithm;       /* within an instance (auto) */
        mdl_cc_algorithm_t inter_algorithm; /* the stage across instances (auto) */
        uint64_t mesh_max_bytes;     /* auto, within an instance: Mesh below this size */
        uint64_t rdh_max_bytes;      /* ... RDH below this, KangaRing (or Ring) from it */
        uint64_t inter_mesh_max_bytes; /* auto, across instances: Mesh below this size ... */
        uint32_t inter_mesh_max_ranks; /* ... and at most this many instances */
        uint64_t inter_rdh_max_bytes;  /* ... RDH below this, Ring from it */
        uint64_t flat_min_bytes;       /* auto: a flat ring from this size (0: never) */
        double fixed_ns;             /* per collective, before its first step */
        double min_latency_ns;       /* no collective completes sooner after it begins */
        double step_latency_ns;      /* fixed cost per algorithm step (sync, descriptors) */
        double rank_bandwidth_gbps;  /* data-path rate of one member's chunk */
        uint64_t packet_bytes;       /* CC DMA packet size (64 KiB) */
    } cc;
} mdl_arch_t;

/*
 * Load a preset by name or a JSON config file. A name containing '/' or ending in ".json" is a
 * file path; otherwise NAME is looked up in $NCSIM_PRESET_DIR/NAME.json when that variable is
 * set and the file exists, else among the presets compiled into the library. A file may say
 * "base": "NAME" and give only the keys it changes (docs/architecture.md). Does not validate:
 * apply the --set overrides, then call mdl_arch_validate(). err gets a message naming the file
 * and key on failure. Returns NCSIM_OK, NCSIM_USAGE (bad name/keys/values) or NCSIM_IO.
 */
ncsim_status_t mdl_arch_load(const char *name_or_path, mdl_arch_t *out, char *err, size_t errlen);
/* The same from JSON text in memory; `name` is used in messages, and a relative "base" path
 * is taken from the current directory. */
ncsim_status_t mdl_arch_parse(const char *text, size_t len, const char *name, mdl_arch_t *out,
                              char *err, size_t errlen);
/* Apply one "section.key=value" override (NCSIM_USAGE on an unknown key or a bad value). */
ncsim_status_t mdl_arch_set(mdl_arch_t *arch, const char *assignment, char *err, size_t errlen);
/* Check consistency (positive clocks, partitions <= 128, ...); the message names the key. */
ncsim_status_t mdl_arch_validate(const mdl_arch_t *arch, char *err, size_t errlen);
/* Write the full resolved config as JSON (same schema as presets, without "sources"), keys in
 * a fixed order, numbers that parse back to the identical value. NULL when out of memory. */
char *mdl_arch_to_json(const mdl_arch_t *arch); /* malloc'd */
/* The config keys ("section.key") in the order mdl_arch_to_json prints them. */
size_t mdl_arch_key_count(void);
const char *mdl_arch_key_name(size_t index); /* NULL when index >= count */
/* One value as text, formatted as in mdl_arch_to_json (enums without quotes), e.g. for sweep
 * result tables. NCSIM_USAGE for an unknown key. */
ncsim_status_t mdl_arch_get(const mdl_arch_t *arch, const char *key, char *buf, size_t buflen);
/* Names of the built-in presets, NULL-terminated. */
const char *const *mdl_arch_preset_names(void);
/* $NCSIM_PRESET_DIR when set (presets found there take precedence over the built-in copies),
 * else NULL: the presets compiled into the library are used. */
const char *mdl_arch_preset_dir(void);
/* Chips per instance: system.chips / efa.instances. */
uint32_t mdl_arch_chips_per_instance(const mdl_arch_t *arch);
/* Memory geometry for the assembler and loader. */
void mdl_arch_geometry(const mdl_arch_t *arch, isa_geometry_t *g);
/* The assembler's and loader's `.arch NAME` lookup (isa_asm_options_t.arch_lookup): the
 * geometry of preset or config NAME; -1 when it does not load. ctx is unused. */
int mdl_arch_geometry_lookup(void *ctx, const char *name, isa_geometry_t *g);

#endif
