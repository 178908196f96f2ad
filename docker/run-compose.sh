#!/usr/bin/env bash
# Runs a compose job (docker/compose.geo2x2.yaml) to its end: starts every service, waits for each one except the
# network-namespace holders (the services others join with `network_mode: service:X`), prints the logs and every
# exit code, then removes the containers (the volume with the run folder stays). Exits 1 when one failed.
#   docker/run-compose.sh docker/compose.geo2x2.yaml [--profile netem]
#   GEOMX_MAX_ITERATIONS=50 GEOMX_RUN=short docker/run-compose.sh docker/compose.geo2x2.yaml
# Uses `docker compose` when there is one, else `docker-compose` (1.29).
set -euo pipefail
file=${1:?usage: docker/run-compose.sh COMPOSE_FILE [compose options, e.g. --profile netem]}
shift
if docker compose version >/dev/null 2>&1; then compose=(docker compose); else compose=(docker-compose); fi
compose+=(-f "$file" "$@")

config=$("${compose[@]}" config)
holders=$(sed -n 's/^ *network_mode: *service:\(.*\)$/\1/p' <<<"$config" | sort -u)
services=$("${compose[@]}" config --services)
failed=0
up_failed=0
"${compose[@]}" up -d || up_failed=1  # e.g. a dependency failed: what did start is still waited for

report=""
for s in $services; do
  grep -qx -- "$s" <<<"$holders" && continue
  ids=$("${compose[@]}" ps -a -q "$s")
  # No container: a service of a profile not asked for, or one that `up` could not start.
  [[ -z "$ids" && $up_failed == 1 ]] && report+="$s: no container"$'\n'
  for id in $ids; do
    code=$(docker wait "$id")
    report+="$s: exit $code"$'\n'
    [[ "$code" == 0 ]] || failed=1
  done
done
"${compose[@]}" logs --no-color
printf '%s' "$report"
"${compose[@]}" rm -f -s -v  # with the anonymous volumes (the image's VOLUME), not the named one
"${compose[@]}" down
[[ $up_failed == 0 ]] || failed=1
exit "$failed"
