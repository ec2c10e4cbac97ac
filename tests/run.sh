#!/usr/bin/env bash
# Runs the test suite once per Keras backend; fails if any backend fails.
# Usage: bash tests/run.sh [pytest args...]   (BACKENDS="jax" to pick)
set -u
status=0
for backend in ${BACKENDS:-tensorflow jax torch}; do
    echo "=== KERAS_BACKEND=$backend ==="
    # --durations: every CI log names the slowest tests, to keep the
    # run under its time budget.
    KERAS_BACKEND=$backend python -m pytest -q -n 2 --dist loadfile \
        --durations=15 "$@"
    code=$?
    # pytest exits 5 when no test was collected: not a failure of the code.
    if [ $code -ne 0 ] && [ $code -ne 5 ]; then
        echo "=== FAILED under KERAS_BACKEND=$backend (exit $code) ==="
        status=1
    fi
done
exit $status
