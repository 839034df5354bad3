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

/* Is `arg` one of the console's own options (--headless SCRIPT, --dump-dir
 * DIR, --refresh SECS, --timeout SECS)? 2 when it takes a value, 0 when it
 * is not the console's. main.c lets them through; the console reads argv. */
int bs_console_option(const char *arg);
#endif
