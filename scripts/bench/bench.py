#!/usr/bin/env python3
"""moot's benchmarks, side by side in one run: `make bench` (never a timed test).

Measures, with several repetitions and reporting medians and ratios:
  * each parser over a pipe vs `cat FILE | wc -l` (the pipe limit, on the kernel's default
    64 KiB pipe and on the 1 MiB pipe a parser asks for) vs jq selecting the load-bearing
    events, on generated 100 MiB and 1 GiB streams;
  * peak RSS of each parser (/usr/bin/time -v) at both sizes;
  * start-up time of every tool (`--version`, and a tiny job) vs /bin/true;
  * the whole omp adapter.sh pipeline over a stub runtime vs the stub alone (and, with
    --before DIR, the same with an earlier build's binaries);
  * staging a 5 MiB prompt with moot-render;
  * moot-broker --forward's credential proxy vs a direct connection to the same loopback
    provider: latency per request and streamed throughput.
Prints a Markdown report on stdout (BENCHMARKS.md holds a run of it).

usage: bench.py [--reps N] [--sizes 100,1024] [--data DIR] [--bin DIR]
"""
import argparse
import fcntl
import glob
import http.client
import http.server
import json
import os
import platform
import re
import shutil
import socket
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# Every tool is a folder under bins/, and every parser is a tool named moot-parse-<dialect>
# (no list to keep in sync).
TOOLS = sorted(os.listdir(os.path.join(ROOT, "bins")))
PARSERS = [tool for tool in TOOLS if tool.startswith("moot-parse-")]
# What jq selects as each dialect's load-bearing events (the work a naive shell pipeline would
# do): knowledge of each stream format, so it is written here; select() refuses a dialect
# without it rather than leave a parser out of the report.
JQ_SELECT = {
    "omp": 'select(.type=="message_end" or .type=="agent_end")',
    "pi": 'select(.type=="message_end" or .type=="agent_end")',
    "claude": 'select(.type=="assistant" or .type=="result")',
    "codex": 'select(.type=="item.completed" or .type=="turn.completed")',
    "kimi": 'select(.role=="assistant" or .role=="meta")',
    "opencode": 'select(.type=="text" or .type=="step_finish")',
}
# The stdin pipe a parser asks the kernel for (shared/src/parse.rs, PIPE_BYTES).
WIDE_PIPE_BYTES = 1024 * 1024


def dialect_of(parser):
    """The dialect a parser reads: its name after moot-parse-, as in testdata/<dialect>/."""
    return parser[len("moot-parse-"):]


def select(dialect):
    """The jq filter of `dialect`, or a loud exit naming what to add."""
    if dialect not in JQ_SELECT:
        sys.exit(f"bench: no jq filter for {dialect!r}: add it to JQ_SELECT in {__file__}")
    return JQ_SELECT[dialect]

def sh(cmd):
    """Runs a shell command, returns wall seconds; fails loudly on a nonzero status."""
    start = time.perf_counter()
    proc = subprocess.run(["sh", "-c", cmd], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):  # parsers exit 1 on a failed run; that is still a run
        sys.exit(f"bench: `{cmd}` exited {proc.returncode}: {proc.stderr.decode()[:300]}")
    return elapsed


def median_of(cmd, reps):
    return statistics.median(sh(cmd) for _ in range(reps))


def piped(path, argv, pipe_bytes=None):
    """Wall seconds of `cat FILE | ARGV`, the pipe made here so its size can be set
    (`pipe_bytes`, as F_SETPIPE_SZ): the parsers widen their stdin pipe to 1 MiB themselves,
    so `wc -l` on the default 64 KiB pipe is not the limit they are held to."""
    read_end, write_end = os.pipe()
    if pipe_bytes:
        fcntl.fcntl(read_end, fcntl.F_SETPIPE_SZ, pipe_bytes)
    start = time.perf_counter()
    cat = subprocess.Popen(["cat", path], stdout=write_end)
    consumer = subprocess.Popen(argv, stdin=read_end, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)
    os.close(read_end)
    os.close(write_end)
    _, err = consumer.communicate()
    cat.wait()
    elapsed = time.perf_counter() - start
    if consumer.returncode not in (0, 1) or cat.returncode != 0:
        sys.exit(f"bench: `cat {path} | {' '.join(argv)}` exited {consumer.returncode}: "
                 f"{err.decode()[:300]}")
    return elapsed


