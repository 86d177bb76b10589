/* cli_options.c: options tables on the command line and in help texts
 * (see cli_options.h). */
#include "cli_options.h"

#include <string.h>

#include "cli.h"

int cli_read_option(const opt_spec *table, int argc, char **argv, int *i, const opt_spec **row,
                    const char **value)
{
    const char *a = argv[*i];
    if (strncmp(a, "--", 2) == 0 && (*row = opt_find(table, a + 2)) && !opt_takes_value(*row)) {
        *value = NULL;
        return 1;
    }
    char key[64];
    const int m = cli_next_option(argc, argv, i, key, sizeof key, value);
    if (m < 0) return m;
    *row = opt_find(table, key);
    if (!*row)
        return cli_error(CLI_EINPUT, "unknown option '--%s' (see 'ampscope %s --help')", key,
                         cli_context());
    if (!opt_takes_value(*row)) return cli_error(CLI_EINPUT, "option --%s takes no value", key);
    return 1;
}

int cli_match_option(const opt_spec *table, int argc, char **argv, int *i, const opt_spec **row,
                     const char **value)
{
    if (strncmp(argv[*i], "--", 2) != 0) return 0;
    for (const opt_spec *r = table; r->name; r++) {
        if (!*r->name) continue;
        if (!opt_takes_value(r)) {
            if (strcmp(argv[*i] + 2, r->name) != 0) continue;
            *row = r;
            *value = NULL;
            return 1;
        }
        const int m = cli_option_value(argc, argv, i, r->name, value);
        if (m == 0) continue;
        *row = r;
        return m;
    }
    return 0;
}

int cli_parse_options(const opt_spec *table, void *base, int argc, char **argv, bool *help,
                      int (*positional)(void *base, const char *arg))
{
    *help = false;
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            *help = true;
            return CLI_OK;
        }
        if (positional && strncmp(argv[i], "--", 2) != 0) {
            const int rc = positional(base, argv[i]);
            if (rc) return rc;
            continue;
        }
        const opt_spec *row;
        const char *v;
        const int m = cli_read_option(table, argc, argv, &i, &row, &v);
        if (m < 0) return m;
        char msg[1024];
        if (opt_set(row, base, v, msg, sizeof msg) != 0) return cli_error(CLI_EINPUT, "%s", msg);
    }
    return CLI_OK;
}

void cli_print_options(FILE *out, const opt_spec *table, int column)
{
    for (const opt_spec *r = table; r->name; r++) {
        if (r->group) fprintf(out, "%s\n", r->group);
        if (r->label && !*r->label) continue; /* shown in another row's label */
        char meta[256], label[512];
        if (r->label) {
            snprintf(label, sizeof label, "%s", r->label);
        } else {
            const char *m = opt_metavar(r, meta, sizeof meta);
            snprintf(label, sizeof label, "--%s%s%s", r->name, *m ? " " : "", m);
        }
        /* a label of several lines: all but the last alone */
        const char *last = label;
        for (const char *nl; (nl = strchr(last, '\n')); last = nl + 1)
            fprintf(out, "  %.*s\n", (int)(nl - last), last);
        if (!r->help) {
            fprintf(out, "  %s\n", last);
            continue;
        }
        char help[2048];
        if (r->help_arg)
            snprintf(help, sizeof help, r->help, r->help_arg());
        else
            snprintf(help, sizeof help, "%s", r->help);
        fprintf(out, "  %-*s  ", column - 4, last);
        const char *h = help;
        for (const char *nl; (nl = strchr(h, '\n')); h = nl + 1)
            fprintf(out, "%.*s\n%*s", (int)(nl - h), h, column, "");
        fprintf(out, "%s\n", h);
    }
}
