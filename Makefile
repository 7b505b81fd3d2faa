# adlink: make run serves everything on localhost:8080; make test runs every test.
GO        ?= go
ADDR      ?= localhost:8080
DATA      ?= .data
FUZZTIME  ?= 10s
WASM      := web/matcher.wasm

.PHONY: run build wasm test vet bench fuzz clean

run: wasm
	$(GO) run ./backend -addr $(ADDR) -data $(DATA) -fetch-allow-private

build: wasm
	$(GO) build -o bin/adlink ./backend

# The page's matcher: a wasip1 reactor built from the same match/ package.
wasm:
	@if [ -d wasm ] && ls wasm/*.go >/dev/null 2>&1; then \
		GOOS=wasip1 GOARCH=wasm $(GO) build -buildmode=c-shared -trimpath -ldflags='-s -w' -o $(WASM) ./wasm; \
	fi

vet:
	$(GO) vet ./...

test: wasm vet
	$(GO) test -race -count=1 ./...

# Every figure is a testing.B benchmark that reports itself beside its baseline
# (b.ReportMetric), measured in the same run.
bench: wasm
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 60m ./... | grep -Ev '^(goos|goarch|cpu|pkg):'

fuzz:
	@for t in $$($(GO) test -list 'Fuzz.*' ./... | grep -E '^(Fuzz|ok)' | awk '/^Fuzz/{f=f" "$$1} /^ok/{if(f!="")print $$2":"f; f=""}'); do \
		pkg=$${t%%:*}; for f in $${t#*:}; do echo "fuzz $$pkg $$f"; $(GO) test -run=^$$ -fuzz="^$$f$$" -fuzztime=$(FUZZTIME) $$pkg || exit 1; done; \
	done

clean:
	rm -rf bin $(WASM) $(DATA)
