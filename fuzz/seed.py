#!/usr/bin/env python3
"""Seeds fuzz/corpus/<target>/ from testdata/, by the target's name alone.

- parse_<dialect>: every testdata/<dialect>/*.ndjson and testdata/adversarial/*.ndjson (raw
  bytes are raw bytes whatever the dialect). A new parser target needs nothing here.
- gitmoot_result: the answers (run.answer, run.error.last_text) of every testdata/*/*.json.
- ndjson_lines: every testdata/*/*.ndjson behind the two configuration bytes check_lines reads
  (line ceiling, read size), once with a small ceiling and once in its long-line mode, and two
  long lines past the reader's chunk.
- render: command lines (NUL-separated words) for every runtime with each kind of prompt and
  the flags the fixture of check_render gives meaning to (its files and directories).
- any other target starts from an empty corpus (libFuzzer builds one).

Seeds are named by content hash, so re-seeding is idempotent and never touches what the fuzzer
added. Usage: fuzz/seed.py TARGET  (prints the corpus directory)
"""

import hashlib
import json
import re
import pathlib
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
TESTDATA = ROOT / "testdata"


def streams(dialect="*"):
    yield from sorted(TESTDATA.glob(f"{dialect}/*.ndjson"))
    if dialect != "*":
        yield from sorted(TESTDATA.glob("adversarial/*.ndjson"))


def answers():
    for path in sorted(TESTDATA.glob("*/*.json")):
        try:
            run = json.loads(path.read_bytes())["run"]
        except (ValueError, KeyError, TypeError):
            continue
        for text in (run.get("answer"), (run.get("error") or {}).get("last_text")):
            if isinstance(text, str) and text:
                yield text.encode()


# check_render's fixture directory (fuzz/src/lib.rs), so seeds can name absolute paths in it.
FIXTURE = pathlib.Path(tempfile.gettempdir()) / "moot-fuzz-render"
# Every runtime, as the records in shared/src/runtime/*/meta.rs name them (no list to keep).
RUNTIMES = sorted(
    name
    for meta in (ROOT / "shared" / "src" / "runtime").glob("*/meta.rs")
    for name in re.findall(r'^\s*name: "([a-z][a-z-]*)",$', meta.read_text(), re.MULTILINE)
)
PROMPTS = [
    ["--", "Fix the failing test"],
    ["--", "-rf looks like a flag"],
    ["--", "line one\nline 'two'\t\x01"],
    ["--prompt-file", "small.md"],
    ["--prompt-file", "big.md"],
    ["--prompt-file", "latin1.md"],
    ["--prompt-file", "empty.md"],
    ["--prompt-file", "nul.md"],
    ["-"],
    ["--health"],
]
FLAGS = [
    [],
    ["--policy", "workspace-write", "--action", "implement", "--add-dir", "src"],
    ["--policy", "read-only", "--readonly-seat", "--read-dir", "docs"],
    ["--model", "sonnet", "--effort", "high", "--deadline", "12.5"],
    ["--session", "last", "--system-prompt-file", "system.md", "--format", "json"],
    ["--session", "fresh:abc", "--extension", "ext.ts", "--stream", "--format", "sh"],
    ["--plan", "--plan-into", "opus", "--policy", "workspace-write"],
    ["--stage-dir", f"{FIXTURE}/stage", "--policy", "workspace-write", "--add-dir", "."],
    ["--stage-dir", f"{FIXTURE}/repo/src", "--format", "json"],
    ["--stage-dir", f"{FIXTURE}/tmp/new", "--policy", "danger-full-access"],
    ["MOOT_OMP_DEFAULT_MODEL=gpt-5", "MOOT_CLAUDE_DEFAULT_EFFORT=max"],
]


def command_lines():
    for runtime in RUNTIMES:
        for prompt in PROMPTS:
            for flags in FLAGS:
                env = [f for f in flags if f.startswith("MOOT_")]
                rest = [f for f in flags if not f.startswith("MOOT_")]
                yield env + [runtime] + rest + prompt


def seeds(target):
    if target.startswith("parse_"):
        for path in streams(target[len("parse_"):]):
            yield path.read_bytes()
    elif target == "gitmoot_result":
        yield from answers()
    elif target == "ndjson_lines":
        for path in streams():
            data = path.read_bytes()
            yield b"\x10\x00" + data
            yield b"\xff\x07" + data
        # Lines past the reader's chunk, at the ceiling and one byte over it.
        yield b"\xff\x00" + b"x" * 64
        yield b"\xff\x01" + b"\xef\xbb\xbfab\r"
    elif target == "render":
        for words in command_lines():
            yield "\0".join(words).encode()


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: fuzz/seed.py TARGET")
    target = sys.argv[1]
    corpus = ROOT / "fuzz" / "corpus" / target
    corpus.mkdir(parents=True, exist_ok=True)
    for data in seeds(target):
        (corpus / hashlib.sha1(data).hexdigest()).write_bytes(data)
    print(corpus)


if __name__ == "__main__":
    main()
