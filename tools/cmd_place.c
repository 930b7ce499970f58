/*
 * arenaflow place FILE.csv: the placement problem alone, in MiniMalloc's CSV format.
 */
#include "arenaflow/pack.h"
#include "tools/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
            "usage: arenaflow place FILE.csv [--algo NAME] [--capacity N] [--time-limit S]\n"
            "                       [--cpu-time] [--nodes N] [--search-work W] [--alignment N]\n"
            "                       [--out FILE]\n\n"
            "Reads buffers in MiniMalloc's CSV format (one buffer per line, lifetime [lower,\n"
            "upper); a header naming the columns - id,lower,upper,size in any order, 'end' for\n"
            "an inclusive upper - or none; ids are kept as written, e.g. b1), gives each an\n"
            "offset, verifies the packing, writes the same rows with an 'offset' column to FILE\n"
            "(default stdout) and reports the height against the lower bound (the largest total\n"
            "size live at one time) on stderr (stdout with --out). '-' reads stdin.\n\n"
            "With --capacity, every placer behaves the same: the best packing found is always\n"
            "written; the report says 'capacity N: fits' (exit 0) or 'capacity N: does not\n"
            "fit' with the height, and whether that is proven (the lower bound exceeds N, or the\n"
            "search exhausted every packing) or only what this placer found (exit 1). The\n"
            "search stops as soon as a packing fits; the other placers do not aim at N.\n"
            "The search starts from the default placer's packing, so with a limit of 1 s or more\n"
            "(or --nodes) it never writes a higher one; its limit includes that start.\n\n"
            "  --algo NAME       placement algorithm (default portfolio):");
    for (const char *const *n = af_place_names(); *n; n++)
        fprintf(f, " %s", *n);
    fprintf(f, "\n"
               "  --capacity N      report whether the buffers fit in N bytes (exit 1 if not)\n"
               "  --time-limit S    time limit for --algo search, seconds (default 10)\n"
               "  --cpu-time        --time-limit counts this thread's CPU time, not wall time\n"
               "  --nodes N         bound --algo search by N search nodes instead of the clock\n"
               "                    (the same result on any machine)\n"
               "  --search-work W   the portfolio's last member, a search bounded by W work\n"
               "                    units (no clock; default 134217728, 0.2-0.4 s; 0 = off)\n"
               "  --alignment N     offsets are multiples of N (default 1)\n"
               "  --out FILE        write the placed CSV to FILE instead of stdout\n");
}

/* Writes the placed rows, ids as read; 0 or -1 (reported). */
static int write_csv(const char *out, char *const *ids, const af_interval_t *iv, size_t n)
{
    FILE *f = out ? fopen(out, "w") : stdout;
    if (!f) {
        cli_error("%s: cannot write", out);
        return -1;
    }
    fprintf(f, "id,lower,upper,size,offset\n");
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s,%lld,%lld,%llu,%llu\n", ids[i], (long long)iv[i].lower,
                (long long)iv[i].upper, (unsigned long long)iv[i].size,
                (unsigned long long)iv[i].offset);
    int bad = ferror(f) != 0;
    bad |= out ? fclose(f) != 0 : fflush(f) != 0;
    if (bad)
        cli_error("%s: write failed", out ? out : "stdout");
    return bad ? -1 : 0;
}

static char *read_all(const char *path, size_t *len)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap)
            break;
        char *nb = realloc(buf, cap *= 2);
        if (!nb) {
            free(buf);
            buf = NULL;
        } else {
            buf = nb;
        }
    }
    if (f != stdin)
        fclose(f);
    *len = n;
    return buf;
}

