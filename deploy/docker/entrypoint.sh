#!/bin/sh
# Starts one agentmesh service in the container.
#   docker run IMAGE coordinator            -> services/coordinator/src/main.ts
#   docker run -e SERVICE=planner IMAGE     -> services/agent/src/main.ts planner (a role folder)
#   docker run IMAGE cli ask "2+2?"          -> the CLI with arguments
# `exec` replaces this shell, so node is the process that receives SIGTERM (tini, PID 1,
# forwards it) and drains. Sources run through tsx's loader: there is no build step.
set -eu
cd "$(dirname "$0")/../.."

# A service is a package with src/main.ts, or an agent role folder with role.ts.
known() { [ -n "$1" ] && { [ -f "services/$1/src/main.ts" ] || [ -f "services/$1/role.ts" ]; }; }

if [ $# -gt 0 ] && known "$1"; then
  service="$1"
  shift
else
  service="${SERVICE:-}"
fi

if ! known "$service"; then
  echo "agentmesh image: name a service with SERVICE=<name> or as the first argument." >&2
  printf 'services:' >&2
  for main in services/*/src/main.ts services/*/role.ts; do
    name="${main#services/}"
    printf ' %s' "${name%%/*}" >&2
  done
  echo >&2
  exit 64
fi

if [ -f "services/$service/role.ts" ]; then
  exec node --import tsx --conditions=source services/agent/src/main.ts "$service" "$@"
fi
exec node --import tsx --conditions=source "services/$service/src/main.ts" "$@"
