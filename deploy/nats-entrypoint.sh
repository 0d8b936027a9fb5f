#!/bin/sh
# The nats container's entrypoint (deploy/compose.yaml): it exports each
# user's password, WEFT_NATS_<USER>_PASSWORD, which nats.conf reads, from
# the folder `weft secrets init` wrote (WEFT_SECRETS_DIR, the secrets
# volume's nats/), then runs nats-server, found on PATH, with the
# arguments given. It runs as root, which may read the files (they belong
# to the weft services' user). It names no variable of the image's: the
# official image sets NATS_SERVER to its version (2.12.15), not a path.
set -eu

dir=${WEFT_SECRETS_DIR:-/run/weft-secrets}
# A Docker Engine before 26 ignores the mount's volume subpath without an
# error: the folder is then the whole volume, with a folder per reader.
if [ -d "$dir/postgres" ] && [ -d "$dir/nats" ]; then
	echo "weft-entrypoint.sh (nats): $dir: this mount looks like the whole secrets volume: Docker Engine 26 or newer is needed for volume subpath (compose.yaml)" >&2
	exit 1
fi
for user in migrate relay engine worker projector gateway client; do
	var="WEFT_NATS_$(echo "$user" | tr '[:lower:]' '[:upper:]')_PASSWORD"
	export "$var=$(cat "$dir/$user-password")"
done
exec nats-server "$@"