int cmd_place(int argc, char **argv)
{
    const char *path = NULL, *out = NULL, *algo = "portfolio";
    af_place_opts_t po = {
        .alignment = 1, .time_limit_s = 10.0, .search_work = AF_PLACE_SEARCH_WORK};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (cli_is_help(a)) {
            usage(stdout);
            return CLI_OK;
        }
        int has_val = i + 1 < argc;
        if (!strcmp(a, "--algo") && has_val) {
            algo = argv[++i];
        } else if (!strcmp(a, "--out") && has_val) {
            out = argv[++i];
        } else if (!strcmp(a, "--capacity") && has_val) {
            if (cli_parse_size(argv[++i], &po.capacity)) {
                cli_error("place: bad --capacity '%s'", argv[i]);
                return CLI_USAGE;
            }
        } else if (!strcmp(a, "--alignment") && has_val) {
            if (cli_parse_size(argv[++i], &po.alignment) || po.alignment == 0 ||
                (po.alignment & (po.alignment - 1))) {
                cli_error("place: --alignment must be a power of two");
                return CLI_USAGE;
            }
        } else if (!strcmp(a, "--cpu-time")) {
            po.cpu_time = 1;
        } else if (!strcmp(a, "--search-work") && has_val) {
            if (cli_parse_size(argv[++i], &po.search_work)) {
                cli_error("place: bad --search-work '%s'", argv[i]);
                return CLI_USAGE;
            }
        } else if (!strcmp(a, "--nodes") && has_val) {
            if (cli_parse_size(argv[++i], &po.search_nodes) || po.search_nodes == 0) {
                cli_error("place: bad --nodes '%s'", argv[i]);
                return CLI_USAGE;
            }
        } else if (!strcmp(a, "--time-limit") && has_val) {
            char *end;
            po.time_limit_s = strtod(argv[++i], &end);
            if (*end || po.time_limit_s < 0) {
                cli_error("place: bad --time-limit '%s'", argv[i]);
                return CLI_USAGE;
            }
        } else if (a[0] == '-' && a[1]) {
            cli_error("place: unknown option or missing value '%s'", a);
            return CLI_USAGE;
        } else if (!path) {
            path = a;
        } else {
            cli_error("place: more than one input file");
            return CLI_USAGE;
        }
    }
    if (!path) {
        usage(stderr);
        return CLI_USAGE;
    }
    size_t len = 0;
    char *text = read_all(path, &len);
    if (!text) {
        cli_error("%s: cannot read", path);
        return CLI_FAIL;
    }
    af_error_t err;
    af_error_clear(&err);
    af_interval_t *iv = NULL;
    char **ids = NULL;
    size_t n = 0;
    int rc = af_intervals_parse_csv(text, len, &iv, &ids, &n, &err);
    free(text);
    if (rc) {
        cli_error("%s: %s", path, err.msg);
        return CLI_FAIL;
    }
    uint64_t height = 0, t0 = af_now_ns();
    rc = af_place_intervals(iv, n, algo, &po, &height, &err);
    double ms = (double)(af_now_ns() - t0) / 1e6;
    int status = CLI_OK;
    /* The search's unmet capacity still leaves its best packing: written like any other. */
    int unmet = po.capacity && (rc == AF_EBUDGET || rc == AF_ETIMEDOUT);
    char why[AF_ERROR_MSG_MAX];
    snprintf(why, sizeof why, "%s", unmet ? err.msg : "");
    if (!rc || unmet)
        rc = af_intervals_verify(iv, n, height, po.alignment, &err);
    if (rc) {
        cli_error("%s: %s", path, err.msg);
        status = CLI_FAIL;
        goto done;
    }
    if (write_csv(out, ids, iv, n)) {
        status = CLI_FAIL;
        goto done;
    }
    uint64_t lb = af_intervals_lower_bound(iv, n, po.alignment);
    FILE *rep = out ? stdout : stderr;
    fprintf(rep,
            "buffers %zu  algo %s  height %llu  lower bound %llu  height/lb %.4f  time %.3f ms\n",
            n, algo, (unsigned long long)height, (unsigned long long)lb,
            lb ? (double)height / (double)lb : 1.0, ms);
    if (po.capacity && height <= po.capacity) {
        fprintf(rep, "capacity %llu: fits\n", (unsigned long long)po.capacity);
    } else if (po.capacity) {
        const char *proof = lb > po.capacity ? "proven: the lower bound exceeds the capacity"
                            : why[0]         ? why
                                             : "not proven: the best packing this placer found "
                                               "(try --algo search)";
        fprintf(rep, "capacity %llu: does not fit (height %llu; %s)\n",
                (unsigned long long)po.capacity, (unsigned long long)height, proof);
        status = CLI_FAIL;
    }
done:
    af_free(iv);
    af_free(ids);
    return status;
}
