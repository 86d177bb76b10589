# soak_lib.sh: what soak_train.sh and soak_sweep.sh share, sourced after
# tests/cli/lib.sh (run, fail, CHECKS, TMP).
#
#   soak_setup NAME DEFAULT      reads AMPSCOPE_SOAK_KILLS / AMPSCOPE_SOAK_SEED, seeds
#                                $RANDOM, prints the seed
#   now_ms                       milliseconds since the epoch
#   sleep_ms N                   sleeps N milliseconds
#   children_of PID              the pids whose parent is PID (from /proc: procps may be absent)
#   wait_gone PID...             waits (at most 10 s) until none of the pids is alive
#   csv_ok FILE                  every line ends with a newline and has the header's field count
#   steps_once FILE COL N        column COL holds 0..N-1, each once, in order
#   steps_bounded FILE COL N     column COL is nondecreasing and below N (nothing after the end)
#   no_tmp DIR                   no "*.tmp.*" file (af_begin's temporary names) under DIR
#   json_ok FILE...              each file is one complete JSON document ($JSON_CHECK)
#   partial_lines DIR            how many CSV files under DIR end without a newline
#   tmp_count DIR                how many "*.tmp.*" files are under DIR (0 if DIR is absent)

soak_setup() {
    KILLS=${AMPSCOPE_SOAK_KILLS:-$2}
    SEED=${AMPSCOPE_SOAK_SEED:-$RANDOM}
    if ! [[ $KILLS =~ ^[0-9]+$ ]] || ((KILLS < 1)); then
        echo "$1: AMPSCOPE_SOAK_KILLS must be an integer >= 1, got '$KILLS'" >&2
        exit 2
    fi
    if ! [[ $SEED =~ ^[0-9]+$ ]]; then
        echo "$1: AMPSCOPE_SOAK_SEED must be an integer, got '$SEED'" >&2
        exit 2
    fi
    RANDOM=$SEED
    echo "$1: seed $SEED (AMPSCOPE_SOAK_SEED=$SEED repeats the kill times), $KILLS kills"
}

now_ms() { echo $(($(date +%s%N) / 1000000)); }

sleep_ms() { sleep "$(printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)))"; }

children_of() {
    local parent=$1 f stat kids=""
    # the kernel's list when it keeps one (CONFIG_PROC_CHILDREN), else a scan of /proc
    # with builtins only (a fork per process would delay the kill that follows)
    [[ -d /proc/$parent ]] || return 0
    if [[ -r /proc/$parent/task/$parent/children ]]; then
        for f in /proc/"$parent"/task/*/children; do
            read -r kids 2>/dev/null <"$f" || true
            [[ -n $kids ]] && printf '%s\n' $kids
        done
        return 0
    fi
    for f in /proc/[0-9]*/stat; do
        read -r stat 2>/dev/null <"$f" || continue
        # the command name (2nd field) may hold spaces: read after its ')'
        stat=${stat##*) }
        set -- $stat
        [[ ${2-} == "$parent" ]] && { f=${f#/proc/}; echo "${f%/stat}"; }
    done
    return 0
}

wait_gone() {
    local pid tries
    for pid in "$@"; do
        for ((tries = 0; tries < 1000; tries++)); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.01
        done
    done
}

csv_ok() {
    local f=$1
    CHECKS=$((CHECKS + 1))
    [[ -s $f ]] || { fail "$f: missing or empty"; return; }
    [[ $(tail -c 1 "$f" | od -An -c | tr -d ' ') == '\n' ]] || fail "$f: the last line has no newline"
    awk -F, 'NR == 1 { n = NF } NF != n { printf "%s:%d: %d fields, the header has %d\n", FILENAME, NR, NF, n; bad = 1 }
             END { exit bad }' "$f" >&2 || fail "$f: a line does not have the header's field count"
}

steps_once() {
    local f=$1 col=$2 n=$3
    CHECKS=$((CHECKS + 1))
    [[ $(tail -n +2 "$f" | cut -d, -f"$col" | tr '\n' ' ') == "$(seq -s ' ' 0 $((n - 1))) " ]] ||
        fail "$f: column $col is not the steps 0..$((n - 1)) once each, in order"
}

steps_bounded() {
    local f=$1 col=$2 n=$3
    CHECKS=$((CHECKS + 1))
    awk -F, -v c="$col" -v n="$n" 'NR > 1 { if ($c < last || $c >= n) bad = 1; last = $c } END { exit bad }' "$f" ||
        fail "$f: column $col goes backwards or past step $((n - 1))"
}

no_tmp() {
    CHECKS=$((CHECKS + 1))
    local left
    left=$(find "$1" -name '*.tmp.*' | head -5)
    [[ -z $left ]] || fail "temporary files left: $left"
}

json_ok() {
    CHECKS=$((CHECKS + 1))
    "$JSON_CHECK" "$@" || fail "half-written JSON among: $*"
}

partial_lines() {
    local f n=0
    [[ -d $1 ]] || { echo 0; return 0; }
    while IFS= read -r f; do
        [[ -s $f && $(tail -c 1 "$f" | od -An -c | tr -d ' ') != '\n' ]] && n=$((n + 1))
    done < <(find "$1" -name '*.csv')
    echo "$n"
}

tmp_count() {
    [[ -d $1 ]] || { echo 0; return 0; }
    find "$1" -name '*.tmp.*' | wc -l
}

# kill_and_reap PID: SIGKILL to PID (a child of this shell), then reap it;
# $status is its exit status: 137 when the kill got it, else how it ended.
kill_and_reap() {
    kill -KILL "$1" 2>/dev/null || true
    status=0
    { wait "$1"; } 2>/dev/null || status=$?
}
