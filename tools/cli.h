/*
 * Shared pieces of the arenaflow CLI: the command table entry type and helpers each command
 * uses (loading a graph by file type, reading a config file into planner options). Each
 * command lives in tools/cmd_<name>.c and exposes one `int cmd_<name>(int argc, char **argv)`.
 */
#ifndef ARENAFLOW_TOOLS_CLI_H
#define ARENAFLOW_TOOLS_CLI_H

#include "arenaflow/graph.h"
#include "arenaflow/plan.h"

#include <stdint.h>

/* Exit codes: 0 ok, 1 the input was rejected or the job failed, 2 usage error. */
enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2 };

int cmd_plan(int argc, char **argv);
int cmd_place(int argc, char **argv);
int cmd_zoo(int argc, char **argv);
int cmd_gen_tight(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_diagnose(int argc, char **argv);
int cmd_onnx_test(int argc, char **argv);

/* Prints "arenaflow: <msg>" for an error to stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Parses a byte count in the library's size grammar (af_parse_size: 64K, 64KiB, 2G...). 0 or -1. */
int cli_parse_size(const char *s, uint64_t *out);
/* Parses a non-negative integer. Returns 0 or -1. */
int cli_parse_long(const char *s, long *out);
/* True when argv[i] is "-h" or "--help". */
int cli_is_help(const char *arg);

/*
 * Loading a graph: "-" or *.json is the JSON format; *.onnx goes to the ONNX importer when it is
 * built in, with `inputs` ("name=1,3,224,224" strings, n_inputs of them) fixing symbolic dims.
 * Prints the error and returns NULL on failure.
 */
af_graph_t *cli_load_graph(const char *path, char **inputs, int n_inputs);

/* Sets one option of a component from its config spelling (af_plan_opts_set and friends). */
typedef int (*cli_cfg_setter)(void *opts, const char *key, const char *value, af_error_t *err);
/* Reads one [section] of an INI config file through `set`; other sections are skipped. Prints
 * errors; returns 0 or -1. */
int cli_load_section(const char *path, const char *section, cli_cfg_setter set, void *opts);
/* Reads an INI config file's [planner] section (and top-level keys) into opts. Prints errors. */
int cli_load_config(const char *path, af_plan_opts_t *opts);

#endif
