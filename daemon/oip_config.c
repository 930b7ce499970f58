/*
 * arenaflowd model configuration: DIR/<name>/config.json, read off the loop with the model.
 *
 *   {"inputs": {"x": [1, 3, 224, 224]},    fixes the dims of inputs (importer specs)
 *    "dims": {"batch": 1},                  fixes symbolic dims by name
 *    "max_inflight": 8,                     requests in flight for this model (more get 429)
 *    "instance_count": 2,                   sessions of the model (or Triton's spelling:
 *    "instance_group": [{"count": 2, "kind": "KIND_CPU"}])
 *    "max_batch_size": 8,                   rows of one batched round (Triton: the batch axis
 *    "dynamic_batching": {                  is axis 0 of every input and output)
 *        "preferred_batch_size": [4, 8],
 *        "max_queue_delay_microseconds": 500}}
 *
 * Unknown keys are errors (a misspelt key would otherwise be ignored silently). The checks that
 * need the model (a batch axis on every input) are oip_repo.c's.
 */
#include "daemon/oip_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* "inputs" and "dims" -> importer specs ("x=1,3,224,224", "batch_size=1"). 0 or -1. */
static int read_specs(const json_t *inputs, const json_t *dims, char **specs, int *n)
{
    const char *k;
    json_t *v;
    for (int pass = 0; pass < 2; pass++) {
        const json_t *obj = pass ? dims : inputs;
        if (obj && !json_is_object(obj))
            return -1;
        json_object_foreach((json_t *)obj, k, v)
        {
            char s[512];
            int at = snprintf(s, sizeof(s), "%s=", k);
            if (pass && json_is_integer(v))
                snprintf(s + at, sizeof(s) - (size_t)at, "%" JSON_INTEGER_FORMAT,
                         json_integer_value(v));
            else if (!pass && json_is_array(v))
                for (size_t i = 0; i < json_array_size(v) && at < (int)sizeof(s) - 24; i++)
                    at += snprintf(s + at, sizeof(s) - (size_t)at, "%s%" JSON_INTEGER_FORMAT,
                                   i ? "," : "", json_integer_value(json_array_get(v, i)));
            else
                return -1;
            if (*n == AF__OIP_MAX_SPECS)
                return -1;
            specs[(*n)++] = strdup(s);
        }
    }
    return 0;
}

/* "instance_group": [{"count": N, "kind": "KIND_CPU"}] -> the sum of the counts. */
static const char *read_groups(const json_t *g, int64_t *count)
{
    size_t i;
    const json_t *e;
    if (!json_is_array(g) || json_array_size(g) == 0)
        return "instance_group must be a non-empty array of {\"count\": N}";
    *count = 0;
    json_array_foreach(g, i, e)
    {
        json_int_t c = 1;
        const char *kind = "KIND_CPU";
        json_error_t je;
        if (json_unpack_ex((json_t *)e, &je, 0, "{s?I, s?s}", "count", &c, "kind", &kind) != 0 ||
            c < 1)
            return "instance_group entries are {\"count\": N >= 1, \"kind\": \"KIND_CPU\"}";
        if (strcmp(kind, "KIND_CPU") != 0 && strcmp(kind, "KIND_AUTO") != 0)
            return "instance_group kind must be KIND_CPU or KIND_AUTO (arenaflow runs on CPUs)";
        *count += (int64_t)c;
    }
    return NULL;
}

/* "dynamic_batching": {"preferred_batch_size": [...], "max_queue_delay_microseconds": N}. */
static const char *read_batching(const json_t *b, af__mcfg_t *cfg)
{
    json_t *pref = NULL;
    json_int_t delay = 0;
    json_error_t je;
    if (json_unpack_ex((json_t *)b, &je, JSON_STRICT, "{s?o, s?I}", "preferred_batch_size", &pref,
                       "max_queue_delay_microseconds", &delay) != 0 ||
        delay < 0 || delay > 10000000)
        return "dynamic_batching is {\"preferred_batch_size\": [N, ...], "
               "\"max_queue_delay_microseconds\": 0..10000000}";
    size_t i;
    const json_t *v;
    if (pref && (!json_is_array(pref) || json_array_size(pref) > AF__OIP_MAX_PREFERRED))
        return "preferred_batch_size must be an array of at most 8 sizes";
    json_array_foreach(pref, i, v)
    {
        if (!json_is_integer(v) || json_integer_value(v) < 1 ||
            json_integer_value(v) > cfg->max_batch)
            return "preferred_batch_size entries must be 1..max_batch_size";
        cfg->preferred[cfg->n_preferred++] = (int64_t)json_integer_value(v);
    }
    cfg->delay_us = (int64_t)delay;
    cfg->batching = 1;
    return NULL;
}

int af__oip_read_config(const char *path, char **specs, int *n, af__mcfg_t *cfg, char *msg,
                        size_t len)
{
    *cfg = (af__mcfg_t){.instances = 1};
    struct stat st;
    if (stat(path, &st) != 0)
        return 0;
    json_error_t je;
    json_t *c = json_load_file(path, 0, &je), *inputs = NULL, *dims = NULL, *groups = NULL,
           *batching = NULL;
    json_int_t mi = 0, ic = 0, mb = 0;
    const char *why = NULL;
    if (!c || json_unpack_ex(c, &je, JSON_STRICT, "{s?o, s?o, s?I, s?I, s?o, s?I, s?o}", "inputs",
                             &inputs, "dims", &dims, "max_inflight", &mi, "instance_count", &ic,
                             "instance_group", &groups, "max_batch_size", &mb, "dynamic_batching",
                             &batching) != 0)
        why = je.text;
    else if (mi < 0 || ic < 0 || mb < 0)
        why = "max_inflight, instance_count and max_batch_size must be >= 0";
    else if (ic && groups)
        why = "give instance_count or instance_group, not both";
    cfg->max_inflight = (int64_t)mi;
    cfg->instances = ic ? (int64_t)ic : 1;
    cfg->max_batch = (int64_t)mb;
    if (!why && groups)
        why = read_groups(groups, &cfg->instances);
    if (!why && cfg->instances > AF__OIP_MAX_INSTANCES)
        why = "at most 16 instances per model";
    if (!why && batching && mb == 0)
        why = "dynamic_batching needs max_batch_size > 0 (the rows of one batched round)";
    if (!why && batching)
        why = read_batching(batching, cfg);
    if (!why && read_specs(inputs, dims, specs, n) != 0)
        why = "\"inputs\" maps names to dim arrays, \"dims\" names to integers";
    if (why)
        snprintf(msg, len, "%.200s: %.200s", path, why);
    json_decref(c);
    return why ? -1 : 0;
}