def median_piped(path, argv, reps, pipe_bytes=None):
    return statistics.median(piped(path, argv, pipe_bytes) for _ in range(reps))


def medians_interleaved(path, argvs, reps):
    """The median of each command's wall times, the commands run in turn in every repetition,
    so that a drift of the shared machine's speed costs each of them alike."""
    times = [[] for _ in argvs]
    for _ in range(reps):
        for argv, seen in zip(argvs, times):
            seen.append(piped(path, argv))
    return [statistics.median(seen) for seen in times]


def peak_rss_kib(cmd):
    proc = subprocess.run(["/usr/bin/time", "-v", "sh", "-c", cmd],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    match = re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr)
    return int(match.group(1)) if match else None


def generate(dialect, size_mib, data):
    path = os.path.join(data, f"{dialect}-{size_mib}m.ndjson")
    if not os.path.exists(path):
        subprocess.run([sys.executable, os.path.join(HERE, "gen-stream.py"), dialect,
                        str(size_mib), path], check=True)
    return path


def longest_line(path):
    longest = 0
    with open(path, "rb") as f:
        for line in f:
            longest = max(longest, len(line))
    return longest


def tiny_job(tool, path):
    """The smallest real job of each tool: a parser reads its CLI's real one-answer capture;
    moot-render renders a short prompt; moot-run and moot-sandbox (a whole Landlock ruleset)
    run /bin/true, so over /bin/true is their own cost. None for a tool whose smallest job needs
    a peer the bench does not start (moot-broker an upstream broker, moot-doctor a real CLI)."""
    if tool in ("moot-broker", "moot-doctor"):
        return None
    if tool in PARSERS:
        capture = os.path.join(ROOT, "testdata", dialect_of(tool), "real-plain.ndjson")
        return f"{path} < {capture}"
    if tool == "moot-otlp":
        # A real run's events (the golden of the same capture), written as OTLP/JSON.
        events = os.path.join(ROOT, "testdata", "omp", "real-plain.events")
        return f"{path} --file /dev/null < {events}"
    return {
        "moot-report": f"{path} {os.path.join(ROOT, 'testdata', 'omp', 'real-plain.json')}",
        "moot-render": f"{path} omp -- 'a short prompt'",
        "moot-run": f"{path} -- /bin/true",
        "moot-sandbox": f"{path} -- /bin/true",
    }[tool]


def report(bin_dir, scratch, jobs=10_000):
    """moot-report over one envelope and over `jobs` of them (real envelopes of every runtime,
    repeated, as NDJSON): its time, and its peak RSS, which must not grow with the jobs."""
    goldens = [path for path in sorted(glob.glob(os.path.join(ROOT, "testdata", "*", "*.json")))
               if "run" in json.load(open(path))]
    envelopes = [json.dumps(json.load(open(path))) for path in goldens]
    many = os.path.join(scratch, f"envelopes-{jobs}.ndjson")
    with open(many, "w") as out:
        for i in range(jobs):
            out.write(envelopes[i % len(envelopes)] + "\n")
    tool = os.path.join(bin_dir, "moot-report")
    rows = []
    for label, path in (("1 envelope", goldens[0]), (f"{jobs:,} envelopes", many)):
        cmd = f"{tool} < {path}"
        rows.append((label, os.path.getsize(path), median_of(cmd, 5), peak_rss_kib(cmd)))
    return rows


def startup(bin_dir, reps, dynamic_dir=None):
    """Mean per-run wall time of many runs, so the spawn cost dominates the noise; with
    dynamic_dir, `--version` of that (dynamically linked) build too, measured alongside."""
    runs = []
    baseline = per_run("/bin/true", reps)
    for tool in TOOLS:
        path = os.path.join(bin_dir, tool)
        if not os.path.exists(path):
            continue
        version = per_run(f"{path} --version", reps)
        job = tiny_job(tool, path)
        tiny = per_run(job, reps) if job else None
        dynamic = os.path.join(dynamic_dir, tool) if dynamic_dir else None
        dynamic_version = per_run(f"{dynamic} --version", reps) if dynamic else None
        runs.append((tool, version, tiny, dynamic_version))
    return baseline, runs


