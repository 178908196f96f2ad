#!/bin/sh
# Writes the Kubernetes Secrets of a job's CurveZMQ keys (docs/security.md, docs/deployment.md "Kubernetes"):
# one Secret geomx-keys-<party> per party, holding every member's public key and the secret keys of that party's
# processes only, under the names the Jobs' secret volumes map (deploy/k8s/base/job-*.yaml: "<party>.<role>.pub",
# "<party>.<role>.secret"). Apply each party's file where that party's Job runs; nothing secret is committed.
#   deploy/k8s/make-key-secrets.sh OUTDIR [RECIPE] [GEOMX]
#   kubectl apply -n geomx -f OUTDIR/        # single cluster; multi-site: each site applies its own party's file
set -eu
out=${1:?usage: deploy/k8s/make-key-secrets.sh OUTDIR [RECIPE] [GEOMX]}
recipe=${2:-recipes/geo2x2.yaml}
geomx=${3:-geomx}
if [ -e "$out" ] && [ -n "$(ls -A "$out" 2>/dev/null)" ]; then
  echo "make-key-secrets: $out is not empty; choose a new folder (keys are never overwritten)" >&2
  exit 2
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$geomx" keys generate "$tmp/keys" --recipe "$recipe" >/dev/null
mkdir -p "$out"
chmod 700 "$out"
for partydir in "$tmp"/keys/*/; do
  party=$(basename "$partydir")
  file="$out/keys-$party.yaml"
  {
    printf 'apiVersion: v1\nkind: Secret\nmetadata:\n  name: geomx-keys-%s\n' "$party"
    printf '  labels: {app.kubernetes.io/name: geomx, geomx.io/party: %s}\ntype: Opaque\ndata:\n' "$party"
    for pub in "$tmp"/keys/*/*.pub; do
      printf '  %s.%s: %s\n' "$(basename "$(dirname "$pub")")" "$(basename "$pub")" "$(base64 -w0 "$pub")"
    done
    for secret in "$partydir"*.secret; do
      printf '  %s.%s: %s\n' "$party" "$(basename "$secret")" "$(base64 -w0 "$secret")"
    done
  } >"$file"
  chmod 600 "$file"
done
echo "make-key-secrets: wrote $(ls "$out" | tr '\n' ' ')to $out"
