/*
 * nki_passes.h -- the NKI frontend's lowering passes in C: the list scheduler, the semaphore
 * waits and the folding of an engine's stream into .loop nests (python/ncsim/nki/_sched.py and
 * _fold.py hold the reference implementations; docs/nki.md, "Cost of lowering").
 *
 * INTERNAL. These functions are exported from libncsim.so (their names start with ncsim_ like
 * every export) only so that the Python package (python/ncsim/nki/_native.py) can call them
 * through ctypes. They are not declared in include/ncsim.h, are not part of the stable API
 * (docs/api.md, "Stability") and may change or go in any release. Not installed.
 *
 * Every array is validated before it is used: a bad count, agent, engine or index is refused
 * with NCSIM_USAGE and a message (ncsim_last_error()) naming the node and the field, never read
 * out of bounds. The results are those of the Python implementations, bit for bit: the same
 * floating-point operations in the same order (this file is built with -ffp-contract=off).
 */
#ifndef NCSIM_NKI_PASSES_H
#define NCSIM_NKI_PASSES_H

#include <stddef.h>
#include <stdint.h>

#include "ncsim.h"

/*
 * The list scheduler (_sched.schedule). n nodes in trace order; for node p:
 *   agent[p]   the engine (< n_engines) or n_engines + DMA queue that runs it (< n_engines +
 *              n_queues)
 *   engine[p]  the engine that issues it (< n_engines)
 *   dep_offsets[p] .. dep_offsets[p+1]: its dependences, pairs deps[2k] = agent, deps[2k+1] =
 *              index of the instruction in that agent's trace order (dep_offsets has n + 1
 *              entries, starts at 0, never decreases)
 *   cost[2p], cost[2p+1]: the estimated ns of an engine's instruction (the second ignored), or
 *              the (queue occupancy, latency) of a transfer; finite and not negative
 *   pin[p]     nonzero: traced inside ncc.no_reorder()
 * window: the scheduler's window (<= 1: the trace order); issue_ns: what issuing a transfer
 * takes its engine in the estimate. Writes order[k] = the trace position of the k-th node of
 * the new order. NCSIM_USAGE on a bad array or a cycle among the dependences.
 */
NCSIM_API ncsim_status_t ncsim_nki_internal_schedule(
    int64_t n, const int32_t *agent, const int32_t *engine, const int64_t *dep_offsets,
    const int32_t *deps, const double *cost, const uint8_t *pin, int32_t window,
    int32_t n_engines, int32_t n_queues, double issue_ns, int64_t *order);

/*
 * The semaphore waits of the nodes in a given order (_sched.assign_waits). agent, engine,
 * dep_offsets, deps as above; index[p]: node p's index in its agent's trace order (each
 * agent's indices 0, 1, ... once each); order: a permutation of 0 .. n-1 in which every
 * dependence comes before its node. For the k-th node of the order, writes new_index[k]
 * (its index in its agent's new order) and its waits: pairs waits[2w] = agent, waits[2w+1] =
 * new index, w from wait_offsets[k] to wait_offsets[k+1] (wait_offsets: n + 1 entries; waits:
 * room for dep_offsets[n] pairs, which is never exceeded).
 */
NCSIM_API ncsim_status_t ncsim_nki_internal_waits(
    int64_t n, const int32_t *agent, const int32_t *engine, const int32_t *index,
    const int64_t *dep_offsets, const int32_t *deps, const int64_t *order, int32_t n_engines,
    int32_t n_queues, int32_t *new_index, int64_t *wait_offsets, int32_t *waits);

/*
 * One engine's stream folded into .loop nests (_fold.fold with fast=True): text holds n_lines
 * lines separated by '\n' (len bytes, no terminator needed). The folded lines, separated by
 * '\n', go to *out (NUL-terminated; ncsim_free), their byte count to *out_len. NCSIM_USAGE
 * when the text is not ASCII, does not hold n_lines lines, or has a number of 2^62 or more
 * (the Python fold takes those).
 */
NCSIM_API ncsim_status_t ncsim_nki_internal_fold(const char *text, size_t len, int64_t n_lines,
                                                 char **out, size_t *out_len);

/*
 * The program's semaphore declarations and engine streams (what Tracer.finish writes after the
 * buffers): for n nodes in trace order, agent[p], engine[p], line[p] (its source line) and
 * its text (texts: n entries separated by '\n', texts_len bytes, ASCII); order, new_index,
 * wait_offsets and waits as ncsim_nki_internal_schedule and _waits give them. names: the
 * n_engines + n_queues semaphore names, then the n_engines engine names, separated by '\n'.
 * Writes, separated by '\n': ".sem NAME" for each agent some wait names, then per engine
 * with instructions ".engine NAME" and its lines -- ".loc LINE" where the source line
 * changes, "nop | wait ... | wait ..." for waits beyond two, the instruction with " | wait
 * NAME >= VALUE" (the value: the waited instruction's rank among its agent's posting ones)
 * and " | post NAME" when a wait names it -- folded into loops when fold is nonzero
 * (ncsim_nki_internal_fold). *out: NUL-terminated (ncsim_free). NCSIM_USAGE on a bad array or
 * a text the fold does not take.
 */
NCSIM_API ncsim_status_t ncsim_nki_internal_streams(
    int64_t n, const int32_t *agent, const int32_t *engine, const int64_t *line,
    const char *texts, size_t texts_len, const int64_t *order, const int32_t *new_index,
    const int64_t *wait_offsets, const int32_t *waits, const char *names, size_t names_len,
    int32_t n_engines, int32_t n_queues, int fold, char **out, size_t *out_len);

/*
 * Every node's dependences from the accesses the tracer logged (Tracer.emit with the access
 * log; the semantics of _core.Tracer._access_ref). log: n_log values, per node in trace order
 * its agent (< n_agents), its index in that agent's trace order, its accesses in the order made
 * (each: the memory, 0 .. n_mem-1; flags, bit 0 set for a write, the rest the number of dims d,
 * at most 16; then d (lo, hi) pairs of the box, each bound within +-2^62), then -1. mem_ext: per
 * memory its extents along dims 0 and 1 (positive; only the cells of the index depend on them).
 * An access meets every earlier record of its memory that is not covered and whose box
 * overlaps its own (over the dims both have): a dependence on it when either is a write, or
 * when the access covers an earlier read of the same agent (the two reads keep their order);
 * a write covers, and so retires, every record its box contains, a read those reads of its
 * own agent. Writes *dep_offsets (n + 1 entries) and *deps (pairs agent, index, each node's
 * distinct, its own accesses left out), both to be freed with ncsim_free, in the form
 * ncsim_nki_internal_schedule reads. NCSIM_USAGE on a malformed log.
 */
NCSIM_API ncsim_status_t ncsim_nki_internal_deps(int64_t n, const int64_t *log, int64_t n_log,
                                                 int64_t n_mem, const int64_t *mem_ext,
                                                 int32_t n_agents, int64_t **dep_offsets,
                                                 int32_t **deps);

#endif
