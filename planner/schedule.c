/*
 * Scheduler registry and the "input" scheduler (the order the graph came in).
 * Other schedulers live in planner/schedule_*.c and are rows of the table below.
 */
#include "planner/planner_int.h"

#include <string.h>

static int sched_input(const af_graph_t *g, const af_plan_opts_t *o, int32_t *order,
                       af__sched_result_t *res, af_error_t *err)
{
    (void)o;
    (void)err;
    memcpy(order, af_graph_input_order(g), (size_t)af_graph_node_count(g) * sizeof(*order));
    res->name = "input";
    return 0;
}

static const af__sched_entry_t sched_table[] = {
    {"input", sched_input, "the order the graph came in"},
};

static const char *sched_names[AF_ARRAY_SIZE(sched_table) + 1];

const char *const *af_schedule_names(void)
{
    for (size_t i = 0; i < AF_ARRAY_SIZE(sched_table); i++)
        sched_names[i] = sched_table[i].name;
    return sched_names;
}

const af__sched_entry_t *af__sched_find(const char *name)
{
    for (size_t i = 0; i < AF_ARRAY_SIZE(sched_table); i++)
        if (strcmp(sched_table[i].name, name) == 0)
            return &sched_table[i];
    return NULL;
}

int af__schedule(const af_graph_t *g, const af_plan_opts_t *o, int32_t *order,
                 af__sched_result_t *res, af_error_t *err)
{
    const char *name = o->schedule ? o->schedule : "input";
    const af__sched_entry_t *e = af__sched_find(name);
    if (!e)
        return af__err(err, AF_EINVAL, "unknown scheduler '%s'", name);
    memset(res, 0, sizeof(*res));
    return e->fn(g, o, order, res, err);
}
