/*
 * console.h - the ncurses console's entry point, run by `bagstore` with no
 * command when stdin and stdout are terminals (or with --headless). The
 * console's room is tui/console/ and views/; main.c is its only caller.
 */
#ifndef BS_CONSOLE_H
#define BS_CONSOLE_H

#include "bagstore.h"

/* Run the console until the operator quits. cfg is borrowed: main.c frees
 * it afterwards, and the console's threads read it until they are joined,
 * so when one of them cannot be joined (stuck in a hung shard) this
 * function does not return: it leaves the process with _exit. The console
 * opens its own stores (one per lane, see worker.h). cfg->read_only already
 * includes the --read-only option; argc/argv are the program's own.
 * Returns the process's exit status. */
int bs_console_main(const bs_config_t *cfg, int argc, char **argv);

/* Is `arg` one of the console's own options (--headless SCRIPT, --dump-dir
 * DIR, --refresh SECS, --timeout SECS)? 2 when it takes a value, 0 when it
 * is not the console's. main.c lets them through; the console reads argv. */
int bs_console_option(const char *arg);
#endif
