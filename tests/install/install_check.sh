#!/bin/bash
# install_check.sh BUILD_DIR: the installed package works from outside the source tree.
#
# Installs BUILD_DIR (`cmake --install --prefix`) into a temporary prefix, then checks what a
# user of the package meets:
#   - the files: bin/ampscope, include/ampscope/fpe.h, libampscope-emu.a and .so (with its
#     soname link), pkgconfig/ampscope-emu.pc, share/ampscope/plots/*.gp (the same as plots/),
#     share/man/man1/ampscope.1, share/bash-completion/completions/ampscope;
#   - hello_emu.c, copied out of the tree, compiled with only the installed header and
#     `pkg-config --cflags --libs ampscope-emu`, linked against the shared library (run with
#     LD_LIBRARY_PATH; it must fail to start without it) and, `--static`, against the static one
#     (no dynamic section at all); both print the hand-checked table below;
#   - `ampscope --version` of the installed program, equal to the .pc file's version;
#   - the man page: groff finds nothing to warn about (or, without groff, only known macros),
#     every section is there and every command and subcommand has its subsection;
#   - the bash completion, sourced in a clean bash: `ampscope tr<TAB>`, `ampscope train --lo<TAB>`,
#     `ampscope emu <TAB>`, directory and file arguments, choices of an option.
# Nothing is written into BUILD_DIR but what `cmake --install` always writes there
# (install_manifest.txt), which is put back as it was.
set -u

