/*
 * arenaflow gen-tight: writes a tight placement instance with a known optimum (a tiling of a full
 * time x capacity rectangle in one of several shapes, include/arenaflow/pack.h) in MiniMalloc's
 * CSV format.
 */
#include "arenaflow/pack.h"
#include "tools/cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: arenaflow gen-tight --buffers N --seed S [--shape NAME] [--capacity N]\n"
        "                           [--horizon T] [--jitter F] [--out FILE]\n\n"
        "Tiles the rectangle [0, T) x [0, capacity) with N pieces and writes them as buffers in\n"
        "MiniMalloc's CSV format (header id,lower,upper,size; buffer i lives in [lower,\n"
        "upper)). The pieces fill every time point exactly, so the optimum arena height equals\n"
        "the lower bound, the capacity; jitter shrinks a fraction F of the pieces not live at\n"
        "one witness time, which keeps that optimum provable. The optimum is printed on\n"
        "stderr ('optimum N').\n\n"
        "Shapes: guillotine (recursive cuts), sweep (pieces end and the gaps are refilled, left\n"
        "to right), staircase (bands of pieces, joints shifted band to band), equal (lanes of\n"
        "one size; the optimum is the capacity rounded down to a multiple of the lanes), giants\n"
        "(a few long pieces of 10-30%% of the capacity, small ones around them).\n\n"
        "  --shape NAME    guillotine (default), sweep, staircase, equal, giants\n"
        "  --buffers N     number of buffers (default 200)\n"
        "  --seed S        random seed (default 1)\n"
        "  --capacity N    the optimum in bytes, K/M/G suffixes (default 1M)\n"
        "  --horizon T     time span (default 4 x buffers)\n"
        "  --jitter F      fraction 0..1 of eligible pieces shrunk (default 0)\n"
        "  --out FILE      write to FILE instead of stdout\n");
}

static int parse_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || v < 0 || v > 1)
        return -1;
    *out = v;
    return 0;
}

/* Parses the options into o and *out_path; returns CLI_OK, or the exit code to return. */
static int parse_args(int argc, char **argv, af_tight_opts_t *o, const char **out_path)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (cli_is_help(a)) {
            usage(stdout);
            return -1;
        }
        if (i + 1 >= argc) {
            cli_error("gen-tight: unknown or incomplete option '%s'", a);
            usage(stderr);
            return CLI_USAGE;
        }
        const char *v = argv[++i];
        long l;
        int bad = 0;
        if (!strcmp(a, "--buffers")) {
            bad = cli_parse_long(v, &l) || l < 1;
            o->buffers = (size_t)l;
        } else if (!strcmp(a, "--seed")) {
            bad = cli_parse_long(v, &l);
            o->seed = (uint64_t)l;
        } else if (!strcmp(a, "--capacity")) {
            bad = cli_parse_size(v, &o->capacity) || o->capacity == 0;
        } else if (!strcmp(a, "--horizon")) {
            bad = cli_parse_long(v, &l) || l < 1;
            o->horizon = l;
        } else if (!strcmp(a, "--shape")) {
            bad = 1;
            for (int k = 0; af_tight_shape_names()[k]; k++)
                if (!strcmp(v, af_tight_shape_names()[k])) {
                    o->shape = (af_tight_shape_t)k;
                    bad = 0;
                }
        } else if (!strcmp(a, "--jitter")) {
            bad = parse_double(v, &o->jitter);
        } else if (!strcmp(a, "--out")) {
            *out_path = v;
        } else {
            cli_error("gen-tight: unknown option '%s'", a);
            usage(stderr);
            return CLI_USAGE;
        }
        if (bad) {
            cli_error("gen-tight: bad value '%s' for %s", v, a);
            return CLI_USAGE;
        }
    }
    return CLI_OK;
}

int cmd_gen_tight(int argc, char **argv)
{
    af_tight_opts_t o;
    af_tight_opts_init(&o);
    const char *out_path = NULL;
    int rc = parse_args(argc, argv, &o, &out_path);
    if (rc)
        return rc < 0 ? CLI_OK : rc;
    af_interval_t *iv = NULL;
    size_t n = 0;
    uint64_t opt = 0;
    af_error_t err;
    if (af_tight_generate(&o, &iv, &n, &opt, &err)) {
        cli_error("gen-tight: %s", err.msg);
        return CLI_FAIL;
    }
    FILE *f = out_path ? fopen(out_path, "w") : stdout;
    if (!f) {
        cli_error("gen-tight: cannot write '%s': %s", out_path, strerror(errno));
        af_tight_free(iv);
        return CLI_FAIL;
    }
    fprintf(f, "id,lower,upper,size\n");
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%zu,%lld,%lld,%llu\n", i, (long long)iv[i].lower, (long long)iv[i].upper,
                (unsigned long long)iv[i].size);
    int bad = ferror(f);
    if (f != stdout)
        bad |= fclose(f) != 0;
    else
        bad |= fflush(f) != 0;
    af_tight_free(iv);
    if (bad) {
        cli_error("gen-tight: write error on '%s'", out_path ? out_path : "stdout");
        return CLI_FAIL;
    }
    fprintf(stderr, "optimum %llu (%zu buffers)\n", (unsigned long long)opt, n);
    return CLI_OK;
}
