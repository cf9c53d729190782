#!/bin/sh
# omp (oh-my-pi) under the adapter.sh contract: a fresh stateless session every turn (omp never
# resumes), the model provider-qualified, MOSAIC_THINKING as --thinking, the system prompt
# appended to omp's own. The verdict comes from omp's stream, never from its exit status.
set -u
. "$(dirname "$0")/../lib.sh"
moot_runtime=omp
model=$(moot_qualified_model)
moot_adapter omp omp \
    ${model:+--model "$model"} \
    ${MOSAIC_THINKING:+--effort "$MOSAIC_THINKING"} \
    ${MOSAIC_SYSTEM_PROMPT_FILE:+--system-prompt-file "$MOSAIC_SYSTEM_PROMPT_FILE"}
