/*
 * console.h - the ncurses console's entry point, run by `bagstore` with no
 * subcommand when stdin and stdout are terminals.
 */
#ifndef BS_CONSOLE_H
#define BS_CONSOLE_H

#include "bagstore.h"

/* Run the console over an open store until the operator quits. st and cfg
 * are borrowed (main.c frees them afterwards); cfg->read_only already
 * includes the --read-only option. argc/argv are the program's own.
 * Returns the process's exit status. */
int bs_console_main(bs_store_t *st, const bs_config_t *cfg, int argc, char **argv);

#endif
