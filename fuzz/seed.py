#!/usr/bin/env python3
"""Seeds fuzz/corpus/<target>/ from testdata/, by the target's name alone.

- parse_<dialect>: every testdata/<dialect>/*.ndjson and testdata/adversarial/*.ndjson (raw
  bytes are raw bytes whatever the dialect). A new parser target needs nothing here.
- gitmoot_result: the answers (run.answer, run.error.last_text) of every testdata/*/*.json.
- ndjson_lines: every testdata/*/*.ndjson behind the two configuration bytes check_lines reads
  (line ceiling, read size), once with a small ceiling and once in its long-line mode, and two
  long lines past the reader's chunk.
- any other target starts from an empty corpus (libFuzzer builds one).

Seeds are named by content hash, so re-seeding is idempotent and never touches what the fuzzer
added. Usage: fuzz/seed.py TARGET  (prints the corpus directory)
"""

import hashlib
import json
import pathlib
import sys

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
