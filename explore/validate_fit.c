/*
 * validate_fit.c -- `ncsim fit`: choose config keys inside bounds so that a manifest's fit
 * entries match their measurements (validate.h, docs/validation.md).
 *
 * The cost is the weighted sum of squared log ratios simulated / measured, so a 2x too slow
 * and a 2x too fast entry weigh the same and figures of different units mix. The optimiser is
 * NLopt's (Debian libnlopt-dev): BOBYQA (bound-constrained quadratic models, derivative-free)
 * for two or more keys, Sbplx for one (BOBYQA needs two). The keys are scaled to [0, 1] within
 * their bounds so that nanoseconds and GB/s get comparable steps. The start is the base
 * config's value of each key clamped to its bounds; nothing random is used (the seed is fixed
 * anyway), so two fits of the same manifest write identical files.
 */
#include "validate.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <nlopt.h>
#include <stdlib.h>
#include <string.h>

#include "ncsim.h"
#include "util.h"

/* Cost of a trial point where some fit entry has no figure: worse than any real point. */
#define FIT_FAILED_COST 1e6
#define FIT_DEFAULT_MAX_EVALS 200

ncsim_status_t sim_fit_parse_key(const char *text, char *buf, size_t buflen, sim_fit_key_t *k,
                                 char *err, size_t errlen)
{
    const char *eq = strchr(text, '=');
    const char *colon = eq ? strchr(eq, ':') : NULL;
    if (!eq || !colon || eq == text) {
        xp_errf(err, errlen, "--key %s: expected SECTION.KEY=LO:HI", text);
        return NCSIM_USAGE;
    }
    size_t n = (size_t)(eq - text);
    if (n >= buflen) {
        xp_errf(err, errlen, "--key %s: key too long", text);
        return NCSIM_USAGE;
    }
    memcpy(buf, text, n);
    buf[n] = 0;
    char lo[64], hi[64];
    size_t nl = (size_t)(colon - eq - 1);
    if (nl == 0 || nl >= sizeof lo || strlen(colon + 1) == 0 || strlen(colon + 1) >= sizeof hi) {
        xp_errf(err, errlen, "--key %s: expected SECTION.KEY=LO:HI", text);
        return NCSIM_USAGE;
    }
    memcpy(lo, eq + 1, nl);
    lo[nl] = 0;
    snprintf(hi, sizeof hi, "%s", colon + 1);
    char *e1, *e2;
    errno = 0;
    k->lo = strtod(lo, &e1);
    k->hi = strtod(hi, &e2);
    if (*e1 || *e2 || errno || !isfinite(k->lo) || !isfinite(k->hi)) {
        xp_errf(err, errlen, "--key %s: bounds must be numbers", text);
        return NCSIM_USAGE;
    }
    if (!(k->lo < k->hi)) {
        xp_errf(err, errlen, "--key %s: the lower bound must be below the upper one", text);
        return NCSIM_USAGE;
    }
    k->key = buf;
    return NCSIM_OK;
}

/* Whether the key holds an integer (its formatted value has no '.' or exponent). */
static int integral_key(const char *key)
{
    ncsim_arch_t *a = NULL;
    char *v = NULL;
    int integral = ncsim_arch_load("trn1", &a) == NCSIM_OK &&
                   ncsim_arch_get(a, key, &v) == NCSIM_OK && !strpbrk(v, ".eE");
    ncsim_free(v);
    ncsim_arch_free(a);
    return integral;
}

void sim_fit_assignment(const char *key, double v, char *buf, size_t buflen)
{
    if (integral_key(key))
        snprintf(buf, buflen, "%s=%.0f", key, v < 0 ? 0.0 : round(v));
    else
        snprintf(buf, buflen, "%s=%.17g", key, v);
}

typedef struct fit_ctx {
    sim_validate_manifest_t *m;
    const sim_fit_options_t *o;
    sim_validate_result_t *results;
    char assign[SIM_FIT_MAX_KEYS][160];
    const char *extra[SIM_FIT_MAX_KEYS];
    unsigned evals;
    double best_cost;
    double best[SIM_FIT_MAX_KEYS];
    ncsim_status_t fatal;     /* a run error that stops the fit */
    char fatal_msg[1024];
} fit_ctx_t;

