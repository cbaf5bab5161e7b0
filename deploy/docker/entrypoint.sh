#!/bin/sh
# Starts one agentmesh service in the container, from the JavaScript `pnpm build` compiled.
#   docker run IMAGE coordinator            -> services/coordinator/dist/main.js
#   docker run -e SERVICE=planner IMAGE     -> services/agent/dist/main.js planner (a role folder)
#   docker run IMAGE cli ask "2+2?"          -> the CLI with arguments
# `exec` replaces this shell, so node is the process that receives SIGTERM (tini, PID 1,
# forwards it) and drains. Stack traces name the compiled files; NODE_OPTIONS=--enable-source-maps
# maps them to the TypeScript lines (the .map files are in the image; it costs start-up time, and a
# process bundle then starts without its code cache: deploy/README.md, "Start-up: the code cache").
set -eu
cd "$(dirname "$0")/../.."

# A service is a package with dist/main.js, or an agent role folder with dist/role.js.
known() { [ -n "$1" ] && { [ -f "services/$1/dist/main.js" ] || [ -f "services/$1/dist/role.js" ]; }; }

if [ $# -gt 0 ] && known "$1"; then
  service="$1"
  shift
else
  service="${SERVICE:-}"
fi

if ! known "$service"; then
  echo "agentmesh image: name a service with SERVICE=<name> or as the first argument." >&2
  printf 'services:' >&2
  for main in services/*/dist/main.js services/*/dist/role.js; do
    name="${main#services/}"
    printf ' %s' "${name%%/*}" >&2
  done
  echo >&2
  exit 64
fi

# The V8 heap settings every service runs with (deploy/node-options), before the environment's own
# NODE_OPTIONS so that a deployment's value for the same flag wins.
defaults=$(grep -v '^#' deploy/node-options | tr '\n' ' ')
# A container given more memory than the manifests' 512 MiB gets an old-space ceiling of half its
# limit (cgroup v2 memory.max, else v1), never less than the file's: a raised limit alone is enough.
cgroup=${AGENTMESH_CGROUP_DIR:-/sys/fs/cgroup}
limit=$(cat "$cgroup/memory.max" 2>/dev/null || cat "$cgroup/memory/memory.limit_in_bytes" 2>/dev/null || echo max)
case "$limit" in
  '' | *[!0-9]*) ;;
  *)
    half=$((limit / 2097152))
    floor=$(printf '%s\n' "$defaults" | sed -n 's/.*--max-old-space-size=\([0-9]*\).*/\1/p')
    # no limit reads as a huge number under cgroup v1: 1 TiB and more is no limit
    if [ -n "$floor" ] && [ "$half" -gt "$floor" ] && [ "$limit" -lt 1099511627776 ]; then
      defaults="$defaults --max-old-space-size=$half"
    fi
    ;;
esac
export NODE_OPTIONS="${defaults% }${NODE_OPTIONS:+ $NODE_OPTIONS}"

if [ -f "services/$service/dist/role.js" ]; then
  exec node services/agent/dist/main.js "$service" "$@"
fi
exec node "services/$service/dist/main.js" "$@"
