/*
 * arenaflow — command-line entry: one table of subcommands, each in tools/cmd_<name>.c.
 */
#include "tools/cli.h"

#include <stdio.h>
#include <string.h>

static const struct {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
} commands[] = {
    {"plan", cmd_plan, "plan a graph (JSON or ONNX) and print its memory report"},
    {"place", cmd_place, "place MiniMalloc-style CSV intervals (id,lower,upper,size)"},
    {"run", cmd_run, "plan and execute a graph for a number of rounds"},
    {"diagnose", cmd_diagnose, "run safe and planned, name the first polluted tensor"},
    {"onnx-test", cmd_onnx_test, "run ONNX backend test directories and compare the outputs"},
    {"zoo", cmd_zoo, "write a model-zoo graph (ResNet-50, BERT, ...) as JSON"},
    {"convert", cmd_convert, "convert an ONNX model to the JSON graph format"},
    {"gen-tight", cmd_gen_tight, "generate a tight placement instance with a known optimum"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: arenaflow <command> [options]\n\n"
               "arenaflow plans where every tensor of a computation graph lives and in which\n"
               "order its operators run, so the graph runs in as little memory as possible.\n\n"
               "commands:\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n'arenaflow <command> --help' explains a command.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return CLI_USAGE;
    }
    if (cli_is_help(argv[1]) || strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return CLI_OK;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("arenaflow %s\n", af_version());
        return CLI_OK;
    }
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].fn(argc - 1, argv + 1);
    cli_error("unknown command '%s' (try 'arenaflow --help')", argv[1]);
    return CLI_USAGE;
}
