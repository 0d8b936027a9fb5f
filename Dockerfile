# Multi-stage build of the one weft binary: a static executable on a
# distroless base, running as a non-root user.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/weft ./cmd/weft

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/weft /usr/local/bin/weft
USER nonroot:nonroot
ENTRYPOINT ["/usr/local/bin/weft"]
