# One image for every agentmesh service (coordinator, gateway, the agents, the CLI, local).
# The service is chosen at run time:  SERVICE=<name>  or  `docker run agentmesh <name> [args]`.
# Two stages: `build` installs every dependency and compiles the services (`pnpm build`, into each
# package's and role folder's dist/, and the npm packages loaded at start into /app/dist/vendor/);
# the image then keeps the production dependencies and the compiled JavaScript, with no TypeScript
# sources, tsx, tests or dev tools.
FROM node:24-bookworm-slim AS base

# tini runs as PID 1: it forwards SIGTERM to node (the entrypoint `exec`s into node) and reaps
# any child processes that tools leave behind. `docker run --init` is then unnecessary.
# curl is the compose healthcheck's probe of /readyz (a few MB with its libraries; no node process per probe).
RUN apt-get update \
 && apt-get install -y --no-install-recommends tini bubblewrap curl \
 && rm -rf /var/lib/apt/lists/* \
 && npm i -g pnpm@10 \
 && npm cache clean --force

WORKDIR /app
RUN chown node:node /app
USER node

FROM base AS build
# Dependencies first (cached while only sources change): the lockfile, and the patches it names
# (pnpm-workspace.yaml's patchedDependencies), are enough to fetch.
COPY --chown=node:node pnpm-lock.yaml pnpm-workspace.yaml ./
COPY --chown=node:node patches ./patches
RUN CI=true pnpm fetch

COPY --chown=node:node . .
# Everything (esbuild is a devDependency) → compile → production dependencies only (pnpm removes
# the dev ones) → drop the sources, tests and tooling the compiled services never read.
RUN CI=true pnpm install --frozen-lockfile --offline \
 && pnpm build \
 && CI=true pnpm install --frozen-lockfile --offline --prod \
 && rm -rf test bench scripts packages/*/src services/*/src \
 && find services -maxdepth 2 -name '*.ts' -delete

FROM base
COPY --from=build --chown=node:node /app /app
# Every service in a container serves its ops endpoint (/metrics, /readyz, /healthz) on 9464, so
# probes work without configuration; one process per container, so the fixed port cannot clash.
ENV NODE_ENV=production \
    SERVICE="" \
    AGENTMESH_METRICS_PORT=9464 \
    AGENTMESH_METRICS_HOST=0.0.0.0
ENTRYPOINT ["/usr/bin/tini", "--", "/bin/sh", "/app/deploy/docker/entrypoint.sh"]
CMD []
