#!/usr/bin/env python3
"""Write a large, realistic omp --mode=json stream for benchmarks.

The shapes are those of the real captures in testdata/omp (omp 18.2.3): many small
message_update text deltas, multi-MiB tool_execution_end lines, message_end/turn_end per
turn, and a final multi-MiB agent_end that re-serialises the transcript, then a valid ending.

usage: gen-stream.py omp SIZE_MIB OUT
"""
import json
import sys

SID = "01a229c0-91fa-75fa-8206-38514f5ba04a"
RESULT = ('{"gitmoot_result":{"decision":"approved","summary":"done","findings":[],'
          '"changes_made":[],"tests_run":[],"needs":[],"delegations":[]}}')


def line(obj):
    return json.dumps(obj, separators=(",", ":")) + "\n"


def usage(i, o):
    return {"input": i, "output": o, "cacheRead": 0, "cacheWrite": 0, "totalTokens": i + o,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}


def assistant(content, stop):
    return {"role": "assistant", "content": content, "api": "openai-completions",
            "provider": "anthropic", "model": "claude-sonnet-4-5", "usage": usage(17152, 42),
            "stopReason": stop, "timestamp": 1795996817339}


def turn(n, big_tool_bytes):
    """One tool-calling turn: deltas, the message, a tool run with a large output."""
    words = ["Checking", " the", " module", " layout", " and", " the", " failing", " test", "."]
    out = [line({"type": "turn_start"}),
           line({"type": "message_start", "message": assistant([], "stop")})]
    for i in range(400):
        out.append(line({"type": "message_update", "assistantMessageEvent": {
            "type": "text_delta", "contentIndex": 0, "delta": words[i % len(words)]}}))
    call = {"type": "toolCall", "id": f"call_{n}", "name": "bash",
            "arguments": {"command": "cat src/lib.rs"}}
    msg = assistant([{"type": "text", "text": "Checking the module layout."}, call], "toolUse")
    out += [line({"type": "message_end", "message": msg}),
            line({"type": "tool_execution_start", "toolCallId": f"call_{n}", "toolName": "bash",
                  "args": {"command": "cat src/lib.rs"}})]
    blob = ("fn main() { println!(\"hello\"); }\n" * (big_tool_bytes // 34 + 1))[:big_tool_bytes]
    result = {"content": [{"type": "text", "text": blob}]}
    out += [line({"type": "tool_execution_end", "toolCallId": f"call_{n}", "toolName": "bash",
                  "result": result, "isError": False}),
            line({"type": "message_end", "message": {"role": "toolResult", "toolCallId": f"call_{n}",
                  "toolName": "bash", "content": result["content"], "isError": False}}),
            line({"type": "turn_end", "message": msg, "toolResults": []})]
    return "".join(out)


def main():
    dialect, size_mib, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    if dialect != "omp":
        sys.exit(f"gen-stream: dialect {dialect!r} is not known (omp)")
    target = size_mib * 1024 * 1024
    big = 2 * 1024 * 1024
    with open(path, "w") as f:
        f.write(line({"type": "session", "version": 3, "id": SID,
                      "timestamp": "2026-11-30T00:00:15.866Z", "cwd": "/repo"}))
        f.write(line({"type": "agent_start"}))
        written, n = 0, 0
        # Most turns carry modest tool output; every 16th a multi-MiB one.
        while written < target - 3 * big:
            chunk = turn(n, big if n % 16 == 15 else 8 * 1024)
            f.write(chunk)
            written += len(chunk)
            n += 1
        final = assistant([{"type": "text", "text": "All checks pass.\n\n" + RESULT}], "stop")
        f.write(line({"type": "message_end", "message": final}))
        f.write(line({"type": "turn_end", "message": final, "toolResults": []}))
        transcript = [{"role": "toolResult", "content": [{"type": "text", "text": "x" * big}]}, final]
        f.write(line({"type": "agent_end", "messages": transcript, "isTerminal": True}))


if __name__ == "__main__":
    main()
