/* cli.h: what every ampscope subcommand shares: the error style, option
 * matching, and the parsing of numbers, rounding modes and formats given on
 * a command line or in a text stream.
 *
 * Error style (docs/ARCHITECTURE.md): a function returns an int status,
 * 0 on success or a negative CLI_E* code, after recording one message with
 * cli_error().  Only main() prints that message and turns the status into
 * the exit status: CLI_EINPUT -> 2, CLI_EDIVERGED -> 3, anything else -> 1.
 */
#ifndef AMPSCOPE_CLI_H
#define AMPSCOPE_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "fpe.h"
#include "kernels.h" /* ak_dtype */

enum cli_status {
    CLI_OK = 0,
    CLI_EFAIL = -1,    /* anything that is not the user's input: I/O, memory, a failed check */
    CLI_EINPUT = -2,   /* bad input: an unknown name, a malformed number, a missing argument */
    CLI_EDIVERGED = -3 /* a training run diverged (exit status 3) */
};

/* The command being run ("emu testfloat"), named in front of its messages. */
void cli_set_context(const char *context);
const char *cli_context(void);

/* Records a printf-style message (no trailing newline) and returns status. */
int cli_error(int status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
const char *cli_error_message(void);
/* The end of a command: standard output flushed (a failed write is a
 * failure), the recorded message printed as "ampscope CMD: message" unless
 * status is CLI_OK, and the exit status (0, 2 CLI_EINPUT, 3 CLI_EDIVERGED,
 * 1 anything else). */
int cli_exit_status(int status);

/* ---- options ------------------------------------------------------------ */
/* True for "--help", "-h" and "-help". */
bool cli_is_help(const char *arg);

/* Matches argv[*i] against "--name VALUE" or "--name=VALUE".  Returns 1 and
 * sets *value (advancing *i past a separate value) on a match, 0 when
 * argv[*i] is another argument, CLI_EINPUT when the value is missing. */
int cli_option_value(int argc, char **argv, int *i, const char *name, const char **value);

/* Reads the option at argv[*i] as "--key VALUE" or "--key=VALUE": the key
 * (without "--") into key, its value into *value (advancing *i past a
 * separate value).  Returns 1, or CLI_EINPUT with a message for an argument
 * that is not an option ("see 'ampscope CMD --help'"), a key too long for
 * key_len, or a missing value. */
int cli_next_option(int argc, char **argv, int *i, char *key, size_t key_len, const char **value);

/* ---- output paths ------------------------------------------------------- */
/* An output folder given as option opt ("--out"): CLI_OK when path is a
 * directory or does not exist yet; CLI_EINPUT with a message when it is a
 * file (or cannot be looked at). */
int cli_want_out_dir(const char *opt, const char *path);
/* An output file: CLI_OK unless path is a directory or the folder it goes
 * into does not exist (CLI_EINPUT with a message). */
int cli_want_out_file(const char *opt, const char *path);

/* ---- names -------------------------------------------------------------- */
/* A rounding mode by TestFloat's name (near_even, minMag, min, max,
 * near_maxMag, odd), ampscope's (stoch_prop, stoch_equal) or a short alias
 * (rne, rna, rz, rd, ru, ro, sr, sr_prop, sr_equal).  Returns 0 or CLI_EINPUT. */
int cli_parse_round(const char *name, fpe_round *round);
/* "near_even (rne), near_maxMag (rna), ..." for messages and help texts. */
const char *cli_round_names(void);

/* Writes the space-separated words of text, each line starting with indent
 * spaces and none longer than width (a word longer than that stands alone). */
void cli_print_wrapped(FILE *out, const char *text, int indent, int width);

/* ---- numbers ------------------------------------------------------------ */
typedef enum cli_hex_result {
    CLI_HEX_OK = 0,
    CLI_HEX_EMPTY,
    CLI_HEX_NOT_HEX, /* a character that is not a hex digit */
    CLI_HEX_TOO_WIDE /* the value needs more than the allowed bits */
} cli_hex_result;

/* Parses exactly len characters of s as an unsigned hex number (no prefix,
 * either case, leading zeros allowed) whose value fits in bits (1..64). */
cli_hex_result cli_parse_hex(const char *s, size_t len, int bits, uint64_t *value);

/* Parses all of s as a decimal floating-point number the way strtod does
 * (also "inf", "-inf", "nan"), rounding to the nearest double, ties to even.
 * Rejects an empty string, surrounding space, trailing characters and C99
 * hex floats (which would be confused with bit patterns).  A decimal
 * outside double's range becomes an infinity or a (signed) zero, as strtod
 * rounds it.  Returns 0, or CLI_EINPUT without recording a message. */
int cli_parse_decimal(const char *s, double *value);

/* Parses all of s as a decimal integer in [min, max] (cli_parse_int) or in
 * [0, umax] (cli_parse_uint).  Returns 0, or CLI_EINPUT without a message. */
int cli_parse_int(const char *s, int64_t min, int64_t max, int64_t *value);
int cli_parse_uint(const char *s, uint64_t umax, uint64_t *value);
/* cli_parse_int, recording "OPT wants an integer in [MIN, MAX], got 'V'". */
int cli_want_int(const char *opt, const char *v, int64_t min, int64_t max, int64_t *out);
/* "fp16" or "bf16" (and "fp32" when allow_f32), recording "OPT wants fp16 or
 * bf16, got 'V'" otherwise. */
int cli_want_dtype(const char *opt, const char *v, bool allow_f32, ak_dtype *out);

/* "inexact underflow" or "none" for a set of fpe_flag bits. */
const char *cli_flag_names(unsigned flags, char *buf, size_t size);

#endif
