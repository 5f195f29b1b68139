# FreeLane. `make run` sets up and starts the app, `make test` runs every test.
SHELL   := /bin/bash
export PATH := /usr/local/go/bin:$(HOME)/go/bin:$(PATH)
# The go.mod toolchain line names the patched Go release FreeLane is built
# with; auto lets the go command fetch it from the module proxy when the
# installed Go is older (some machines pin GOTOOLCHAIN=local).
export GOTOOLCHAIN := auto

BIN     := build/bin/freelane
# The release number lives in build/VERSION; the packages carry it too.
# COMMIT is the git commit built (with -dirty for uncommitted changes) and
# DATE when, in UTC whatever the machine's zone (SOURCE_DATE_EPOCH, when
# set, fixes it for a reproducible build).
VERSION := $(shell cat build/VERSION)
COMMIT  := $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)$(shell git diff --quiet HEAD 2>/dev/null || echo -dirty)
DATE    := $(shell date -u -d "@$${SOURCE_DATE_EPOCH:-$$(date +%s)}" +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.date=$(DATE)
# The desktop app (Wails window and tray) on Debian 12's WebKitGTK 4.1.
TAGS    := desktop,production,webkit2_41
# The desktop smoke test's screen: Xvfb plus a private DBus session bus.
HEADLESS_DESKTOP := dbus-run-session -- xvfb-run -a -s "-screen 0 1280x800x24"
# CONFIG names a config file for run and serve; by default there is none,
# and FreeLane starts from what the data directory holds, the keys in the
# environment and the local servers it finds.
CONFIG  ?=
ARGS    ?=

.PHONY: all deps deps-test deps-package frontend build build-windows package test-package vet-cross run serve test test-go test-agents test-go-tz test-fuzz test-frontend test-browser test-desktop vet vulncheck wiretypes bench bench-go bench-load bench-scale clean

all: build

deps:
	@bash .ci/deps

deps-test:
	@bash .ci/deps test

deps-package:
	@bash .ci/deps package

# The dashboard, built into frontend/dist, which the binary embeds.
frontend: deps
	cd frontend && npm run build

# build makes build/bin/freelane: the desktop app, which serves headless
# where there is no display (and as `freelane serve`). It is a position-
# independent executable with read-only relocations, as Debian's
# hardening asks of programs that parse untrusted input.
build: frontend
	CGO_LDFLAGS="-Wl,-z,relro,-z,now" go build -tags $(TAGS) -trimpath -buildmode=pie -ldflags '$(LDFLAGS)' -o $(BIN) ./app
	go build -o build/bin/fakeupstream ./backend/cmd/fakeupstream
	go build -o build/bin/fakelocal ./backend/cmd/fakelocal

# build-windows cross-compiles build/bin/freelane.exe (the desktop app)
# and build/bin/freelane-cli.exe (the same for a terminal) with MinGW-w64.
build-windows: frontend deps-package
	bash build/package/windows.sh '$(LDFLAGS)'

# package makes build/dist/freelane_VERSION_amd64.deb, the Linux tarball
# and the Windows zip (see build/package/package.sh).
package: build build-windows
	@start=$$(date +%s); bash build/package/package.sh; echo "package: $$(( $$(date +%s) - start )) s after the builds"

# test-package runs lintian on the .deb, installs and starts each package
# (the .deb, the tarball's install.sh, the Windows build under Wine) and
# checks that each serves and stops cleanly.
test-package: package
	bash build/package/test.sh

# run starts FreeLane (with CONFIG=your.yaml, from that file): the window
# and tray when there is a display, the headless server otherwise.
run: build
	$(BIN) $(if $(CONFIG),--config $(CONFIG)) $(ARGS)

# serve always runs headless.
serve: build
	$(BIN) serve $(if $(CONFIG),--config $(CONFIG)) $(ARGS)

vet:
	@unformatted=$$(gofmt -l app backend frontend/embed.go); \
	  if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	go vet ./...
	go vet -tags $(TAGS) ./app
	go vet -tags smoke ./app
	staticcheck ./backend/...
	staticcheck -tags $(TAGS) ./app

# vet-cross vets the code as it builds for Windows (with MinGW-w64, the
# desktop app included) and for macOS: there, every package whose code and
# tests build without cgo, since the SQLite driver and the desktop shell
# need Apple's SDK, which no Debian machine has.
vet-cross: deps-package
	CGO_ENABLED=1 CC=x86_64-w64-mingw32-gcc GOOS=windows GOARCH=amd64 go vet -tags desktop,production ./app ./backend/...
	@pkgs=$$(for p in $$(go list ./...); do GOOS=darwin GOARCH=arm64 go list -deps -test $$p | grep -q mattn/go-sqlite3 || echo $$p; done); \
	  echo "vet for darwin/arm64: $$(echo $$pkgs | wc -w) of $$(go list ./... | wc -l) packages (the rest need cgo with Apple's SDK)"; \
	  GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 go vet $$pkgs

# vulncheck fails on any known vulnerability reachable from FreeLane's code
# (govulncheck); see .ci/vulncheck for where its database comes from.
vulncheck:
	@bash .ci/vulncheck

# wiretypes rewrites frontend/src/lib/wire.gen.ts, the dashboard's types of
# the admin API and websocket, from the Go types; test-go fails while the
# committed file differs.
wiretypes:
	go test ./backend/wiretypes -run TestWireTypes -update

test: deps-test vet vet-cross vulncheck test-go test-agents test-go-tz test-fuzz test-frontend test-browser test-desktop test-package

test-go:
	go test -race -count=1 -timeout 15m ./...

# test-agents runs the real coding-agent CLIs installed by deps-test
# (backend/gateway/testdata/agents*) against FreeLane in front of fake
# vendors. The gateway's test binary runs in a fresh network namespace
# whose only interface is loopback, so the CLIs reach FreeLane and nothing
# else; outside one the TestAgent tests skip. Without root the namespace
# is made inside a user namespace that maps the user to root.
AGENTS_RUN ?= ^TestAgent
test-agents: deps-test
	go test -c -count=1 -o build/agents.test ./backend/gateway
	cd backend/gateway && \
	  if [ "$$(id -u)" -eq 0 ]; then ns="unshare --net"; else ns="unshare --user --map-root-user --net"; fi; \
	  $$ns sh -c 'ip link set lo up && exec ../../build/agents.test -test.run "$$1" -test.v -test.count=1 -test.timeout 20m' sh '$(AGENTS_RUN)'

# test-fuzz runs each fuzz target for FUZZTIME (10 s each)
# on one worker: the admin API's inputs, the config file, and every
# dialect's request parser and stream decoder, which read what clients and
# upstreams send. The targets' corpora are committed under testdata/fuzz
# and also run as plain tests in test-go.
FUZZ     := backend/control:FuzzProviderInput backend/control:FuzzBudgets backend/control:FuzzLimits backend/config:FuzzParse \
	backend/protocol/openai:FuzzConversation backend/protocol/openai:FuzzStreamDecode \
	backend/protocol/anthropic:FuzzParseRequest backend/protocol/anthropic:FuzzStreamDecoder \
	backend/protocol/gemini:FuzzParseRequest backend/protocol/gemini:FuzzStreamDecoder backend/protocol/responses:FuzzParseRequest backend/protocol/responses:FuzzStreamEncoder \
	backend/redact:FuzzRedact backend/jsonscan:FuzzValid backend/jsonscan:FuzzPickValid backend/protocol/openai:FuzzScanChunkAgrees backend/protocol/openai:FuzzScanAnswerAgrees backend/protocol/anthropic:FuzzClassifyDeltaAgrees backend/protocol/anthropic:FuzzTextDeltaAgrees backend/protocol/responses:FuzzScanDeltaAgrees backend/protocol/gemini:FuzzScanChunkAgrees
#
# Go before 1.27 can fail a target with a bare "context deadline exceeded"
# when -fuzztime runs out while a worker is mid-input, a race in its fuzzing
# coordinator that finds nothing. A real failure always writes its input
# under testdata/fuzz/NAME, so a run that fails without a new file there is
# run again, up to three runs in all (two in a row have been seen on a busy
# machine); a third such failure, or any new file, fails the target.
FUZZTIME ?= 10s
test-fuzz:
	@for t in $(FUZZ); do \
	  pkg=$${t%%:*}; name=$${t#*:}; corpus=$$pkg/testdata/fuzz/$$name; \
	  echo "fuzz: $$name in ./$$pkg for $(FUZZTIME)"; \
	  before=$$(ls $$corpus 2>/dev/null | wc -l); \
	  for run in 1 2 3; do \
	    go test -run '^$$' -fuzz "^$$name$$" -fuzztime $(FUZZTIME) -parallel 1 "./$$pkg" && break; \
	    [ "$$(ls $$corpus 2>/dev/null | wc -l)" = "$$before" ] || exit 1; \
	    [ $$run -lt 3 ] || exit 1; \
	    echo "fuzz: $$name stopped without a failing input; running it again"; \
	  done; \
	done

# test-go-tz runs the backend tests again in a zone with daylight saving
# time and a negative offset, where a local calendar day (budgets, the
# ledger, credits) is not the UTC one.
test-go-tz:
	TZ=America/Los_Angeles go test -count=1 -timeout 15m ./backend/...

test-frontend:
	cd frontend && npm run check && npm test

# test-browser drives the real binary's dashboard in Chromium; screenshots
# of every screen land in build/screenshots/.
test-browser: build
	cd frontend && node e2e/run.mjs

# test-desktop starts the built desktop binary in a real window under Xvfb,
# drives its tray over DBus and checks what it logged and stored; the
# screenshot lands in build/screenshots/desktop.png.
test-desktop: build
	$(HEADLESS_DESKTOP) go test -tags smoke -count=1 -timeout 5m -v -run 'TestDesktop' ./app

bench: bench-go bench-load

bench-go:
	go test -run '^$$' -bench . -benchmem ./backend/...

# bench-load builds the fake upstream, a bare httputil.ReverseProxy and
# headless FreeLane, starts each as a process of its own and measures both
# hops in the same run, interleaved: throughput and latency at 32 clients,
# CPU time per request at 8 (from /proc, the load generator's own not
# counted), added latency at one client, idle and loaded memory, for
# streams and not, a cross-dialect route and a response-cache hit. It
# takes about two minutes; LOADBENCH_ARGS adds flags (-json FILE, -rounds,
# -d; go run ./backend/cmd/loadbench -h lists them).
LOADBENCH_ARGS ?=
bench-load:
	go run ./backend/cmd/loadbench -c 32 -cpu-c 8 -rounds 3 $(LOADBENCH_ARGS)

# bench-scale holds STREAMS streams of STREAM_DUR (a chunk a second) open
# at once through the bare proxy and then through FreeLane, and SLOW
# non-stream requests whose upstream answers after SLOW_LATENCY, and
# reports errors, memory per open request and whether FreeLane's /healthz
# and /metrics still answer. The upstream serves HTTPS and HTTP/2, as
# vendors do (SCALE_TLS= for plain HTTP/1.1, where each open request
# holds a descriptor on both sides of a proxy); the harness raises its
# open-file limit and says so when the hard limit is too low for STREAMS.
STREAMS      ?= 10000
STREAM_DUR   ?= 60s
SLOW         ?= 1000
SLOW_LATENCY ?= 2s
SCALE_TLS    ?= -tls
bench-scale:
	go run ./backend/cmd/loadbench -streams $(STREAMS) -stream-dur $(STREAM_DUR) -slow $(SLOW) -slow-latency $(SLOW_LATENCY) -timeout 10m $(SCALE_TLS) $(LOADBENCH_ARGS)

clean:
	rm -rf build/bin build/screenshots
