# Switchboard: `make run` starts the appliance, `make test` runs the whole suite.
# Both install what they need (Debian packages when run as root, Go modules).

GO       ?= go
BIN      := bin/switchboard
APT_PKGS := sip-tester baresip espeak-ng sox lame postgresql kamailio libopus-dev pkg-config gcc pocketsphinx pocketsphinx-en-us
TOOLS    := sipp baresip espeak-ng sox lame pg_ctlcluster kamailio pkg-config gcc pocketsphinx_continuous
DATA     := /usr/share/pocketsphinx/model/en-us/en-us

.PHONY: all build run test deps deps-go deps-browser deps-sdk bench bench-calls bench-cps vet fmt clean fuzz

# FUZZ lists every fuzz target as package:Target (test/suite checks that none
# is missing); `make fuzz` explores each for FUZZTIME. `make test` explores
# nothing: go test replays each target's seeds and committed corpus
# (testdata/fuzz), so the suite is deterministic.
FUZZ := ./agent:FuzzCanonicalLanguage ./amd:FuzzFrame ./api/httpx:FuzzDecode \
	./auth:FuzzParseACL ./cmd/switchboard:FuzzParseDialTarget ./jsonerr:FuzzTranslate \
	./dtmf:FuzzParseINFO ./dtmf:FuzzParsePayload ./dtmf:FuzzReceiver ./dtmf:FuzzSources \
	./media:FuzzCodedJitterPush ./media:FuzzG722Decode ./media:FuzzJitterPush \
	./media:FuzzOpusPacketSamples ./media:FuzzPacketJitterBuffer ./media:FuzzSessionPackets \
	./media/wav:FuzzDecode ./numbers:FuzzNormalizeE164 ./numbers:FuzzParsePrefix \
	./realtime:FuzzDecode ./records:FuzzQuery ./records:FuzzTimestamp ./rtc:FuzzChooseCodec \
	./sip:FuzzNormalizeNumber ./sip:FuzzParseCredentials ./sip:FuzzParseCrypto \
	./sip:FuzzSDPNegotiate ./sip:FuzzServerMessage \
	./speech:FuzzDetectContainer ./speech:FuzzParseTags ./stream:FuzzTwilioDecode ./test/pcap:FuzzParse \
	./usage:FuzzParseFilter ./usage:FuzzRequest \
	./webhook:FuzzParseExpiresIn ./webhook:FuzzRetryAfter
FUZZTIME ?= 3m

all: build

# deps installs the system packages the tests use as real peers, fetches Go
# modules and the pinned npm packages (test/browser, test/sdk).
deps: deps-go deps-browser deps-sdk
	@missing=""; for t in $(TOOLS); do command -v $$t >/dev/null 2>&1 || missing="$$missing $$t"; done; \
	pkg-config --exists opus 2>/dev/null || missing="$$missing libopus-dev"; \
	for f in $(DATA); do [ -e $$f ] || missing="$$missing $$f"; done; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ]; then \
			echo "installing:$(APT_PKGS)"; \
			(apt-get update -qq || true) && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(APT_PKGS) >/dev/null; \
			systemctl disable --now kamailio >/dev/null 2>&1 || true; \
		else \
			echo "missing tools:$$missing; run 'sudo apt-get install $(APT_PKGS)' or 'make deps' as root" >&2; exit 1; \
		fi; \
	fi

# deps-browser installs Debian's chromium (and node, if there is none) and the pinned
# puppeteer-core that drives it in the browser tests (test/browser; no browser download).
deps-browser:
	@if [ ! -x /usr/bin/chromium ] || ! command -v npm >/dev/null 2>&1; then \
		pkgs="chromium"; command -v npm >/dev/null 2>&1 || pkgs="$$pkgs nodejs npm"; \
		if [ "$$(id -u)" = 0 ]; then \
			echo "installing: $$pkgs"; \
			(apt-get update -qq || true) && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$pkgs >/dev/null; \
		else \
			echo "missing: $$pkgs; run 'sudo apt-get install $$pkgs' or 'make deps' as root" >&2; exit 1; \
		fi; \
	fi
	@[ test/browser/node_modules/.package-lock.json -nt test/browser/package-lock.json ] || \
		(cd test/browser && npm ci --ignore-scripts --no-audit --no-fund --silent)

# deps-sdk installs the pinned official npm clients (openai,
# @openai/agents-realtime) that test/sdk_test.go drives; node and npm come
# with deps-browser.
deps-sdk: deps-browser
	@[ test/sdk/node_modules/.package-lock.json -nt test/sdk/package-lock.json ] || \
		(cd test/sdk && npm ci --no-audit --no-fund --silent)

deps-go:
	@command -v $(GO) >/dev/null || { echo "Go is required (https://go.dev/doc/install)" >&2; exit 1; }
	@$(GO) mod download

build: deps-go
	$(GO) build -o $(BIN) ./cmd/switchboard

run: deps build
	./$(BIN) serve

test: deps build
	$(GO) vet ./...
	GO=$(GO) test/suite/run.sh

# fuzz explores each fuzz target for FUZZTIME (FUZZ=./pkg:FuzzX for one);
# a crasher lands in the package's testdata/fuzz, to be committed with its
# fix, and from then on every go test replays it.
fuzz: deps-go
	@failed=""; for t in $(FUZZ); do pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz $$pkg $$name for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$name$$" -fuzztime $(FUZZTIME) $$pkg || failed="$$failed $$t"; \
	done; \
	[ -z "$$failed" ] || { echo "fuzz failed:$$failed" >&2; exit 1; }

bench: deps-go
	$(GO) test -run '^$$' -bench . -benchmem ./media/... ./dtmf/... ./amd/... ./realtime/... ./webhook/... ./stream/...

# bench-calls: CALLS concurrent calls for DURATION to ENGINE (echo, loopback,
# upstream: the provider stand-in as its own process, speaking
# PROVIDER_FORMAT pcm or pcmu, or stream: a number routed to the Twilio
# Media Streams echo bot, its own process), callers on CODEC (pcma or
# pcmu) saying AUDIO (continuous: talking without a pause; pcap: sipp's
# g711a.pcap, a turn every 7 s), RATE new calls a second, the appliance's
# STT fallback STT (pocketsphinx, its default, or none); STANDIN_SCHED=idle
# runs the provider stand-in or the echo bot under SCHED_IDLE (it stands for
# another machine: it takes only the CPU the appliance and sipp leave);
# PROFILE=dir keeps the appliance's pprof profiles (and the echo bot's).
# The report leads with peak RSS over idle per call.
bench-calls: deps build
	$(GO) run ./test/loadbench -calls $${CALLS:-200} -duration $${DURATION:-30s} -engine $${ENGINE:-echo} \
		-rate $${RATE:-20} -codec $${CODEC:-pcma} -audio $${AUDIO:-continuous} -stt $${STT:-pocketsphinx} -provider-format $${PROVIDER_FORMAT:-pcm} \
		-standin-sched $${STANDIN_SCHED:-normal} $${PROFILE:+-profile $$PROFILE}

# bench-cps: call setup, CPS calls a second (INVITE, answer, ACK, BYE) for
# DURATION to the line test.
bench-cps: deps build
	$(GO) run ./test/loadbench -cps $${CPS:-1000} -duration $${DURATION:-30s} -engine $${ENGINE:-loopback} \
		-codec $${CODEC:-pcma} $${PROFILE:+-profile $$PROFILE}

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf bin
