/* Placeholder until the command lands (owned by its issue). */
#include "tools/cli.h"

int cmd_run(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    cli_error("command not built yet");
    return CLI_FAIL;
}