def per_run(cmd, reps, env=None):
    """Mean wall time of `sh -c "exec CMD"`: one shell, as a job runner would start a command.
    The environment is passed directly (not through env(1)), so no process is measured that
    the command itself does not start."""
    start = time.perf_counter()
    for _ in range(reps):
        subprocess.run(["sh", "-c", f"exec {cmd}"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, env=env)
    return (time.perf_counter() - start) / reps


def pipeline(bin_dir, reps, scratch):
    """Mean wall time of the omp adapter.sh end to end over a stub omp, and of the stub alone."""
    stubs = os.path.join(scratch, "stub")
    os.makedirs(stubs, exist_ok=True)
    stub = os.path.join(stubs, "omp")
    shutil.copy(os.path.join(ROOT, "scripts", "stub", "stub-runtime"), stub)
    shutil.copy(os.path.join(ROOT, "testdata", "omp", "real-plain.ndjson"), stub + ".stdout")
    env = dict(os.environ, PATH=f"{stubs}:{bin_dir}:/usr/bin:/bin", MOSAIC_REQUEST="review")
    adapter = os.path.join(ROOT, "scripts", "adapters", "omp", "adapter.sh")
    alone = per_run(f"{stub} -p --mode=json -- review </dev/null", reps, env)
    tools = per_run("moot-render omp -- review | moot-run | moot-parse-omp --text", reps, env)
    whole = per_run(f"sh {adapter}", reps, env)
    return alone, tools, whole


def staging(bin_dir, reps, scratch):
    """Mean wall time of moot-render staging a 5 MiB prompt (the directory removed between)."""
    prompt = os.path.join(scratch, "prompt-5m.md")
    with open(prompt, "w") as f:
        f.write(("line of a very large review prompt, with context and diffs\n" * 90000)[:5 * 2**20])
    stage = os.path.join(scratch, "stage")
    render = os.path.join(bin_dir, "moot-render")
    cmd = f"{render} omp --stage-dir {stage} --prompt-file {prompt} >/dev/null 2>&1; rm -rf {stage}"
    inline = per_run(f"{render} omp -- 'a short prompt' >/dev/null", reps)
    return per_run(cmd, reps), inline


class Provider(http.server.BaseHTTPRequestHandler):
    """A loopback provider: POST answers a small JSON body; GET /v1/stream/N streams N MiB."""
    protocol_version = "HTTP/1.1"
    CHUNK = b"data: " + b"x" * (64 * 1024 - 8) + b"\n\n"

    def setup(self):
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        body = b'{"ok":true}'
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        chunks = int(self.path.rsplit("/", 1)[1]) * 16
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(chunks * len(self.CHUNK)))
        self.end_headers()
        for _ in range(chunks):
            self.wfile.write(self.CHUNK)

    def log_message(self, *args):
        pass


def through(origin, token, requests, stream_mib):
    """Median latency of `requests` small POSTs on one kept-alive connection to `origin`, and
    the MiB/s of one GET streaming `stream_mib` MiB."""
    host, port = origin.split("//")[1].split(":")
    conn = http.client.HTTPConnection(host, int(port))
    conn.connect()
    conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    headers = {"authorization": f"Bearer {token}", "content-type": "application/json"}
    times = []
    for _ in range(requests):
        start = time.perf_counter()
        conn.request("POST", "/v1/chat/completions", body=b'{"model":"m"}', headers=headers)
        conn.getresponse().read()
        times.append(time.perf_counter() - start)
    start = time.perf_counter()
    conn.request("GET", f"/v1/stream/{stream_mib}", headers=headers)
    response = conn.getresponse()
    while response.read(1 << 20):
        pass
    mib_per_s = stream_mib / (time.perf_counter() - start)
    conn.close()
    return statistics.median(times), mib_per_s


