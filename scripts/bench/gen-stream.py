#!/usr/bin/env python3
"""Write a large, realistic stream of one dialect for benchmarks, grown from a real capture.

Each dialect names, in testdata/<dialect>/bench.round, a capture of a real CLI running one tool
call then answering, and the span of its lines that is one tool round (the model's streamed turn with its deltas,
the tool run, the tool result). The output is the capture's head, that round repeated until
the stream reaches the size asked, and the capture's tail (the final answer and the terminal
event), so it stays a valid, successful stream with the CLI's exact framing. One round in
BIG_EVERY, and the tail, carry a 2 MiB tool output in place of the capture's small one, so the
stream has the multi-MiB lines real long runs have (omp and pi re-serialise the whole
transcript in their final agent_end) while about half its bytes stay small lines and deltas.

usage: gen-stream.py DIALECT SIZE_MIB OUT
"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# The fake provider's tool output in every capture, as it appears inside a JSON string.
SMALL_OUTPUT = r"README.md\nmain.rs\nnotes.txt"
BIG_OUTPUT_BYTES = 2 * 1024 * 1024
BIG_EVERY = 1024


def span_between(first, last):
    """The round: from the first line containing `first` up to, not including, the next line
    after it that contains `last`."""
    def find(lines):
        start = next(i for i, l in enumerate(lines) if first in l)
        end = next(i for i, l in enumerate(lines) if i > start and last in l)
        return start, end
    return find


def recipes():
    """Every dialect's recipe, from testdata/<dialect>/bench.round (KEY=VALUE lines): its capture,
    and how to find its tool round."""
    found = {}
    testdata = os.path.join(ROOT, "testdata")
    for dialect in sorted(os.listdir(testdata)):
        path = os.path.join(testdata, dialect, "bench.round")
        if os.path.isfile(path):
            with open(path) as f:
                fields = dict(l.rstrip("\n").split("=", 1) for l in f if l.strip() and not l.startswith("#"))
            found[dialect] = (os.path.join(dialect, fields["CAPTURE"]),
                              span_between(fields["FROM"], fields["TO"]))
    return found


def big_output():
    line = r"fn main() { println!(\"hello\"); }\n"
    return (line * (BIG_OUTPUT_BYTES // len(line) + 1))[:BIG_OUTPUT_BYTES]


def inflate(lines, blob):
    return [l.replace(SMALL_OUTPUT, blob) for l in lines]


def main():
    dialect, size_mib, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    dialects = recipes()
    if dialect not in dialects:
        sys.exit(f"gen-stream: no testdata/{dialect}/bench.round (dialects with one: {', '.join(dialects)})")
    capture, find_round = dialects[dialect]
    with open(os.path.join(ROOT, "testdata", capture)) as f:
        lines = f.read().splitlines(keepends=True)
    start, end = find_round(lines)
    head, round_lines, tail = lines[:start], lines[start:end], lines[end:]
    if not any(SMALL_OUTPUT in l for l in round_lines):
        sys.exit(f"gen-stream: the {dialect} round carries no tool output to grow")
    blob = big_output()
    small_round, big_round = "".join(round_lines), "".join(inflate(round_lines, blob))
    target = size_mib * 1024 * 1024
    with open(path, "w") as out:
        out.write("".join(head))
        written, n = 0, 0
        while written < target - 3 * BIG_OUTPUT_BYTES:
            chunk = big_round if n % BIG_EVERY == BIG_EVERY - 1 else small_round
            out.write(chunk)
            written += len(chunk)
            n += 1
        out.write("".join(inflate(tail, blob)))


if __name__ == "__main__":
    main()
