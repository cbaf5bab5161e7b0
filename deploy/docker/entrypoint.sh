#!/bin/sh
# Starts one agentmesh service in the container.
#   docker run IMAGE coordinator            -> services/coordinator/src/main.ts
#   docker run -e SERVICE=planner IMAGE     -> services/planner/src/main.ts
#   docker run IMAGE cli ask "2+2?"          -> the CLI with arguments
# `exec` replaces this shell, so node is the process that receives SIGTERM (tini, PID 1,
# forwards it) and drains. Sources run through tsx's loader: there is no build step.
set -eu
cd "$(dirname "$0")/../.."

if [ $# -gt 0 ] && [ -f "services/$1/src/main.ts" ]; then
  service="$1"
  shift
else
  service="${SERVICE:-}"
fi

if [ -z "$service" ] || [ ! -f "services/$service/src/main.ts" ]; then
  echo "agentmesh image: name a service with SERVICE=<name> or as the first argument." >&2
  printf 'services:' >&2
  for main in services/*/src/main.ts; do
    name="${main#services/}"
    printf ' %s' "${name%%/*}" >&2
  done
  echo >&2
  exit 64
fi

exec node --import tsx --conditions=source "services/$service/src/main.ts" "$@"
