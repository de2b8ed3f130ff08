/*
 * neuronlink.c -- topologies and routes (see neuronlink.h).
 */
#include "neuronlink.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int add_link(mdl_linkmap_t *t, uint32_t *cap, uint32_t from, uint32_t to, double gbps)
{
    for (uint32_t i = 0; i < t->nlinks; i++)
        if (t->links[i].from == from && t->links[i].to == to) {
            t->links[i].gbps += gbps; /* parallel links to the same neighbour */
            return 0;
        }
    if (t->nlinks == *cap) {
        uint32_t nc = *cap ? *cap * 2 : 64;
        mdl_link_t *p = realloc(t->links, nc * sizeof *p);
        if (!p)
            return -1;
        t->links = p;
        *cap = nc;
    }
    t->links[t->nlinks].from = from;
    t->links[t->nlinks].to = to;
    t->links[t->nlinks].gbps = gbps;
    t->nlinks++;
    return 0;
}

static int32_t find_link(const mdl_linkmap_t *t, uint32_t from, uint32_t to)
{
    for (uint32_t i = 0; i < t->nlinks; i++)
        if (t->links[i].from == from && t->links[i].to == to)
            return (int32_t)i;
    return -1;
}

/* One step from a towards b along one ring dimension of size n (positions pa -> pb): +1 or
 * -1, the short way round (ties go +1). */
static int ring_dir(uint32_t pa, uint32_t pb, uint32_t n)
{
    uint32_t fwd = (pb + n - pa) % n;
    return fwd <= n - fwd ? 1 : -1;
}

static uint32_t next_hop(const mdl_arch_t *a, uint32_t chips, uint32_t from, uint32_t to)
{
    switch (a->link.topology) {
    case MDL_TOPO_FULL:
        return to;
    case MDL_TOPO_RING:
        return (uint32_t)(((int64_t)from + ring_dir(from, to, chips) + chips) % chips);
    case MDL_TOPO_TORUS2D: {
        uint32_t X = a->link.torus_x, Y = a->link.torus_y;
        uint32_t fx = from % X, fy = from / X, tx = to % X, ty = to / X;
        if (fx != tx)
            fx = (uint32_t)(((int64_t)fx + ring_dir(fx, tx, X) + X) % X);
        else
            fy = (uint32_t)(((int64_t)fy + ring_dir(fy, ty, Y) + Y) % Y);
        return fy * X + fx;
    }
    }
    return to;
}

/* The links of one instance's chips [base, base + chips) (the topology is per instance). */
static int build_instance(const mdl_arch_t *a, uint32_t chips, uint32_t base, mdl_linkmap_t *t,
                          uint32_t *cap, char *err, size_t errlen)
{
    double bw = a->link.bandwidth_gbps;
    if (chips <= 1)
        return 0;
    switch (a->link.topology) {
    case MDL_TOPO_FULL:
        for (uint32_t i = 0; i < chips; i++)
            for (uint32_t j = 0; j < chips; j++)
                if (i != j && add_link(t, cap, base + i, base + j, bw))
                    goto oom;
        break;
    case MDL_TOPO_RING: {
        double per_side = bw * (a->link.links_per_chip >= 2 ? a->link.links_per_chip / 2 : 1);
        for (uint32_t i = 0; i < chips; i++)
            if (add_link(t, cap, base + i, base + (i + 1) % chips, per_side) ||
                add_link(t, cap, base + i, base + (i + chips - 1) % chips, per_side))
                goto oom;
        break;
    }
    case MDL_TOPO_TORUS2D: {
        uint32_t X = a->link.torus_x, Y = a->link.torus_y;
        if ((uint64_t)X * Y < chips) {
            snprintf(err, errlen, "a %ux%u torus cannot hold %u chips", X, Y, chips);
            return -1;
        }
        for (uint32_t i = 0; i < chips; i++) {
            uint32_t x = i % X, y = i / X;
            uint32_t nb[4] = {y * X + (x + 1) % X, y * X + (x + X - 1) % X,
                              ((y + 1) % Y) * X + x, ((y + Y - 1) % Y) * X + x};
            for (int k = 0; k < 4; k++)
                if (nb[k] != i && nb[k] < chips && add_link(t, cap, base + i, base + nb[k], bw))
                    goto oom;
        }
        break;
    }
    }
    return 0;
oom:
    snprintf(err, errlen, "out of memory building the NeuronLink topology");
    return -1;
}

int mdl_linkmap_build(const mdl_arch_t *a, uint32_t chips, mdl_linkmap_t *t, char *err,
                       size_t errlen)
{
    memset(t, 0, sizeof *t);
    t->chips = chips;
    uint32_t instances = a->efa.instances > 1 ? a->efa.instances : 1;
    if (chips % instances != 0) {
        snprintf(err, errlen, "%u chips cannot be split evenly among %u instances", chips,
                 instances);
        return -1;
    }
    uint32_t per = chips / instances;
    t->instances = instances;
    t->chips_per_instance = per;
    uint32_t cap = 0;
    for (uint32_t k = 0; k < instances; k++)
        if (build_instance(a, per, k * per, t, &cap, err, errlen)) {
            mdl_linkmap_free(t);
            return -1;
        }
    t->next_link = malloc((size_t)chips * chips * sizeof *t->next_link);
    if (!t->next_link) {
        snprintf(err, errlen, "out of memory building the NeuronLink topology");
        mdl_linkmap_free(t);
        return -1;
    }
    for (uint32_t i = 0; i < chips; i++)
        for (uint32_t j = 0; j < chips; j++) {
            int32_t l = -1;
            uint32_t base = i / per * per;
            /* chips of different instances have no NeuronLink route (they use EFA) */
            if (i != j && j / per == i / per) {
                l = find_link(t, i, base + next_hop(a, per, i - base, j - base));
                if (l < 0) {
                    snprintf(err, errlen, "the %s topology has no link from chip %u towards "
                                          "chip %u", a->link.topology == MDL_TOPO_RING ? "ring"
                                          : a->link.topology == MDL_TOPO_FULL ? "full" : "torus",
                             i, j);
                    mdl_linkmap_free(t);
                    return -1;
                }
            }
            t->next_link[(size_t)i * chips + j] = l;
        }
    return 0;
}

void mdl_linkmap_free(mdl_linkmap_t *t)
{
    free(t->links);
    free(t->next_link);
    memset(t, 0, sizeof *t);
}

uint32_t mdl_linkmap_instance(const mdl_linkmap_t *t, uint32_t chip)
{
    return t->chips_per_instance ? chip / t->chips_per_instance : 0;
}

uint32_t mdl_linkmap_route(const mdl_linkmap_t *t, uint32_t a, uint32_t b, uint32_t *links,
                            uint32_t max)
{
    uint32_t n = 0;
    while (a != b && n < max && n < MDL_LINK_MAX_HOPS) {
        int32_t l = t->next_link[(size_t)a * t->chips + b];
        if (l < 0)
            break;
        links[n++] = (uint32_t)l;
        a = t->links[l].to;
    }
    return n;
}
