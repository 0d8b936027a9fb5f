#!/usr/bin/env bash
# The postgres container's entrypoint (deploy/compose.yaml): it exports each
# role's password, WEFT_PG_<ROLE>_PASSWORD, from the folder `weft secrets
# init` wrote (WEFT_SECRETS_DIR, the secrets volume's postgres/), for
# 20-weft-passwords.sh, then runs the image's own entrypoint. It runs as
# root, which may read the files (they belong to the weft services' user);
# the image's entrypoint then drops to the postgres user, environment and all.
set -euo pipefail

dir=${WEFT_SECRETS_DIR:-/run/weft-secrets}
# A Docker Engine before 26 ignores the mount's volume subpath without an
# error: the folder is then the whole volume, with a folder per reader.
if [ -d "$dir/postgres" ] && [ -d "$dir/nats" ]; then
	echo "weft-entrypoint.sh (postgres): $dir: this mount looks like the whole secrets volume: Docker Engine 26 or newer is needed for volume subpath (compose.yaml)" >&2
	exit 1
fi
for role in migrator gateway engine relay projector; do
	var="WEFT_PG_${role^^}_PASSWORD"
	export "$var=$(<"$dir/pg-$role-password")"
done
exec docker-entrypoint.sh "$@"
