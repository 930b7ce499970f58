/*
 * libFuzzer harness: arenaflowd's configuration loader (af__dcfg_load, daemon/config.c), which
 * reads an INI file with inih and hands [planner] keys to af_plan_opts_set().
 *
 * The input is written to an in-memory file (memfd) and loaded through its /proc path, as the
 * daemon loads its --config file. Every input must be accepted or rejected with a message;
 * never crash. When accepted, the planner string the daemon stores with every graph
 * (af__dcfg_planner_string) must parse back (af__planner_opts_from_string) into the same
 * planner options: otherwise a restart could not re-plan the stored graphs as they were.
 *
 * Built as a libFuzzer target (tests/fuzz/run.sh, links arenaflowd_core) and, with
 * AF_FUZZ_ENTRY renamed, into tests/test_fuzz_corpus.c when the daemon core is built.
 */
#include "daemon/daemon_int.h"
#include "tests/fuzz/fuzz_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef AF_FUZZ_ENTRY
#define AF_FUZZ_ENTRY LLVMFuzzerTestOneInput
#endif

int AF_FUZZ_ENTRY(const uint8_t *data, size_t size);

static void fuzz_dc_check_planner(const af__dcfg_t *c)
{
    char s[AF__DCFG_MAX_PLANNER * 100];
    af__dcfg_planner_string(c, s, sizeof(s));
    af_plan_opts_t o;
    af_error_t err;
    if (af__planner_opts_from_string(s, &o, &err) != 0)
        AF_FUZZ_FAIL("stored planner string '%s' does not load: %s", s, err.msg);
    const af_plan_opts_t *w = &c->plan_opts;
    if (strcmp(o.schedule, w->schedule) != 0 || strcmp(o.placer, w->placer) != 0 ||
        o.mode != w->mode || o.alignment != w->alignment || o.alpha != w->alpha ||
        o.beta != w->beta || o.budget != w->budget || o.time_limit_s != w->time_limit_s ||
        o.capacity != w->capacity || o.inplace != w->inplace || o.safe_mode != w->safe_mode ||
        o.parallel_reuse != w->parallel_reuse || o.dp_max_nodes != w->dp_max_nodes ||
        o.dp_max_states != w->dp_max_states || o.verify != w->verify)
        AF_FUZZ_FAIL("stored planner string '%s' means other options", s);
}

int AF_FUZZ_ENTRY(const uint8_t *data, size_t size)
{
    int fd = memfd_create("fuzz_dconfig", MFD_CLOEXEC);
    if (fd < 0)
        return 0;
    size_t off = 0;
    while (off < size) {
        ssize_t w = write(fd, data + off, size - off);
        if (w <= 0) {
            close(fd);
            return 0;
        }
        off += (size_t)w;
    }
    char path[64];
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    af__dcli_t cli = {path, NULL, NULL, NULL};
    af__dcfg_t *c = malloc(sizeof(*c));
    char msg[1024];
    msg[0] = '\0';
    if (c && af__dcfg_load(c, &cli, msg, sizeof(msg)) == 0)
        fuzz_dc_check_planner(c);
    else if (c && msg[0] == '\0')
        AF_FUZZ_FAIL("rejected without a message");
    free(c);
    close(fd);
    return 0;
}
