# syntax=docker/dockerfile:1
# infiniband-exporter: docker build -t infiniband-exporter .
# Run (see docs/deploy.md): docker run -d --net=host -v /sys:/host/sys:ro infiniband-exporter
# The diag collector also needs --device /dev/infiniband/umad0 (one per port) and root or the
# umad devices' group; without them it turns itself off with one log line.

# Node.js 24 LTS, as the release's binary, packages and image (scripts/release/runtime): 20 is past
# its end of life. Both stages use the same image.
ARG NODE_IMAGE=node:24-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src/ src/
# The bundle step (scripts/bundle.mjs) runs the exporter on the demo host to write V8's code cache
# for this image's Node.js and the ENTRYPOINT's flags.
COPY scripts/bundle.mjs scripts/
COPY demo/ demo/
RUN npm run build

FROM ${NODE_IMAGE}
ARG NODE_IMAGE
ARG VERSION=0.1.0
ARG REVISION=unknown
LABEL org.opencontainers.image.title="infiniband-exporter" \
      org.opencontainers.image.description="Prometheus exporter for InfiniBand hosts: port and link health, subnet manager, PMA counters, IPoIB settings" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.base.name="${NODE_IMAGE}"
# infiniband-diags: perfquery, sminfo, smpquery for the diag collector. tini: PID 1 that passes
# SIGTERM on to node and reaps the tools' processes.
RUN apt-get update \
 && apt-get install -y --no-install-recommends infiniband-diags tini \
 && rm -rf /var/lib/apt/lists/*
# GLIBC_TUNABLES: glibc's malloc settings of every launcher (src/startup/v8-flags.ts).
ENV NODE_ENV=production \
    GLIBC_TUNABLES=glibc.malloc.arena_max=2:glibc.malloc.mmap_threshold=131072 \
    INFINIBAND_EXPORTER_REVISION=${REVISION}
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
 && npm cache clean --force
COPY --from=build /app/dist/ dist/
# The demo data behind --demo (the host) and --demo=fabric (a recorded fabric).
COPY demo/ demo/
# The node user (uid 1000) of the official image; files above stay root-owned and read-only to it.
USER node
EXPOSE 10460
# Node.js flags: see src/startup/v8-flags.ts (NODE_FLAGS) and docs/benchmarks.md ("Idle cost").
ENTRYPOINT ["/usr/bin/tini", "--", "node", "--v8-pool-size=1", "dist/main.js"]
CMD ["--path.sysfs=/host/sys"]
