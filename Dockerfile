# Multi-stage build of the one weft binary: a static executable on a
# distroless base, running as a non-root user. The image also carries the
# per-service Postgres grants that `weft migrate --grants-file` applies
# (deploy/compose.yaml), so they always match the binary's migrations.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/weft ./cmd/weft

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/weft /usr/local/bin/weft
COPY --from=build /src/deploy/postgres/grants.sql /etc/weft/grants.sql
USER nonroot:nonroot
ENTRYPOINT ["/usr/local/bin/weft"]
