#!/bin/sh
# The nats container's entrypoint (deploy/compose.yaml): it exports each
# user's password, WEFT_NATS_<USER>_PASSWORD, which nats.conf reads, from
# the folder `weft secrets init` wrote (WEFT_SECRETS_DIR, the secrets
# volume's nats/), then runs nats-server with the arguments given. It runs
# as root, which may read the files (they belong to the weft services' user).
set -eu

dir=${WEFT_SECRETS_DIR:-/run/weft-secrets}
for user in migrate relay engine worker projector gateway client; do
	var="WEFT_NATS_$(echo "$user" | tr '[:lower:]' '[:upper:]')_PASSWORD"
	export "$var=$(cat "$dir/$user-password")"
done
exec "${NATS_SERVER:-nats-server}" "$@"
