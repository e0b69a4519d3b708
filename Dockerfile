# fibkeeper image: built from this repository (`docker build -t fibkeeper .`).
FROM node:20-bookworm AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      clang llvm libbpf-dev libelf-dev zlib1g-dev make g++ python3 pkg-config \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN make build && npm prune --omit=dev

FROM node:20-bookworm-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libbpf1 libelf1 iproute2 \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /opt/fibkeeper
COPY --from=build /src/package.json ./
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/bin ./bin
COPY --from=build /src/dist ./dist
COPY --from=build /src/build/bpf ./build/bpf
COPY --from=build /src/native/build/Release/fibkeeper.node ./native/build/Release/fibkeeper.node
COPY --from=build /src/README.md ./
ENTRYPOINT ["node", "/opt/fibkeeper/bin/fibkeeper.js"]
CMD ["run", "--config", "/etc/fibkeeper/config.yaml"]
