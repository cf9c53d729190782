#!/bin/sh
# mock, test-only: prints MOSAIC_MOCK_RESPONSE verbatim. Never use it where a real model
# response is required.
set -u
case $0 in */*) . "${0%/*}/../lib.sh" ;; *) . ../lib.sh ;; esac
moot_runtime=mock
moot_no_provider=1
if [ "$moot_verb" = deliver ]; then
    [ -n "${MOSAIC_MOCK_RESPONSE+set}" ] || moot_die 2 "MOSAIC_MOCK_RESPONSE is not set: it is the response to emit"
    MOSAIC_REQUEST=$MOSAIC_MOCK_RESPONSE
fi
moot_adapter mock raw