static double key_value(const sim_fit_key_t *k, double x)
{
    return k->lo + x * (k->hi - k->lo);
}

/* The cost at the real key values v (results left in c->results). */
static double evaluate(fit_ctx_t *c, const double *v)
{
    for (size_t i = 0; i < c->o->nkeys; i++) {
        sim_fit_assignment(c->o->keys[i].key, v[i], c->assign[i], sizeof c->assign[i]);
        c->extra[i] = c->assign[i];
    }
    sim_validate_options_t ro = c->o->run;
    ro.extra_sets = c->extra;
    ro.nextra_sets = c->o->nkeys;
    ro.only_fit = 1;
    ncsim_status_t st = sim_validate_run(c->m, &ro, c->results, c->fatal_msg,
                                         sizeof c->fatal_msg);
    c->evals++;
    if (st != NCSIM_OK) {
        c->fatal = st;
        return HUGE_VAL;
    }
    double cost = 0;
    int failed = 0;
    for (size_t i = 0; i < c->m->nentries; i++) {
        const sim_validate_result_t *r = &c->results[i];
        const sim_validate_entry_t *e = &c->m->entries[i];
        if (!e->fit || !r->ran)
            continue;
        if (r->status != NCSIM_OK) {
            failed = 1;
            continue;
        }
        double l = log(r->ratio);
        cost += e->weight * l * l;
    }
    if (failed)
        cost += FIT_FAILED_COST;
    if (c->o->progress) {
        fprintf(c->o->progress, "fit: evaluation %u:", c->evals);
        for (size_t i = 0; i < c->o->nkeys; i++)
            fprintf(c->o->progress, " %s", c->assign[i]);
        fprintf(c->o->progress, "  cost %.6g%s\n", cost, failed ? " (an entry failed)" : "");
    }
    if (cost < c->best_cost) {
        c->best_cost = cost;
        memcpy(c->best, v, c->o->nkeys * sizeof *v);
    }
    return cost;
}

static double objective(unsigned n, const double *x, double *grad, void *data)
{
    (void)grad; /* derivative-free algorithms pass NULL */
    fit_ctx_t *c = data;
    if (c->fatal != NCSIM_OK) {
        return HUGE_VAL;
    }
    double v[SIM_FIT_MAX_KEYS];
    for (unsigned i = 0; i < n; i++)
        v[i] = key_value(&c->o->keys[i], x[i]);
    double cost = evaluate(c, v);
    return isfinite(cost) ? cost : FIT_FAILED_COST * 10;
}

static const char *nlopt_reason(nlopt_result r)
{
    switch (r) {
    case NLOPT_SUCCESS: return "converged";
    case NLOPT_STOPVAL_REACHED: return "reached the target cost";
    case NLOPT_FTOL_REACHED: return "the cost stopped changing (ftol)";
    case NLOPT_XTOL_REACHED: return "the keys stopped changing (xtol)";
    case NLOPT_MAXEVAL_REACHED: return "reached --max-evals";
    case NLOPT_MAXTIME_REACHED: return "reached the time limit";
    case NLOPT_ROUNDOFF_LIMITED: return "limited by round-off";
    case NLOPT_FORCED_STOP: return "stopped";
    default: return "the optimiser failed";
    }
}

