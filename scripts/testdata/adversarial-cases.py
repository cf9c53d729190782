#!/usr/bin/env python3
# usage: scripts/testdata/adversarial-cases.py testdata/adversarial
#   (then MOOT_BLESS=1 cargo test -p moot-parse-omp --test adversarial, and review every diff
#   against the verdicts decided in testdata/adversarial/README.md)
# Writes hostile omp streams: each is a minimal successful run with one hostile thing in it, so
# the verdict is about that thing. Inputs too large to commit (100 MiB lines, 10 million lines,
# endless stdin) are generated at run time by bins/moot-parse-omp/tests/adversarial.rs.
import json, os, sys

out = sys.argv[1]
SID = "01a229c0-91fa-75fa-8206-38514f5ba04a"
RESULT = '{"gitmoot_result":{"decision":"approved","summary":"done","findings":[],"changes_made":[],"tests_run":[],"needs":[],"delegations":[]}}'
ANSWER = "I looked at the task and everything is in order.\n\n" + RESULT


def j(o):
    return json.dumps(o, separators=(",", ":"), ensure_ascii=False).encode()


def usage(i=17152, o=42):
    return {"input": i, "output": o, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0}


def assistant(text=ANSWER, u=None, stop="stop"):
    return {"role": "assistant", "content": [{"type": "text", "text": text}], "api": "openai-completions",
            "provider": "fake", "model": "fake-model", "usage": u or usage(), "stopReason": stop}


SESSION = j({"type": "session", "version": 3, "id": SID, "cwd": "/tmp/rcws-omp"})
ANSWER_ROW = j({"type": "message_end", "message": assistant()})
END = j({"type": "agent_end", "messages": [], "isTerminal": True})
NOTICE = j({"type": "notice", "level": "warning", "message": "x"})


def run(*rows, sep=b"\n"):
    """A stream of raw rows, each ended by `sep`."""
    return b"".join(r + sep for r in rows)


def ok_with(extra, before=ANSWER_ROW):
    """The minimal successful run with `extra` rows inserted before `before`."""
    rows = [SESSION, ANSWER_ROW, END]
    i = rows.index(before)
    return run(*rows[:i], *extra, *rows[i:])


def raw_usage(numbers):
    """An assistant message_end whose usage is spelled by hand (numbers JSON cannot build)."""
    row = j({"type": "message_end", "message": assistant(u={"input": 1, "output": 2})})
    return row.replace(b'"usage":{"input":1,"output":2}', b'"usage":' + numbers)


