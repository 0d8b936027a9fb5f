#!/usr/bin/env bash
# Sets the passwords of Weft's Postgres roles (10-weft-roles.sql) from the
# environment of the postgres container (deploy/compose.yaml). The postgres
# image runs this once, when the data volume is first created, after
# 10-weft-roles.sql. To change a password later:
#   ALTER ROLE weft_engine PASSWORD '…';
set -euo pipefail

psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
	-v migrator="${WEFT_PG_MIGRATOR_PASSWORD:?set WEFT_PG_MIGRATOR_PASSWORD}" \
	-v gateway="${WEFT_PG_GATEWAY_PASSWORD:?set WEFT_PG_GATEWAY_PASSWORD}" \
	-v engine="${WEFT_PG_ENGINE_PASSWORD:?set WEFT_PG_ENGINE_PASSWORD}" \
	-v relay="${WEFT_PG_RELAY_PASSWORD:?set WEFT_PG_RELAY_PASSWORD}" \
	-v projector="${WEFT_PG_PROJECTOR_PASSWORD:?set WEFT_PG_PROJECTOR_PASSWORD}" <<'SQL'
ALTER ROLE weft_migrator PASSWORD :'migrator';
ALTER ROLE weft_gateway PASSWORD :'gateway';
ALTER ROLE weft_engine PASSWORD :'engine';
ALTER ROLE weft_relay PASSWORD :'relay';
ALTER ROLE weft_projector PASSWORD :'projector';
SQL
