# One image for every agentmesh service (coordinator, the agents, the CLI, local).
# The service is chosen at run time:  SERVICE=<name>  or  `docker run agentmesh <name> [args]`.
# agentmesh ships as TypeScript source run by tsx: there is no build stage.
FROM node:20-bookworm-slim

# tini runs as PID 1: it forwards SIGTERM to node (the entrypoint `exec`s into node) and reaps
# any child processes that tools leave behind. `docker run --init` is then unnecessary.
RUN apt-get update \
 && apt-get install -y --no-install-recommends tini bubblewrap \
 && rm -rf /var/lib/apt/lists/* \
 && npm i -g pnpm@10 \
 && npm cache clean --force

WORKDIR /app
RUN chown node:node /app
USER node

# Dependencies first (cached while only sources change): the lockfile is enough to fetch.
COPY --chown=node:node pnpm-lock.yaml pnpm-workspace.yaml ./
RUN CI=true pnpm fetch

COPY --chown=node:node . .
# tsx (the runtime) is a root devDependency, hence --prod=false.
RUN CI=true pnpm install --frozen-lockfile --prod=false

ENV NODE_ENV=production \
    SERVICE=""
ENTRYPOINT ["/usr/bin/tini", "--", "/bin/sh", "/app/deploy/docker/entrypoint.sh"]
CMD []
