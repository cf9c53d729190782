# moot: build, test, install, demo, bench, man.
PREFIX ?= /usr/local
CARGO ?= cargo
TOOLS := moot-parse-omp
TOOLS += moot-parse-claude moot-parse-codex
TOOLS += moot-render
TOOLS += moot-run moot-sandbox
TOOLS += moot-parse-kimi moot-parse-pi
RELEASE := target/release

.PHONY: all build test lint demo bench install man clean

all: build

build:
	$(CARGO) build --release --locked

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --locked --all-targets -- -D warnings

test: lint
	$(CARGO) test --locked --workspace

demo: build
	sh scripts/demo.sh

# Benchmarks are never timed tests: this prints medians and ratios measured in one run.
bench: build
	python3 scripts/bench/bench.py

install: build
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/man/man7
	for t in $(TOOLS); do install -m 0755 $(RELEASE)/$$t $(DESTDIR)$(PREFIX)/bin/; done
	install -m 0644 man/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	-install -m 0644 man/*.7 $(DESTDIR)$(PREFIX)/share/man/man7/

man:
	for p in man/*.[17]; do man -l "$$p" >/dev/null || exit 1; done

clean:
	$(CARGO) clean

# Every fuzz target for 60 s, seeded from testdata/; fails on a crash, a hang or a memory
# blow-up. Needs only the stable toolchain and crates.io (installs cargo-fuzz when absent).
# See fuzz/README.md for the long runs.
.PHONY: fuzz-short
fuzz-short:
	sh fuzz/run.sh 60
