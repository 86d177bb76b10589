/* soak_json_check: exits 0 when every file named on the command line is one
 * complete JSON document (jansson's parser, the one ampscope reads them
 * with), else prints each bad file with the parser's reason and exits 1.
 * The soak tests run it on every run.json, sweep.json and done.json after a
 * SIGKILL: an atomically replaced file is never seen half-written. */
#include <jansson.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: soak_json_check FILE.json...\n");
        return 2;
    }
    int bad = 0;
    for (int i = 1; i < argc; i++) {
        json_error_t err;
        json_t *j = json_load_file(argv[i], 0, &err);
        if (!j) {
            fprintf(stderr, "%s: not a complete JSON document: %s (line %d)\n", argv[i], err.text,
                    err.line);
            bad++;
        }
        json_decref(j);
    }
    return bad ? 1 : 0;
}
