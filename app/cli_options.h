/* cli_options.h: a command's options table (experiments/options.h) read
 * from argv, and printed as the option lines of its --help (which the man
 * page and the bash completion are generated from: cmake/helptext.sh).
 *
 * On the command line an option is "--name VALUE" or "--name=VALUE", a flag
 * "--name".  The messages: "unknown option '--NAME' (see 'ampscope CMD
 * --help')", "option --NAME needs a value", "option --NAME takes no value",
 * "unexpected argument 'A' (see 'ampscope CMD --help')", and the table's own
 * for a bad value. */
#ifndef AMPSCOPE_CLI_OPTIONS_H
#define AMPSCOPE_CLI_OPTIONS_H

#include <stdio.h>

#include "options.h"

/* Reads the option at argv[*i]: its row and its text (NULL for a flag),
 * advancing *i past a separate value.  1, or CLI_EINPUT with the message. */
int cli_read_option(const opt_spec *table, int argc, char **argv, int *i, const opt_spec **row,
                    const char **value);

/* Matches argv[*i] against the rows of table as cli_option_value does: a
 * flag exactly, an option as "--name VALUE" or "--name=VALUE".  1 with *row
 * and *value (NULL for a flag; *i advanced past a separate value), 0 when no
 * row matches (the caller's message names the argument), CLI_EINPUT when the
 * value is missing. */
int cli_match_option(const opt_spec *table, int argc, char **argv, int *i, const opt_spec **row,
                     const char **value);

/* Sets the fields of base from argv[1..]: every argument an option of
 * table, "--help" (cli_is_help) sets *help and stops.  positional, when not
 * NULL, takes each argument that does not start with "--" (0 or a status).
 * 0, or CLI_EINPUT with the message. */
int cli_parse_options(const opt_spec *table, void *base, int argc, char **argv, bool *help,
                      int (*positional)(void *base, const char *arg));

/* The option lines of a help: each group's heading, then "  --name METAVAR"
 * (or the row's label) and two spaces, its help from column (a label shorter
 * than column - 4 is padded to it). */
void cli_print_options(FILE *out, const opt_spec *table, int column);

#endif
