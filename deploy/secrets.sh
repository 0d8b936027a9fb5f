#!/bin/sh
# Writes the secrets of deploy/compose.yaml into an env file (default:
# .env beside compose.yaml, which compose reads): a random password for the
# Postgres superuser, each Postgres role and each NATS user, the engine's
# task key, and an admin API key whose token is printed once, here, and
# kept nowhere (the file holds its SHA-256 only). Optional: without it,
# compose's one-shot service secrets makes them on first start; with it,
# that service writes these values into the secrets volume instead, so
# they are known ahead (to script the first start, or to keep them in a
# vault). A volume already made keeps its values.
#
#   ./secrets.sh [FILE]
#
# It adds only what FILE lacks and never changes a value already there, so
# running it again is safe: the Postgres passwords are set when the data
# volume is first created, and a new one would lock the services out (to
# change one later, ALTER ROLE, then edit FILE). The file is made mode 600.
# Needs a POSIX shell, od, head, base64 and sha256sum or shasum.
set -eu

file=${1:-$(dirname "$0")/.env}
umask 077
touch "$file"

# random prints 24 random bytes in hex: safe in URLs, nats.conf and SQL.
random() { head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n'; }

sha256() {
	if command -v sha256sum >/dev/null 2>&1; then
		sha256sum | cut -d' ' -f1
	else
		shasum -a 256 | cut -d' ' -f1
	fi
}

has() { grep -q "^$1=" "$file"; }

# add appends KEY=VALUE unless FILE sets KEY already.
written=0
add() {
	if has "$1"; then
		return
	fi
	printf '%s=%s\n' "$1" "$2" >>"$file"
	written=$((written + 1))
}

for v in POSTGRES PG_MIGRATOR PG_GATEWAY PG_ENGINE PG_RELAY PG_PROJECTOR \
	NATS_MIGRATE NATS_RELAY NATS_ENGINE NATS_WORKER NATS_PROJECTOR NATS_GATEWAY NATS_CLIENT; do
	add "WEFT_${v}_PASSWORD" "$(random)"
done
add WEFT_TASK_KEY "$(head -c 32 /dev/urandom | base64)"

token=
if ! has WEFT_API_KEYS; then
	token="weft_$(random)"
	add WEFT_API_KEYS "\"admin default admin sha256:$(printf %s "$token" | sha256)\""
fi
echo "secrets.sh: wrote $written secrets to $file" >&2
if [ -n "$token" ]; then
	echo "The admin API key (tenant default), shown this once: keep it, it is stored nowhere:"
	echo "$token"
fi
