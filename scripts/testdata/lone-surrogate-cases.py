#!/usr/bin/env python3
# usage: scripts/testdata/lone-surrogate-cases.py testdata
#   (then MOOT_BLESS=1 cargo test -p moot-parse-<dialect> --test golden for each dialect, and
#   review: every case is a successful run, run.ok true, its answer holding U+FFFD)
# Writes one golden case per parser whose answer holds a lone UTF-16 surrogate (half of an
# emoji), written the way the real CLI writes it: each is a real successful capture with only
# its answer text changed, every row that carries the answer re-serialised by the CLI's own
# serialiser. omp, pi, claude and Kimi Code are JavaScript: node's JSON.stringify writes the
# half as the escape "\ud83d". The legacy kimi-cli is Python: json.dumps (ensure_ascii) writes
# the same escape. codex is Rust and cannot write one; its case is built with json.dumps too,
# so every parser is held to the same reading. Rows that do not carry the answer stay byte for
# byte as captured, and a row is only rewritten when its serialiser reproduces the captured
# bytes exactly, so the answer text is the one thing that changes.
import json, os, shutil, subprocess, sys

root = sys.argv[1]
PHRASE = "everything is "
# A thumbs-up emoji (U+1F44D, "\ud83d\udc4d" in UTF-16) cut after its first half, then a space.
BROKEN = PHRASE + "\ud83d "

# The node side of the rewrite: argv[1] the capture, argv[2] PHRASE, stdout the case. Same rules
# as python's; the half is made in JavaScript (a lone surrogate cannot pass through argv).
NODE = r"""
const fs = require("fs");
const [input, phrase] = process.argv.slice(1);
const broken = phrase + "\ud83d ";
const walk = (v) => typeof v === "string" ? v.split(phrase).join(broken)
  : Array.isArray(v) ? v.map(walk)
  : v && typeof v === "object" ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]))
  : v;
const text = fs.readFileSync(input, "utf8");
const out = text.split("\n").map((line) => {
  if (!line.includes(phrase)) return line;
  const row = JSON.parse(line);
  if (JSON.stringify(row) !== line) throw new Error("JSON.stringify does not reproduce: " + line);
  return JSON.stringify(walk(row));
});
process.stdout.write(out.join("\n"));
"""


def with_node(capture):
    return subprocess.run(["node", "-e", NODE, capture, PHRASE],
                          check=True, stdout=subprocess.PIPE).stdout


def with_python(capture):
    def walk(v):
        if isinstance(v, str):
            return v.replace(PHRASE, BROKEN)
        if isinstance(v, list):
            return [walk(x) for x in v]
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        return v

    def dumps(v):
        return json.dumps(v, separators=(",", ":"))  # ensure_ascii, as kimi-cli

    out = []
    for line in open(capture, encoding="utf-8").read().split("\n"):
        if PHRASE in line:
            row = json.loads(line)
            assert dumps(row) == line, "json.dumps does not reproduce: " + line
            line = dumps(walk(row))
        out.append(line)
    return "\n".join(out).encode()


# (dialect, case, the real successful capture it is made from, serialiser)
CASES = [
    ("omp", "lone-surrogate-in-answer", "real-plain", with_node),
    ("pi", "lone-surrogate-in-answer", "real-plain", with_node),
    ("claude", "lone-surrogate-in-answer", "real-plain", with_node),
    ("kimi", "code-lone-surrogate-in-answer", "real-code-plain-with-exit", with_node),
    ("kimi", "legacy-lone-surrogate-in-answer", "real-plain-with-exit", with_python),
    ("codex", "lone-surrogate-in-answer", "real-plain", with_python),
]

for dialect, case, capture, serialise in CASES:
    folder = os.path.join(root, dialect)
    data = serialise(os.path.join(folder, capture + ".ndjson"))
    assert b"\\ud83d" in data, f"{dialect}/{capture} carries no {PHRASE!r}"
    with open(os.path.join(folder, case + ".ndjson"), "wb") as f:
        f.write(data)
    # The capture's flags (its exit status, its stderr file) go with it.
    args = os.path.join(folder, capture + ".args")
    if os.path.exists(args):
        shutil.copyfile(args, os.path.join(folder, case + ".args"))
print(f"{len(CASES)} cases under {root}")
