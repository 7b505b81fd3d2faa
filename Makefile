# adlink: make run serves everything on localhost:8080; make test runs every test.
GO        ?= go
ADDR      ?= localhost:8080
DATA      ?= .data
FUZZTIME  ?= 10s
# Fuzz targets at once in make fuzz (each gets its share of the cores).
FUZZJOBS  ?= 1
# make bench ends with the fuzz report over this time per target, one at a
# time; empty skips it.
BENCH_FUZZTIME ?= $(FUZZTIME)
# The module goes where web/matcher embeds it into the server binary.
WASM      := web/matcher/dist/matcher.wasm
# What adlink -version prints beside the commit and the Go version.
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
# The commit -version prints, for builds where Go records none
# (GOFLAGS=-buildvcs=false, git worktrees).
COMMIT    ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)

.PHONY: run cluster build wasm test vet lint bench fuzz clean

# The demo partner (api_key=demo, site_id=demo) exists only with -demo.
run: wasm
	$(GO) run ./backend -addr $(ADDR) -data $(DATA) -demo -fetch-allow-private

# Postgres, Redis and three replicas behind haproxy on $(ADDR), from one
# temporary directory that Ctrl-C removes (scripts/cluster; needs Debian's
# postgresql, redis-server and haproxy).
cluster: build
	ADDR=$(ADDR) ADLINK_BIN=bin/adlink ./scripts/cluster

# One self-contained binary: the module, the widget and the demo pages are
# embedded, so it runs from any directory.
build: wasm
	$(GO) build -ldflags "-X main.version=$(VERSION) -X main.commit=$(COMMIT)" -o bin/adlink ./backend

# The page's matcher: a wasip1 reactor built from the same match/ package,
# as the tests build it (wasm/module: its data segments merged), and
# $(WASM).zst by the zstd CLI when it is installed, which the server serves
# in place of its own zstd. The server embeds both (web/matcher); without
# them it serves no matcher.wasm and says so.
wasm:
	@if [ -d wasm ] && ls wasm/*.go >/dev/null 2>&1; then \
		$(GO) run ./wasm/module/build -o $(WASM); \
	fi

vet:
	$(GO) vet ./...

# gofmt, staticcheck (pinned) and go vet for the host and for GOOS=wasip1
# on the module's packages, as CI runs them.
lint:
	@GO=$(GO) ./.ci/lint

# The longest packages are named first, longest first: go test starts
# packages in the order given, and on two cores the run ends when its
# last package does, which should then be a short one. Three packages
# run at once (-p, GOMAXPROCS by default): on two cores the test binaries
# leave about a third of the CPU idle while they wait on browsers,
# Postgres and Redis, and a third package fills it.
TEST_PACKAGES ?= 3
LONG_TESTS = ./backend/app/ ./web/ ./backend/ ./wasm/module/ ./backend/store/pg/ \
	./backend/siteshards/ ./backend/shards/ ./backend/retention/

test: wasm vet
	$(GO) test -race -p $(TEST_PACKAGES) -count=1 -timeout 30m $(LONG_TESTS) ./...

# Every figure is a testing.B benchmark that reports itself beside its baseline
# (b.ReportMetric), measured in the same run.
bench: wasm
	$(GO) test -p 1 -run '^$$' -bench . -benchtime 1x -timeout 60m ./... | grep -Ev '^(goos|goarch|cpu|pkg):'
	@if [ -n "$(BENCH_FUZZTIME)" ]; then FUZZTIME=$(BENCH_FUZZTIME) FUZZJOBS=1 GO=$(GO) ./.ci/fuzz 2>/dev/null; fi

# Every Fuzz target of every package for FUZZTIME over its kept corpus; it
# prints the executions and crashers of each target (.ci/fuzz).
fuzz:
	@FUZZTIME=$(FUZZTIME) FUZZJOBS=$(FUZZJOBS) GO=$(GO) ./.ci/fuzz

clean:
	rm -rf bin $(WASM) $(WASM).zst $(DATA)
