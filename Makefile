# FreeLane. `make run` sets up and starts the app, `make test` runs every test.
SHELL   := /bin/bash
export PATH := /usr/local/go/bin:$(HOME)/go/bin:$(PATH)

BIN     := build/bin/freelane
VERSION := $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)
CONFIG  ?= backend/config/example.yaml
ARGS    ?=

.PHONY: all deps deps-test frontend build run serve test test-go test-frontend test-browser vet bench bench-go bench-load clean

all: build

deps:
	@bash .ci/deps

deps-test:
	@bash .ci/deps test

# The dashboard, built into frontend/dist, which the binary embeds.
frontend: deps
	cd frontend && npm run build

build: frontend
	go build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./app
	go build -o build/bin/fakeupstream ./backend/cmd/fakeupstream

# run starts FreeLane with the example config (or CONFIG=your.yaml).
run: build
	$(BIN) serve --config $(CONFIG) $(ARGS)

serve: run

vet:
	@unformatted=$$(gofmt -l app backend frontend/embed.go); \
	  if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	go vet ./...

test: deps-test vet test-go test-frontend test-browser

test-go:
	go test -race -count=1 -timeout 15m ./...

test-frontend:
	cd frontend && npm run check && npm test

# test-browser drives the real binary's dashboard in Chromium; screenshots
# of every screen land in build/screenshots/.
test-browser: build
	cd frontend && node e2e/run.mjs

bench: bench-go bench-load

bench-go:
	go test -run '^$$' -bench . -benchmem ./backend/...

# bench-load sends 32 concurrent clients through FreeLane, through a bare
# httputil.ReverseProxy and straight to the fake upstream, and prints the
# ratios.
bench-load:
	go run ./backend/cmd/loadbench -c 32 -d 5s

clean:
	rm -rf build/bin build/screenshots
