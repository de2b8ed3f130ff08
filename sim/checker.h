/*
 * checker.h -- `ncsim check`: races, uninitialised reads, NaN producers, PSUM accumulation
 * misuse and semaphore misuse in a program (issue 7; docs/check.md).
 *
 * (The module is sim/checker.*, not sim/check.*: sim.c includes isa/check.h by its short
 * name, and a sim/check.h would shadow it for every file in sim/.)
 *
 * The checker watches a simulation through the observer hooks of sim.h and keeps:
 *   - a vector clock per accessor: each engine of each core (pe act dve pool sp cc; cc also
 *     performs the collectives' HBM accesses), each DMA queue of each core;
 *   - happens-before from the program's own ordering, never from simulated time: program
 *     order within an engine and within a DMA queue, semaphore post -> wait edges with
 *     counting semantics, DMA issue -> transfer -> posts, collectives as barriers of their
 *     members;
 *   - shadow memory for SBUF, PSUM (per core) and HBM (per chip) as byte ranges, each with
 *     its last write and the reads since (FastTrack), so that any two accesses to the same
 *     bytes that happens-before does not order are reported, whether or not the schedule of
 *     this run made them collide.
 * Static checks of the program (waits that can never hold, posts nobody waits for) need no
 * run. Findings are values the caller prints (text or JSON).
 */
#ifndef NCSIM_SIM_CHECKER_H
#define NCSIM_SIM_CHECKER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "arch.h"
#include "isa.h"
#include "sim.h"

/* Checks, as a bit mask (`--check races,uninit,nan,psum,sems`). */
#define CHK_RACES 0x01u  /* RAW / WAR / WAW between accesses not ordered by happens-before */
#define CHK_UNINIT 0x02u /* reads of bytes never written (HBM inputs are written at start) */
#define CHK_NAN 0x04u    /* the first instruction whose result holds NaN or Inf from finite
                          * inputs (functional runs only) */
#define CHK_PSUM 0x08u   /* matmul acc into PSUM not last written by pe; reads of PSUM while
                          * its accumulation group is open */
#define CHK_SEMS 0x10u   /* waits that can never hold, orphan posts, semaphore overflow */
#define CHK_VIEWS 0x20u  /* views that start in one tensor and run past its end */
#define CHK_ALL 0x3fu

/* XX(ID, name) -- the kinds of findings; `name` is what text and JSON print. */
#define CHK_KIND_MAP(XX)                                                                       \
    XX(RACE, "race")                                                                           \
    XX(UNINIT, "uninit")                                                                       \
    XX(NAN, "nan")                                                                             \
    XX(PSUM_ACC, "psum-acc")                                                                   \
    XX(PSUM_OPEN, "psum-open")                                                                 \
    XX(WAIT_UNSAT, "wait-unsat")                                                               \
    XX(POST_ORPHAN, "post-orphan")                                                             \
    XX(SEM_OVERFLOW, "sem-overflow")                                                           \
    XX(VIEW_BOUNDS, "view-bounds")

typedef enum chk_kind {
#define XX(id, name) CHK_KIND_##id,
    CHK_KIND_MAP(XX)
#undef XX
        CHK_KIND_COUNT
} chk_kind_t;

/* Races name the order this run saw: RAW = a write, then a read of the same bytes. */
typedef enum chk_race { CHK_RACE_NONE, CHK_RACE_RAW, CHK_RACE_WAR, CHK_RACE_WAW } chk_race_t;

/* Who performed an access: an instruction on an engine, or the transfer of a `dma`
 * instruction on a queue (`queue` >= 0; engine/index are then the issuing instruction). */
typedef struct chk_site {
    int valid;
    uint32_t core;
    uint8_t engine;
    int8_t queue;        /* -1: the engine itself */
    uint32_t index;      /* in the engine's stream */
    const isa_instr_t *instr;
    uint8_t write;       /* the access was a write */
} chk_site_t;

typedef struct chk_finding {
    chk_kind_t kind;
    chk_race_t race;
    int has_range;
    uint8_t space;       /* isa_space_t of the range */
    uint32_t unit;       /* core (SBUF/PSUM) or chip (HBM) */
    uint32_t p0, p1;     /* partitions [p0, p1) (HBM: 0, 1) */
    uint64_t lo, hi;     /* bytes [lo, hi) in each partition, or HBM addresses */
    chk_site_t first;    /* the earlier access (races, psum), or the instruction at fault */
    chk_site_t second;   /* the later access (races, psum) */
    uint8_t sem;         /* semaphore findings */
    int64_t value;       /* the wait's value, the overflowing result, the posts' bound */
    uint64_t count;      /* occurrences merged into this finding (same instructions) */
} chk_finding_t;

typedef struct chk chk_t;

/* A checker for a program run on an architecture with the given checks. The program and
 * arch must outlive it. NCSIM_NOMEM or NCSIM_OK. */
ncsim_status_t chk_create(const isa_program_t *prog, const mdl_arch_t *arch, unsigned checks,
                          chk_t **out);
void chk_destroy(chk_t *k);

/* The observer to put in sim_options_t.observer for the run. */
const sim_observer_t *chk_observer(chk_t *k);

/* The static checks (CHK_SEMS): waits no posts can satisfy, posts no wait can observe. */
void chk_static(chk_t *k);

/* Parse "races,uninit,nan,psum,sems" or "all" into a mask; -1 on an unknown name (its
 * text in err). */
int chk_parse_list(const char *list, unsigned *mask, char *err, size_t errlen);

size_t chk_count(const chk_t *k);
const chk_finding_t *chk_finding(const chk_t *k, size_t i);
/* Findings were dropped beyond the limit of kept findings (then only counted). */
uint64_t chk_dropped(const chk_t *k);
/* Out of memory while checking: the result is incomplete. */
int chk_failed(const chk_t *k);

const char *chk_kind_name(chk_kind_t kind);
const char *chk_race_name(chk_race_t race);
const char *chk_space_name(uint8_t space); /* "sbuf" "psum" "hbm" */

/* One finding as the text chk_print gives it (malloc'd, NULL when out of memory). */
char *chk_finding_text(const chk_t *k, size_t i);
/* The declared tensor holding the start of a finding's range, or "". */
const char *chk_finding_tensor(const chk_t *k, size_t i);
/* Print findings as text (at most `limit`, 0 for all). */
void chk_print(const chk_t *k, FILE *f, size_t limit);
/* All findings as a JSON document (malloc'd), NULL when out of memory. */
char *chk_json(const chk_t *k);

#endif
