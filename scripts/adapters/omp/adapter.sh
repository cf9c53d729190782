#!/bin/sh
# omp (oh-my-pi) under the adapter.sh contract: a fresh stateless session every turn (omp never
# resumes), the model provider-qualified, MOSAIC_THINKING as --thinking, the system prompt
# appended to omp's own. The verdict comes from omp's stream, never from its exit status.
set -u
case $0 in */*) . "${0%/*}/../lib.sh" ;; *) . ../lib.sh ;; esac
moot_runtime=omp
moot_qualify_model
moot_adapter omp omp \
    ${moot_model:+--model "$moot_model"} \
    ${MOSAIC_THINKING:+--effort "$MOSAIC_THINKING"} \
    ${MOSAIC_SYSTEM_PROMPT_FILE:+--system-prompt-file "$MOSAIC_SYSTEM_PROMPT_FILE"}