def credential_proxy(bin_dir, scratch, requests=500, stream_mib=256):
    """The provider direct and through moot-broker --forward, measured in the same run."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Provider)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    origin = f"http://127.0.0.1:{server.server_address[1]}"
    found = os.path.join(scratch, "proxy-env")
    if os.path.exists(found):
        os.remove(found)
    broker = subprocess.Popen(
        [os.path.join(bin_dir, "moot-broker"), "--forward", origin, "--key-env", "BENCH_KEY",
         "--", "sh", "-c", f'echo "$MOOT_PROXY_URL $MOOT_PROXY_TOKEN" > {found}.tmp && '
         f'mv {found}.tmp {found} && exec sleep 3600'],
        env=dict(os.environ, BENCH_KEY="sk-bench"), stdin=subprocess.DEVNULL)
    try:
        while not os.path.exists(found):
            time.sleep(0.01)
        with open(found) as f:
            url, token = f.read().split()
        direct = through(origin, "sk-bench", requests, stream_mib)
        proxied = through(url, token, requests, stream_mib)
    finally:
        broker.terminate()
        broker.wait()
        server.shutdown()
    return direct, proxied


def release_dir():
    """Where `make build` puts the static release binaries: target/<host>/release."""
    info = subprocess.run(["rustc", "-vV"], capture_output=True, text=True, check=True).stdout
    host = re.search(r"^host: (\S+)", info, re.M).group(1)
    return os.path.join(ROOT, "target", host, "release")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--sizes", default="100,1024")
    ap.add_argument("--data", default=os.path.join(ROOT, "bench-data"))
    ap.add_argument("--bin", default=release_dir())
    ap.add_argument("--before", metavar="DIR",
                    help="also time the adapter pipeline with the release binaries of an earlier "
                         "build in DIR (make bench BEFORE=DIR), in the same run")
    ap.add_argument("--dynamic", metavar="DIR",
                    help="also time --version of a dynamically linked build in DIR "
                         "(cargo build --release puts one in target/release)")
    args = ap.parse_args()
    os.makedirs(args.data, exist_ok=True)
    sizes = [int(s) for s in args.sizes.split(",")]
    jq = shutil.which("jq")

    print("# moot benchmarks\n")
    print(f"- command: `make bench` (`scripts/bench/bench.py --reps {args.reps} --sizes {args.sizes}`)")
    print(f"- machine: {platform.machine()}, {os.cpu_count()} cores, Linux {platform.release()}, "
          f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') // 2**30} GiB")
    print(f"- date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n")

    print("## Parser throughput (median wall time of the whole pipe, `cat FILE | tool`)\n")
    print("| parser | stream | `cat \\| wc -l` | `cat \\| wc -l`, 1 MiB pipe | parser | jq "
          "| parser MiB/s | vs wc -l | vs wc -l, 1 MiB pipe | vs jq | parser `--events FILE` "
          "| `--events` costs |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    rss_rows = []
    for tool in PARSERS:
        dialect = dialect_of(tool)
        parser = os.path.join(args.bin, tool)
        for size in sizes:
            path = generate(dialect, size, args.data)
            mib = os.path.getsize(path) / 2**20
            wc = median_piped(path, ["wc", "-l"], args.reps)
            wc_wide = median_piped(path, ["wc", "-l"], args.reps, WIDE_PIPE_BYTES)
            # The typed events written as the stream is read (shared/src/event.rs), to a file,
            # side by side with the parser alone.
            events_file = os.path.join(args.data, f"{dialect}.events")
            ours, with_events = medians_interleaved(
                path, [[parser], [parser, "--events", events_file]], args.reps)
            # jq is ~50x slower; fewer repetitions on the large stream keep `make bench` short.
            jq_reps = args.reps if size <= 100 else 1
            theirs = median_of(f"{jq} -c '{select(dialect)}' {path}", jq_reps) if jq else None
            jq_cell = f"{theirs:.2f} s" if theirs else "n/a"
            vs_jq = f"{theirs / ours:.0f}x" if theirs else "n/a"
            print(f"| {tool} | {mib:.0f} MiB | {wc:.3f} s | {wc_wide:.3f} s | {ours:.3f} s | "
                  f"{jq_cell} | {mib / ours:.0f} | {wc / ours:.0%} | {wc_wide / ours:.0%} | "
                  f"{vs_jq} | {with_events:.3f} s | {with_events / ours - 1:+.0%} |")
            rss_rows.append((tool, mib, peak_rss_kib(f"{parser} < {path}"), longest_line(path),
                             peak_rss_kib(f"{parser} --events {events_file} < {path}")))

    print("\n## Peak RSS (/usr/bin/time -v)\n")
    print("| parser | stream | peak RSS | longest line | RSS - longest line | peak RSS, `--events` |")
    print("|---|---|---|---|---|---|")
    for tool, mib, rss, longest, rss_events in rss_rows:
        print(f"| {tool} | {mib:.0f} MiB | {rss / 1024:.1f} MiB | {longest / 2**20:.1f} MiB | "
              f"{(rss * 1024 - longest) / 2**20:.1f} MiB | {rss_events / 1024:.1f} MiB |")

    scratch = os.path.join(args.data, "scratch")
    os.makedirs(scratch, exist_ok=True)
    alone, tools, whole = pipeline(args.bin, 100, scratch)
    before = pipeline(args.before, 100, scratch) if args.before else None
    staged, inline = staging(args.bin, 50, scratch)
    print("\n## The adapter pipeline and staging (mean of 100 and 50 runs)\n")
    print("| what | time | over the reference |")
    print("|---|---|---|")
    print(f"| stub omp alone (replays a real capture) | {alone * 1000:.2f} ms | |")
    builds = [("", (alone, tools, whole))]
    if before:
        builds.append((f" (before: {args.before})", before))
    for label, (stub, piped_tools, adapter) in builds:
        print(f"| `moot-render omp \\| moot-run \\| moot-parse-omp --text` over the stub{label} | "
              f"{piped_tools * 1000:.2f} ms | {(piped_tools - stub) * 1000:+.2f} ms over the stub |")
        print(f"| `adapter.sh` over the stub (the same, plus its shell work){label} | "
              f"{adapter * 1000:.2f} ms | {(adapter - stub) * 1000:+.2f} ms over the stub |")
    print(f"| `moot-render omp`, short prompt | {inline * 1000:.2f} ms | |")
    print(f"| `moot-render omp`, 5 MiB prompt staged (0600 file, 0700 dir) | {staged * 1000:.2f} ms | "
          f"{(staged - inline) * 1000:+.2f} ms over the short prompt |")

    direct, proxied = credential_proxy(args.bin, scratch)
    print("\n## The credential proxy (`moot-broker --forward`, loopback provider)\n")
    print("| what | direct | through the proxy | the proxy adds |")
    print("|---|---|---|---|")
    print(f"| a small request, median of 500 on one connection | {direct[0] * 1000:.3f} ms | "
          f"{proxied[0] * 1000:.3f} ms | {(proxied[0] - direct[0]) * 1000:+.3f} ms |")
    print(f"| a 256 MiB streamed answer | {direct[1]:.0f} MiB/s | {proxied[1]:.0f} MiB/s | "
          f"{proxied[1] / direct[1]:.0%} of direct |")

    print("\n## moot-report (median of 5 runs)\n")
    print("| input | size | time | peak RSS |")
    print("|---|---|---|---|")
    for label, size, elapsed, rss in report(args.bin, scratch):
        print(f"| {label} | {size / 1024:.0f} KiB | {elapsed * 1000:.1f} ms | {rss} KiB |")

    baseline, runs = startup(args.bin, 200, args.dynamic)
    print("\n## Start-up (mean of 200 runs)\n")
    print(f"`/bin/true`: {baseline * 1000:.2f} ms\n")
    dynamic_head = (" | `--version`, dynamic build | over /bin/true", "|---|---") if args.dynamic else ("", "")
    print(f"| tool | `--version` | over /bin/true | tiny job | over /bin/true{dynamic_head[0]} |")
    print(f"|---|---|---|---|---{dynamic_head[1]}|")
    for tool, version, tiny, dynamic in runs:
        tiny_cells = ("n/a | n/a" if tiny is None else
                      f"{tiny * 1000:.2f} ms | {(tiny - baseline) * 1000:+.2f} ms")
        dynamic_cells = (f" | {dynamic * 1000:.2f} ms | {(dynamic - baseline) * 1000:+.2f} ms"
                         if dynamic is not None else "")
        print(f"| {tool} | {version * 1000:.2f} ms | {(version - baseline) * 1000:+.2f} ms | "
              f"{tiny_cells}{dynamic_cells} |")


if __name__ == "__main__":
    main()
