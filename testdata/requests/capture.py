#!/usr/bin/env python3
"""Turns the request bodies a real CLI sent into this directory's test data.

    capture.py CLI DUMP_DIR...

DUMP_DIR holds the bodies the fake model (`moot-doctor --serve --dump-dir`) wrote while the CLI
ran a tool scenario (e2e.sh's `shell`). Writes CLI/first.json (the first model call: tools
offered, no tool result yet) and CLI/after-tool.json (the call carrying the tool result), with
every string longer than 400 characters cut (system prompts and tool descriptions: the shapes
stay, the bulk goes), then asks the same fake model to answer each for every scenario in REPLIES
and keeps its replies as CLI/<body>.<scenario>.sse: what the real CLI was answered and accepted.
MOOT_BIN names the directory of the built tools (default: the workspace's target/debug).
"""
import glob
import json
import os
import subprocess
import sys
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
MOOT_BIN = os.environ.get("MOOT_BIN") or os.path.join(HERE, "..", "..", "target", "debug")
LIMIT = 400
REPLIES = {"first": ["plain", "tool", "length", "thinking", "empty"], "after-tool": ["tool"]}
ROUTES = {"chat_completions": "chat/completions", "messages": "messages", "responses": "responses"}


def trim(value):
    if isinstance(value, str) and len(value) > LIMIT:
        return value[:LIMIT // 2] + "[... %d characters cut]" % (len(value) - LIMIT // 2)
    if isinstance(value, list):
        return [trim(v) for v in value]
    if isinstance(value, dict):
        return {k: trim(v) for k, v in value.items()}
    return value


def tool_results(body):
    text = json.dumps(body.get("messages") or body.get("input") or [])
    return any(mark in text for mark in ('"role": "tool"', '"tool_result"', '_output"'))


def pick(dump_dirs):
    found = {}
    for path in sorted(p for d in dump_dirs for p in glob.glob(os.path.join(d, "*.json"))):
        route = os.path.basename(path).split("-", 1)[1][:-len(".json")]
        body = json.load(open(path))
        if route not in ROUTES or not body.get("tools"):
            continue
        name = "after-tool" if tool_results(body) else "first"
        found.setdefault(name, (route, body))
    return found


def main():
    cli, dump_dirs = sys.argv[1], sys.argv[2:]
    out = os.path.join(HERE, cli)
    os.makedirs(out, exist_ok=True)
    server = subprocess.Popen([os.path.join(MOOT_BIN, "moot-doctor"), "--serve"],
                              stdout=subprocess.PIPE, text=True)
    try:
        origin = server.stdout.readline().strip()  # printed once the server listens
        if not origin.startswith("http://127.0.0.1:"):
            sys.exit("capture.py: moot-doctor --serve did not start (is MOOT_BIN right?)")
        for name, (route, body) in sorted(pick(dump_dirs).items()):
            body = trim(body)
            with open(os.path.join(out, name + ".json"), "w") as f:
                json.dump({"route": ROUTES[route], "body": body}, f, indent=1)
                f.write("\n")
            for scenario in REPLIES[name]:
                url = "%s/s/%s/v1/%s" % (origin, scenario, ROUTES[route])
                request = urllib.request.Request(url, json.dumps(body).encode(),
                                                 {"content-type": "application/json"})
                with urllib.request.urlopen(request) as reply:
                    data = reply.read()
                with open(os.path.join(out, "%s.%s.sse" % (name, scenario)), "wb") as f:
                    f.write(data)
    finally:
        server.kill()


if __name__ == "__main__":
    main()
