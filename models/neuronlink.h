/*
 * neuronlink.h -- chips connected by NeuronLink: the topology of the architecture config as
 * directed links with capacities, and the route between two chips.
 *
 * ring (inf2.48xlarge): chip i links to i-1 and i+1, links_per_chip/2 links each way.
 * torus2d (trn1.32xlarge, 4 x 4): chip (x, y) = y * torus_x + x links to its four
 * neighbours with wrap-around, one link each; routes go along x first, then y, the short
 * way round. full: every pair of chips has a direct link.
 * Where two directions reach the same neighbour (a ring of 2, a torus side of 2) their
 * links add up into one wider directed link.
 * With efa.instances > 1 the chips are split evenly into instances (chips 0..k-1 the first,
 * and so on), each with the topology above; chips of different instances have no NeuronLink
 * route: they talk over the instances' network (EFA, modelled by sim/cc.c).
 */
#ifndef NCSIM_MODELS_NEURONLINK_H
#define NCSIM_MODELS_NEURONLINK_H

#include <stdint.h>

#include "arch.h"

#define MDL_LINK_MAX_HOPS 64

typedef struct mdl_link {
    uint32_t from, to;   /* chips */
    double gbps;         /* capacity of this direction, GB/s */
} mdl_link_t;

typedef struct mdl_linkmap {
    uint32_t chips;
    mdl_link_t *links;   /* directed */
    uint32_t nlinks;
    int32_t *next_link;  /* chips x chips: link index of the first hop from a to b, -1 */
    uint32_t instances, chips_per_instance;
} mdl_linkmap_t;

/* Build the topology of `chips` chips from the config. Returns 0, or -1 (out of memory or a
 * topology that cannot connect the chips) with a message in err. */
int mdl_linkmap_build(const mdl_arch_t *a, uint32_t chips, mdl_linkmap_t *t, char *err,
                       size_t errlen);
void mdl_linkmap_free(mdl_linkmap_t *t);
/* The instance a chip belongs to. */
uint32_t mdl_linkmap_instance(const mdl_linkmap_t *t, uint32_t chip);
/* The directed links from chip a to chip b, in order; returns the hop count (0 when a == b or
 * when they are on different instances). */
uint32_t mdl_linkmap_route(const mdl_linkmap_t *t, uint32_t a, uint32_t b, uint32_t *links,
                            uint32_t max);

#endif
