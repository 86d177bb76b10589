#!/usr/bin/env bash
# run_peer.sh PYTHON SCRIPT ARGS...: runs a peer check (tests/peer) with PYTHON,
# Debian's /usr/bin/python3 with python3-torch and python3-numpy.  Exit 77
# (skipped) only when PYTHON cannot import torch and numpy; with
# AMPSCOPE_PEER_REQUIRED=1 (CI) that is a failure instead.
set -uo pipefail
py=$1
shift
if ! why=$("$py" -c 'import torch, numpy' 2>&1); then
    echo "$py cannot import torch and numpy (apt-get install python3-torch python3-numpy):" \
        "${why##*$'\n'}" >&2
    if [[ ${AMPSCOPE_PEER_REQUIRED:-0} == 1 ]]; then
        echo "AMPSCOPE_PEER_REQUIRED=1: failing instead of skipping" >&2
        exit 1
    fi
    exit 77
fi
exec "$py" "$@"
