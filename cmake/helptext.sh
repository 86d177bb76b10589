# helptext.sh: reads ampscope's help texts, for mkman.sh and mkcompletion.sh (sourced, POSIX sh).
#
# The man page and the bash completion are generated from what the built program prints, so
# neither can drift from it.  Both walk the same tree of help texts, through these functions:
#   ht_help BIN WORDS...   `BIN WORDS... --help` (`BIN --help` without WORDS); fails if it fails
#   ht_table               the first command table of a help text on stdin ("name<TAB>summary")
#   ht_paths BIN           every command path with a help text: "", "emu", "emu eval", ...
#   ht_options             the options of a help text on stdin, one per line:
#                          "NAME KIND [CHOICE...]", KIND one of flag, value, dir, file, choice
# `help` is left out of ht_paths: its help is the program's own usage (and `help --help` asks
# for a command named --help).

ht_help()
{
    ht_bin=$1
    shift
    "$ht_bin" "$@" --help || {
        echo "helptext.sh: '$ht_bin $* --help' failed" >&2
        return 1
    }
}

# A table is a header line ("commands:", "benchmarks:") followed by lines of a name (not an
# option) and its summary after two or more spaces.  The readers here read to the end: one that
# left early would fail the program's write into the pipe.
ht_table()
{
    awk '
        /^[a-z][a-z ]*:$/ { header = 1; next }
        !done && header && /^  [a-z][a-z0-9_-]*  +[^ ]/ {
            name = $1
            summary = $0
            sub(/^  [a-z][a-z0-9_-]*  +/, "", summary)
            print name "\t" summary
            found = 1
            next
        }
        { if (found) done = 1; header = 0 }
    '
}

ht_paths()
{
    hp_bin=$1
    echo ""
    hp_top=$(ht_help "$hp_bin") || return 1
    for hp_cmd in $(printf '%s\n' "$hp_top" | ht_table | cut -f1); do
        [ "$hp_cmd" = help ] && continue
        echo "$hp_cmd"
        hp_text=$(ht_help "$hp_bin" "$hp_cmd") || return 1
        for hp_sub in $(printf '%s\n' "$hp_text" | ht_table | cut -f1); do
            echo "$hp_cmd $hp_sub"
        done
    done
}

# Options are read where the help text names them: the usage lines (the "usage:" line and the
# lines under it that go on with "[" or "-") and the option column of the option tables (lines
# whose first word is an option, up to the first run of two spaces).  An option followed by one
# space and a word takes that word as its argument: "a|b|c" lists its values (an upper-case word
# among them, "all|MODE", makes it a value to type), a word with DIR a directory, a word with
# FILE or an extension (G.safetensors) a file, anything else a value to type.  "-r<mode>" stands
# for -r followed by each mode named after the help's "one of:".
ht_options()
{
    awk '
        function rank(kind) {
            return kind == "choice" ? 5 : kind == "dir" ? 4 : kind == "file" ? 3 : \
                   kind == "value" ? 2 : 1
        }
        function note(name, kind, choices) {
            if (!(name in kinds)) order[++count] = name
            if (!(name in kinds) || rank(kind) > rank(kinds[name])) {
                kinds[name] = kind
                values[name] = choices
            }
        }
        function argument_kind(word,    alternatives, n, i) {
            if (word ~ /\|/) {
                n = split(word, alternatives, "|")
                for (i = 1; i <= n; i++)
                    if (alternatives[i] !~ /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/ ||
                        alternatives[i] ~ /^[A-Z_]+$/) return "value"
                return "choice"
            }
            if (word ~ /DIR/) return "dir"
            if (word ~ /FILE/ || word ~ /[a-zA-Z]\.[a-z]+$/) return "file"
            return "value"
        }
        function scan(text,    words, n, i, word, closed, alternatives, m, j, name, next_word,
                      kind, choices) {
            n = split(text, words, " ")
            for (i = 1; i <= n; i++) {
                word = words[i]
                sub(/^[[(]+/, "", word)
                closed = word ~ /[]),;]$/
                sub(/[]),;.]+$/, "", word)
                if (word !~ /^--?[a-zA-Z]/) continue
                m = split(word, alternatives, "|")
                for (j = 1; j <= m; j++) {
                    name = alternatives[j]
                    if (name !~ /^--?[a-zA-Z]/) continue
                    if (name ~ /^-r<mode>$/) {
                        for (k = 1; k <= mode_count; k++) note("-r" modes[k], "flag", "")
                        continue
                    }
                    sub(/[^a-zA-Z0-9_-].*$/, "", name)
                    kind = "flag"
                    choices = ""
                    if (m == 1 && !closed && i < n) {
                        next_word = words[i + 1]
                        if (next_word !~ /^[[-]/) {
                            sub(/[]),;]+$/, "", next_word)
                            kind = argument_kind(next_word)
                            if (kind == "choice") {
                                choices = next_word
                                gsub(/\|/, " ", choices)
                            }
                        }
                    }
                    note(name, kind, choices)
                }
            }
        }
        { lines[NR] = $0 }
        END {
            # the rounding modes, for -r<mode>: "near_even (rne), near_maxMag (rna), ..."
            for (l = 1; l <= NR; l++) {
                if (lines[l] !~ /one of:$/) continue
                for (l2 = l + 1; l2 <= NR && lines[l2] ~ /^      +[a-z_]+ \(/; l2++) {
                    rest = lines[l2]
                    while (match(rest, /[a-zA-Z_]+ \(/)) {
                        modes[++mode_count] = substr(rest, RSTART, RLENGTH - 2)
                        rest = substr(rest, RSTART + RLENGTH)
                    }
                }
                break
            }
            in_usage = 0
            for (l = 1; l <= NR; l++) {
                line = lines[l]
                if (line ~ /^usage:/) {
                    in_usage = 1
                    sub(/^usage: +/, "", line)
                    scan(line)
                    continue
                }
                if (in_usage && line ~ /^ +[[-]/) { scan(line); continue }
                in_usage = 0
                if (line ~ /^ +--?[a-zA-Z]/) {
                    sub(/^ +/, "", line)
                    sub(/  .*$/, "", line)
                    scan(line)
                }
            }
            for (i = 1; i <= count; i++) {
                name = order[i]
                out = name " " kinds[name]
                if (values[name] != "") out = out " " values[name]
                print out
            }
        }
    '
}