BUILD=${1:?usage: install_check.sh BUILD_DIR}
[[ -f $BUILD/cmake_install.cmake ]] || { echo "not a configured build directory: $BUILD" >&2; exit 2; }
BUILD=$(cd "$BUILD" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
SOURCE=$(cd "$HERE/../.." && pwd)

TMP=$(mktemp -d)
MANIFEST=$BUILD/install_manifest.txt
cleanup() {
    if [[ -f $TMP/manifest.saved ]]; then
        cp -p "$TMP/manifest.saved" "$MANIFEST"
    else
        rm -f "$MANIFEST"
    fi
    rm -rf "$TMP"
}
trap cleanup EXIT

CHECKS=0
FAILURES=0
check() { # check DESCRIPTION COMMAND...: counts the check; reports it when COMMAND fails
    local what=$1
    shift
    CHECKS=$((CHECKS + 1))
    if ! "$@"; then
        FAILURES=$((FAILURES + 1))
        echo "FAIL: $what" >&2
    fi
}
same_text() { # same_text WANT GOT
    [[ $1 == "$2" ]] && return 0
    printf 'want:\n%s\ngot:\n%s\n' "$1" "$2" >&2
    return 1
}

# ---- install -------------------------------------------------------------------------------
[[ -f $MANIFEST ]] && cp -p "$MANIFEST" "$TMP/manifest.saved"
PREFIX=$TMP/prefix
if ! cmake --install "$BUILD" --prefix "$PREFIX" >"$TMP/install.log" 2>&1; then
    cat "$TMP/install.log" >&2
    echo "FAIL: cmake --install $BUILD --prefix $PREFIX" >&2
    exit 1
fi

PC=$(find "$PREFIX" -name ampscope-emu.pc -path '*/pkgconfig/*')
check "one ampscope-emu.pc under a pkgconfig folder" test "$(printf '%s\n' "$PC" | wc -l)" = 1 -a -f "$PC"
PCDIR=$(dirname "$PC")
LIBDIR=$(dirname "$PCDIR")
for f in bin/ampscope include/ampscope/fpe.h share/man/man1/ampscope.1 \
    share/bash-completion/completions/ampscope; do
    check "installed: $f" test -f "$PREFIX/$f"
done
check "installed: bin/ampscope is executable" test -x "$PREFIX/bin/ampscope"
check "installed: $LIBDIR/libampscope-emu.a" test -f "$LIBDIR/libampscope-emu.a"
check "installed: $LIBDIR/libampscope-emu.so (the link for -l)" test -L "$LIBDIR/libampscope-emu.so"
SONAME=$(readelf -d "$LIBDIR/libampscope-emu.so" 2>/dev/null | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
check "the shared library has a soname with a version (libampscope-emu.so.N)" \
    test -n "$SONAME" -a "${SONAME#libampscope-emu.so.}" != "$SONAME"
check "installed: the soname's file $LIBDIR/$SONAME" test -e "$LIBDIR/$SONAME"
check "only fpe.h is installed as a header" \
    test "$(find "$PREFIX/include" -type f | sed "s|^$PREFIX/||")" = include/ampscope/fpe.h
for gp in "$SOURCE"/plots/*.gp; do
    check "installed: share/ampscope/plots/$(basename "$gp"), the same as plots/" \
        cmp -s "$gp" "$PREFIX/share/ampscope/plots/$(basename "$gp")"
done

# ---- a C program of someone else's, outside the tree -----------------------------------------
WANT_HELLO='f16_add near_even 3C00 + 1000 = 3C00 (1) flags 01 ok
f16_add max       3C00 + 1000 = 3C01 (1.00098) flags 01 ok
f16_add near_even 7BFF + 7BFF = 7C00 (inf) flags 05 ok
f16_add minMag    7BFF + 7BFF = 7BFF (65504) flags 05 ok
f16_add near_even 3C00 + 3C00 = 4000 (2) flags 00 ok
f16_add max       3C00 + 3C00 = 4000 (2) flags 00 ok
hello_emu: 6 of 6 as expected'
mkdir "$TMP/user"
cp "$HERE/hello_emu.c" "$TMP/user/"
cd "$TMP/user" || exit 1
pc() { PKG_CONFIG_PATH=$PCDIR PKG_CONFIG_LIBDIR=$PCDIR pkg-config "$@"; }
CFLAGS_PC=$(pc --cflags ampscope-emu)
LIBS_PC=$(pc --libs ampscope-emu)
LIBS_STATIC_PC=$(pc --static --libs ampscope-emu)
read -r -a CFLAG_WORDS <<<"$CFLAGS_PC"
check "pkg-config --cflags is -I<the installed include folder>" \
    test "${#CFLAG_WORDS[@]}" = 1 -a \
    "$(cd "${CFLAG_WORDS[0]#-I}" 2>/dev/null && pwd)" = "$PREFIX/include"
read -r -a LIB_WORDS <<<"$LIBS_PC"
check "pkg-config --libs is -L<the installed lib folder> -lampscope-emu" \
    test "${#LIB_WORDS[@]}" = 2 -a "${LIB_WORDS[1]-}" = -lampscope-emu -a \
    "$(cd "${LIB_WORDS[0]#-L}" 2>/dev/null && pwd)" = "$LIBDIR"
check "pkg-config --static --libs adds -lm" grep -q -- '-lm' <<<"$LIBS_STATIC_PC"
CC=${CC:-cc}
# The shared library's interface is fpe.h's, no more and no less: the functions and data the
# preprocessed header declares (its static inline helpers aside) are what the library exports
# (reserved names, such as a sanitizer build's __odr_asan..., are the compiler's).
# shellcheck disable=SC2086
DECLARED=$($CC -E -P $CFLAGS_PC - <<<'#include <ampscope/fpe.h>' | tr ';' '\n' | grep -v static |
    grep -oE '\bfpe_[A-Za-z0-9_]+ *[[(]' | sed 's/ *[[(]$//' | sort -u)
EXPORTED=$(nm -D --defined-only "$LIBDIR/libampscope-emu.so" | awk '$3 !~ /^__/ { print $3 }' |
    sort -u)
check "the shared library exports what fpe.h declares ($(wc -l <<<"$DECLARED") names)" \
    same_text "$DECLARED" "$EXPORTED"
# A sanitizer build (AMPSCOPE_SANITIZE) installs an instrumented library: its users compile
# with the same -fsanitize, and cannot link it statically (the sanitizers' runtimes are shared).
SANITIZE=""
if nm -D --undefined-only "$LIBDIR/libampscope-emu.so" 2>/dev/null | grep -q '__[a-z]*san_'; then
    SANITIZE="-fsanitize=address,undefined"
    echo "install_check: a sanitizer build: hello_emu built with $SANITIZE, no static link"
fi
# shellcheck disable=SC2086 # pkg-config's output is words
check "hello_emu.c compiles with only the installed header (-Werror -pedantic)" \
    $CC -std=c11 -Wall -Wextra -Werror -pedantic $SANITIZE $CFLAGS_PC -c hello_emu.c -o hello_emu.o
# shellcheck disable=SC2086
check "hello_emu links against the shared library" \
    $CC $SANITIZE hello_emu.o $LIBS_PC -o hello_shared
if [[ -z $SANITIZE ]]; then
    # shellcheck disable=SC2086
    check "hello_emu links --static against the static library" \
        $CC -static hello_emu.o $LIBS_STATIC_PC -o hello_static
fi
if [[ -x hello_shared ]]; then
    check "hello_shared needs $SONAME" grep -q "NEEDED.*\[$SONAME\]" <<<"$(readelf -d hello_shared)"
    # (unless a copy is installed where the loader looks anyway)
    if ! /sbin/ldconfig -p 2>/dev/null | grep -q "$SONAME"; then
        check "hello_shared does not start without the installed library on its path" \
            eval '! env -u LD_LIBRARY_PATH ./hello_shared >/dev/null 2>&1'
    fi
    OUT=$(LD_LIBRARY_PATH=$LIBDIR ./hello_shared)
    check "hello_shared: exit status 0" test $? = 0
    check "hello_shared prints the hand-checked table" same_text "$WANT_HELLO" "$OUT"
fi
if [[ -x hello_static ]]; then
    check "hello_static has no dynamic section (the static library went in)" \
        eval '! readelf -d hello_static | grep -q NEEDED'
    OUT=$(env -u LD_LIBRARY_PATH ./hello_static)
    check "hello_static: exit status 0" test $? = 0
    check "hello_static prints the hand-checked table" same_text "$WANT_HELLO" "$OUT"
fi

# ---- the program -----------------------------------------------------------------------------
AMPSCOPE=$PREFIX/bin/ampscope
VERSION_LINE=$("$AMPSCOPE" --version)
check "installed ampscope --version runs (exit 0)" test $? = 0
check "ampscope --version is 'ampscope X.Y.Z', the .pc file's version" \
    same_text "ampscope $(pc --modversion ampscope-emu)" "$VERSION_LINE"

# The commands, read here from the installed program's usage: "  name   summary" under a
# "commands:" or "benchmarks:" line.
table() { awk '/^(commands|benchmarks):$/ { on = 1; next } on && /^  [a-z]/ { print $1; next } { on = 0 }'; }
COMMANDS=$("$AMPSCOPE" --help | table)
check "ampscope --help lists train and emu" eval '[[ $COMMANDS == *train* && $COMMANDS == *emu* ]]'

# ---- the man page ----------------------------------------------------------------------------
MAN=$PREFIX/share/man/man1/ampscope.1
if command -v groff >/dev/null; then
    groff -man -Tutf8 -ww -z "$MAN" 2>"$TMP/groff.err"
    check "groff -man -ww: no warning" test ! -s "$TMP/groff.err"
    cat "$TMP/groff.err" >&2
    PAGE=$(groff -man -Tascii -P-cbou "$MAN" 2>/dev/null)
    if command -v man >/dev/null; then
        check "man -l renders the page" eval 'MANWIDTH=100 man -l "$MAN" >/dev/null 2>&1'
    fi
else
    # without groff: only the macros mkman.sh writes, and the text itself
    UNKNOWN=$(grep -o '^\.[A-Za-z]*' "$MAN" | sort -u | grep -vxE '\.(TH|SH|SS|TP|PP|B|BR|I|nf|fi)?')
    check "the man page uses only known macros" same_text "" "$UNKNOWN"
    PAGE=$(sed -e 's/^\.SH //' -e 's/^\.SS "\(.*\)"$/   \1/' -e 's/\\-/-/g' -e 's/\\e/\\/g' \
        -e 's/\\f[BIR]//g' "$MAN")
fi
for section in NAME SYNOPSIS DESCRIPTION COMMANDS "EXIT STATUS" FILES "SEE ALSO"; do
    check "man page section $section" grep -qx "$section" <<<"$PAGE"
done
for cmd in $COMMANDS; do
    [[ $cmd == help ]] && continue # `help` is the usage itself, in DESCRIPTION
    check "man page: subsection 'ampscope $cmd'" grep -qE "^ +ampscope $cmd\$" <<<"$PAGE"
    for sub in $("$AMPSCOPE" "$cmd" --help | table); do
        check "man page: subsection 'ampscope $cmd $sub'" grep -qE "^ +ampscope $cmd $sub\$" <<<"$PAGE"
    done
done
check "man page: train's --loss-scale option, as typed" grep -q -- '--loss-scale P' <<<"$PAGE"
check "man page: FILES names the installed plots folder" grep -q 'share/ampscope/plots' <<<"$PAGE"

# ---- the bash completion ---------------------------------------------------------------------
# complete WORD...: what bash offers for the last WORD (the one under the cursor), sorted, one
# line; the function is the one the script registers with `complete -F` for ampscope.
COMPLETION=$PREFIX/share/bash-completion/completions/ampscope
mkdir -p "$TMP/cwd/runs_dir" && touch "$TMP/cwd/runs_file.safetensors"
complete_words() {
    (cd "$TMP/cwd" && bash --norc --noprofile -c '
        source "$1" || exit 1
        fn=$(complete -p ampscope | sed -n "s/.* -F \([^ ]*\) .*/\1/p")
        [[ -n $fn ]] || { echo "no complete -F for ampscope" >&2; exit 1; }
        shift
        COMP_WORDS=("$@")
        COMP_CWORD=$(($# - 1))
        COMP_LINE="$*"
        COMP_POINT=${#COMP_LINE}
        COMPREPLY=()
        "$fn" ampscope "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
        printf "%s\n" "${COMPREPLY[@]}" | sort | tr "\n" " " | sed "s/ $//"
    ' bash "$COMPLETION" "$@" 2>"$TMP/complete.err")
}
expect_completion() { # expect_completion WANT WORD...
    local want=$1
    shift
    local got
    got=$(complete_words "$@")
    check "completion of '$*': '$want'" same_text "$want" "$got"
    check "completion of '$*' is silent on stderr" test ! -s "$TMP/complete.err"
}
expect_completion "train" ampscope tr
expect_completion "--loss-scale" ampscope train --lo
expect_completion "eval testfloat verify" ampscope emu ""
expect_completion "$(tr ' ' '\n' <<<"$COMMANDS" | sort | tr '\n' ' ' | sed 's/ $//')" ampscope ""
expect_completion "--help --version" ampscope -
expect_completion "allreduce emu kernels sweep train" ampscope bench ""
expect_completion "--round" ampscope emu eval fp16 add 1 2 --r
expect_completion "-rmax -rmin -rminMag" ampscope emu testfloat f16_add -rm
expect_completion "bf16 fp16" ampscope train --dtype ""
expect_completion "runs_dir" ampscope train --out runs_
expect_completion "runs_dir" ampscope train --data runs
expect_completion "runs_dir" ampscope train --resume r
expect_completion "runs_dir runs_file.safetensors" ampscope train --init runs
expect_completion "runs_dir runs_file.safetensors" ampscope grad --out runs
expect_completion "" ampscope train --lr ""
expect_completion "--stats-every" ampscope sweep --stats-e
expect_completion "emu" ampscope help em

echo "install_check: $CHECKS checks, $FAILURES failed"
[[ $FAILURES -eq 0 ]]