ncsim_status_t sim_fit_run(sim_validate_manifest_t *m, const sim_fit_options_t *o,
                           sim_fit_outcome_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (o->nkeys == 0 || o->nkeys > SIM_FIT_MAX_KEYS) {
        xp_errf(err, errlen, "give between 1 and %d --key options", SIM_FIT_MAX_KEYS);
        return NCSIM_USAGE;
    }
    size_t nfit = 0;
    for (size_t i = 0; i < m->nentries; i++)
        nfit += m->entries[i].fit && m->entries[i].weight > 0;
    if (!nfit) {
        xp_errf(err, errlen, "%s: no entry has \"fit\": true and a positive weight", m->path);
        return NCSIM_USAGE;
    }
    /* the start: the base config's values (after --set), clamped to the bounds */
    ncsim_arch_t *base = NULL;
    const char *bname = o->run.arch ? o->run.arch : "trn1";
    ncsim_status_t st = ncsim_arch_load(bname, &base);
    for (size_t i = 0; st == NCSIM_OK && i < o->run.nsets; i++)
        st = ncsim_arch_set(base, o->run.sets[i]);
    if (st != NCSIM_OK) {
        xp_errf(err, errlen, "%s", ncsim_last_error());
        ncsim_arch_free(base);
        return st;
    }
    double lb[SIM_FIT_MAX_KEYS], ub[SIM_FIT_MAX_KEYS], x[SIM_FIT_MAX_KEYS];
    for (size_t i = 0; i < o->nkeys; i++) {
        const sim_fit_key_t *k = &o->keys[i];
        for (size_t j = 0; j < i; j++)
            if (strcmp(o->keys[j].key, k->key) == 0) {
                xp_errf(err, errlen, "--key %s is given twice", k->key);
                ncsim_arch_free(base);
                return NCSIM_USAGE;
            }
        char *v = NULL;
        if (ncsim_arch_get(base, k->key, &v) != NCSIM_OK) {
            xp_errf(err, errlen,
                     "--key %s: unknown key (keys are SECTION.KEY as printed by "
                     "`ncsim arch trn1`)",
                     k->key);
            ncsim_arch_free(base);
            return NCSIM_USAGE;
        }
        char *end;
        double d = strtod(v, &end);
        if (*end || !isfinite(d)) {
            xp_errf(err, errlen, "--key %s: not a numeric key (its value is %s)", k->key, v);
            ncsim_free(v);
            ncsim_arch_free(base);
            return NCSIM_USAGE;
        }
        ncsim_free(v);
        out->start[i] = fmin(fmax(d, k->lo), k->hi);
        lb[i] = 0.0;
        ub[i] = 1.0;
        x[i] = (out->start[i] - k->lo) / (k->hi - k->lo);
    }
    ncsim_arch_free(base);
    fit_ctx_t *c = calloc(1, sizeof *c);
    sim_validate_result_t *results = calloc(m->nentries, sizeof *results);
    if (!c || !results) {
        free(c);
        free(results);
        xp_errf(err, errlen, "out of memory");
        return NCSIM_NOMEM;
    }
    c->m = m;
    c->o = o;
    c->results = results;
    c->best_cost = HUGE_VAL;
    c->fatal = NCSIM_OK;
    /* the base point: it must run, else the manifest or the bounds are wrong */
    out->cost_before = evaluate(c, out->start);
    if (c->fatal != NCSIM_OK) {
        xp_errf(err, errlen, "%s", c->fatal_msg);
        st = c->fatal;
        goto done;
    }
    for (size_t i = 0; i < m->nentries; i++) {
        if (m->entries[i].fit && results[i].ran && results[i].status != NCSIM_OK) {
            xp_errf(err, errlen, "%s: entry '%s' fails at the starting point: %s", m->path,
                     m->entries[i].id, results[i].message);
            st = NCSIM_USAGE;
            goto done;
        }
    }
    nlopt_srand(12345); /* nothing random is used; fixed all the same */
    unsigned n = (unsigned)o->nkeys;
    nlopt_opt opt = nlopt_create(n >= 2 ? NLOPT_LN_BOBYQA : NLOPT_LN_SBPLX, n);
    if (!opt) {
        xp_errf(err, errlen, "out of memory");
        st = NCSIM_NOMEM;
        goto done;
    }
    nlopt_set_lower_bounds(opt, lb);
    nlopt_set_upper_bounds(opt, ub);
    nlopt_set_min_objective(opt, objective, c);
    nlopt_set_xtol_rel(opt, 1e-7);
    nlopt_set_ftol_abs(opt, 1e-14);
    nlopt_set_initial_step1(opt, 0.1);
    unsigned max_evals = o->max_evals ? o->max_evals : FIT_DEFAULT_MAX_EVALS;
    nlopt_set_maxeval(opt, max_evals > 1 ? (int)(max_evals - 1) : 1);
    double fmin_found = 0;
    nlopt_result r = nlopt_optimize(opt, x, &fmin_found);
    nlopt_destroy(opt);
    if (c->fatal != NCSIM_OK) {
        xp_errf(err, errlen, "%s", c->fatal_msg);
        st = c->fatal;
        goto done;
    }
    out->stop = nlopt_reason(r);
    out->evals = c->evals;
    for (size_t i = 0; i < o->nkeys; i++) {
        double v = c->best[i];
        if (integral_key(o->keys[i].key))
            v = round(v);
        out->best[i] = v;
    }
    out->cost_after = c->best_cost;
    st = NCSIM_OK;
done:
    free(results);
    free(c);
    return st;
}

