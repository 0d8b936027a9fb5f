#!/usr/bin/env bash
# The postgres container's entrypoint (deploy/compose.yaml): it exports each
# role's password, WEFT_PG_<ROLE>_PASSWORD, from the folder `weft secrets
# init` wrote (WEFT_SECRETS_DIR, the secrets volume's postgres/), for
# 20-weft-passwords.sh, then runs the image's own entrypoint. It runs as
# root, which may read the files (they belong to the weft services' user);
# the image's entrypoint then drops to the postgres user, environment and all.
set -euo pipefail

dir=${WEFT_SECRETS_DIR:-/run/weft-secrets}
for role in migrator gateway engine relay projector; do
	var="WEFT_PG_${role^^}_PASSWORD"
	export "$var=$(<"$dir/pg-$role-password")"
done
exec docker-entrypoint.sh "$@"
