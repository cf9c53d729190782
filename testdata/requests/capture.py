#!/usr/bin/env python3
"""Turns the request bodies a real CLI sent into this directory's test data.

    capture.py CLI DUMP_DIR...

DUMP_DIR holds the bodies scripts/realcli/fake_provider.py wrote with --dump-dir while the CLI
ran a tool scenario (e2e.sh's `shell`). Writes CLI/first.json (the first model call: tools
offered, no tool result yet) and CLI/after-tool.json (the call carrying the tool result), with
every string longer than 400 characters cut (system prompts and tool descriptions: the shapes
stay, the bulk goes), then asks fake_provider.py to answer each for every scenario in REPLIES and
keeps its replies as CLI/<body>.<scenario>.sse: what the real CLI was answered and accepted.
"""
import glob
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
PROVIDER = os.path.join(HERE, "..", "..", "scripts", "realcli", "fake_provider.py")
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
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([sys.executable, PROVIDER, "--port", str(port)])
    try:
        time.sleep(1)
        for name, (route, body) in sorted(pick(dump_dirs).items()):
            body = trim(body)
            with open(os.path.join(out, name + ".json"), "w") as f:
                json.dump({"route": ROUTES[route], "body": body}, f, indent=1)
                f.write("\n")
            for scenario in REPLIES[name]:
                url = "http://127.0.0.1:%d/s/%s/v1/%s" % (port, scenario, ROUTES[route])
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