DEPTH = 100_000
cases = {
    # Encoding.
    "invalid-utf8-garbage-line": ok_with([b"\xff\xfe\x80 not text \xc3\x28"]),
    "invalid-utf8-in-unknown-event": ok_with([b'{"type":"notice","message":"\xff\xfe"}']),
    "invalid-utf8-in-answer": run(SESSION, ANSWER_ROW.replace(b"in order.", b"in \xff order."), END),
    "nul-bytes-line": ok_with([b"\x00" * 64]),
    "nul-escaped-in-answer": run(SESSION, ANSWER_ROW.replace(b"in order.", b"in \\u0000 order."), END),
    "nul-raw-in-answer": run(SESSION, ANSWER_ROW.replace(b"in order.", b"in \x00 order."), END),
    # Surrogate escapes, as JSON.stringify writes half of an emoji (U+1F44D is \ud83d\udc4d).
    "lone-surrogate-high-in-answer": run(SESSION, ANSWER_ROW.replace(b"in order.", b"in \\ud83d order."), END),
    "lone-surrogate-low-in-answer": run(SESSION, ANSWER_ROW.replace(b"in order.", b"in \\udc4d order."), END),
    "lone-surrogates-reversed-in-answer": run(SESSION, ANSWER_ROW.replace(b"in order.", b"in \\udc4d\\ud83d order."), END),
    "surrogate-pair-and-lone-high-uppercase": run(SESSION, ANSWER_ROW.replace(b"in order.", b"in \\uD83D\\uDC4D\\uD83D order."), END),
    "surrogate-after-escaped-backslash": run(SESSION, ANSWER_ROW.replace(b"in order.", b"in \\\\ud83d order."), END),
    "lone-surrogate-before-bad-escape": run(SESSION, ANSWER_ROW.replace(b"in order.", b"in \\ud83d\\uZZZZ order."), END),
    "surrogate-raw-in-answer": run(SESSION, ANSWER_ROW.replace(b"in order.", b"in \xed\xa0\xbd order."), END),
    "lone-surrogate-in-agent-end-type": run(SESSION, ANSWER_ROW, END.replace(b'"agent_end"', b'"agent_end\\ud83d"')),
    # Structure.
    "deep-nesting-unknown-event": ok_with([b'{"type":"notice","x":' + b"[" * DEPTH + b"]" * DEPTH + b"}"]),
    "deep-nesting-agent-end": run(SESSION, ANSWER_ROW,
                                  b'{"type":"agent_end","isTerminal":true,"messages":' + b"[" * DEPTH + b"]" * DEPTH + b"}"),
    "deep-nesting-error-status": run(SESSION, ANSWER_ROW.replace(b'"stopReason":"stop"', b'"stopReason":"stop","errorStatus":' + b"[" * DEPTH + b"]" * DEPTH), END),
    "deep-nesting-in-result": run(SESSION, j({"type": "message_end", "message": assistant(
        text='{"gitmoot_result":{"decision":"approved","summary":"done","findings":' + "[" * DEPTH + "]" * DEPTH + "}}")}), END),
    "json-array-top-level": b"[" + b",".join([SESSION, ANSWER_ROW, END]) + b"]\n",
    "array-rows-naming-event-types": ok_with([b'["session","spoofed"]', b'["message_end"]', b'["agent_end"]']),
    "empty-lines-only": b"\n\n   \n\t\n\r\n\n",
    # Numbers out of range (usage is read as unsigned 64-bit integers).
    "usage-u64-overflow": run(SESSION, raw_usage(b'{"input":18446744073709551616,"output":2}'), END),
    "usage-negative": run(SESSION, raw_usage(b'{"input":-1,"output":2}'), END),
    "usage-float": run(SESSION, raw_usage(b'{"input":17152.0,"output":2}'), END),
    "usage-huge-exponent": run(SESSION, raw_usage(b'{"input":1e400,"output":2}'), END),
    "usage-sum-saturates": run(SESSION, raw_usage(b'{"input":18446744073709551615,"output":2}'),
                               raw_usage(b'{"input":18446744073709551615,"output":2}'), END),
    "telemetry-number-out-of-range": run(SESSION, ANSWER_ROW,
                                         b'{"type":"agent_end","messages":[],"isTerminal":true,"telemetry":{"usage":{"inputTokens":1e400,"outputTokens":1}}}'),
    # Duplicate keys (serde refuses them on the rows it reads).
    "duplicate-type-on-answer": run(SESSION, b'{"type":"message_end",' + ANSWER_ROW[1:], END),
    "duplicate-type-on-agent-end": run(SESSION, ANSWER_ROW, b'{"type":"agent_end",' + END[1:]),
    "duplicate-type-on-unknown-event": ok_with([b'{"type":"notice","type":"future_event","x":1}']),
    "duplicate-stop-reason": run(SESSION, ANSWER_ROW.replace(b'"stopReason":"stop"', b'"stopReason":"error","stopReason":"stop"'), END),
    # Byte-order marks and line endings.
    "bom-only": b"\xef\xbb\xbf",
    "bom-mid-stream-before-answer": run(SESSION, b"\xef\xbb\xbf" + ANSWER_ROW, END),
    "crlf-mixed-with-lf": run(SESSION, NOTICE, sep=b"\r\n") + run(ANSWER_ROW) + b"\r\n" + run(END, sep=b"\r\n"),
    "cr-lone-as-separator": run(SESSION, ANSWER_ROW, END, sep=b"\r"),
    "cr-lone-as-json-whitespace": run(SESSION.replace(b",", b",\r", 1), ANSWER_ROW.replace(b",", b"\r,", 1), END),
    "u2028-in-answer": run(SESSION, ANSWER_ROW.replace(b"in order.", "in\u2028order\u2029.".encode()), END),
    "u2028-as-separator": run(SESSION, ANSWER_ROW + "\u2028".encode() + NOTICE, END),
}

os.makedirs(out, exist_ok=True)
for name, data in cases.items():
    with open(os.path.join(out, name + ".ndjson"), "wb") as f:
        f.write(data)
print(f"{len(cases)} cases in {out}")