char *sim_fit_config_json(const sim_validate_manifest_t *m, const sim_fit_options_t *o,
                          const sim_fit_outcome_t *out, const char *name)
{
    json_t *root = json_object();
    const char *base = o->run.arch ? o->run.arch : "trn1";
    /* a file base is written as an absolute path so the fitted file works from anywhere */
    char *abs = NULL;
    if (strchr(base, '/') || (strlen(base) > 5 && !strcmp(base + strlen(base) - 5, ".json")))
        abs = realpath(base, NULL);
    json_object_set_new(root, "base", json_string(abs ? abs : base));
    free(abs);
    if (name)
        json_object_set_new(root, "name", json_string(name));
    char desc[256];
    snprintf(desc, sizeof desc, "%s with %zu key%s fitted by `ncsim fit` to %s", base, o->nkeys,
             o->nkeys == 1 ? "" : "s", m->name[0] ? m->name : m->path);
    json_object_set_new(root, "description", json_string(desc));
    /* the sections: --set overrides first, then the fitted keys */
    json_t *sources = json_object();
    ncsim_arch_t *a = NULL;
    if (ncsim_arch_load(base, &a) != NCSIM_OK) {
        json_decref(root);
        json_decref(sources);
        return NULL;
    }
    size_t nall = o->run.nsets + o->nkeys;
    for (size_t i = 0; i < nall; i++) {
        char assign[200];
        const char *why;
        char whybuf[1024];
        if (i < o->run.nsets) {
            snprintf(assign, sizeof assign, "%s", o->run.sets[i]);
            why = "set on the command line of `ncsim fit` (held fixed during the fit)";
        } else {
            size_t k = i - o->run.nsets;
            sim_fit_assignment(o->keys[k].key, out->best[k], assign, sizeof assign);
            snprintf(whybuf, sizeof whybuf,
                     "fitted by `ncsim fit` to the manifest %s (%s) within [%g, %g], from %g; "
                     "cost (sum of weight x ln(sim/measured)^2) %.6g -> %.6g",
                     m->path, m->name[0] ? m->name : "unnamed", o->keys[k].lo, o->keys[k].hi,
                     out->start[k], out->cost_before, out->cost_after);
            why = whybuf;
        }
        if (ncsim_arch_set(a, assign) != NCSIM_OK)
            continue;
        char *eq = strchr(assign, '=');
        *eq = 0;
        char *dot = strchr(assign, '.');
        if (!dot)
            continue;
        *dot = 0;
        char value[128] = "";
        char *got = NULL;
        *dot = '.';
        if (ncsim_arch_get(a, assign, &got) == NCSIM_OK)
            snprintf(value, sizeof value, "%s", got);
        ncsim_free(got);
        *dot = 0;
        json_t *sec = json_object_get(root, assign);
        if (!sec) {
            sec = json_object();
            json_object_set_new(root, assign, sec);
        }
        /* the value as the config dump formats it: numbers exact, enums as strings */
        json_error_t jerr;
        json_t *v = json_loads(value, JSON_DECODE_ANY, &jerr);
        if (!v)
            v = json_string(value);
        json_object_set_new(sec, dot + 1, v);
        *dot = '.';
        json_object_set_new(sources, assign, json_string(why));
    }
    ncsim_arch_free(a);
    json_object_set_new(root, "sources", sources);
    char *text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    json_decref(root);
    if (!text)
        return NULL;
    size_t n = strlen(text);
    char *t2 = realloc(text, n + 2);
    if (!t2) {
        free(text);
        return NULL;
    }
    t2[n] = '\n';
    t2[n + 1] = 0;
    return t2;
}
