# syntax=docker/dockerfile:1
#
# The otopcua image: one static binary on an empty base, run as uid 10001.
#
#   docker build --build-arg VERSION=1.2.0 --build-arg COMMIT=$(git rev-parse --short HEAD) -t otopcua .
#   docker run -e OTOPCUA_CLUSTER__SEEDNODES=node-a:4053,node-b:4053 otopcua
#
# Configuration. The default command is `otopcua host` without --config:
# the node reads appsettings.json from the working directory
# /var/lib/otopcua if one is there and otherwise runs on the defaults plus
# OTOPCUA_ environment variables (what the compose rig does). An explicit
# `--config FILE` that does not exist is an error (exit 2), so the image
# does not name /etc/otopcua/appsettings.json by default. To use a file,
# mount it and pass the command:
#
#   docker run -v ./node-a.json:/etc/otopcua/appsettings.json:ro otopcua \
#     host --config /etc/otopcua/appsettings.json
#
# State. /var/lib/otopcua holds the LocalDb file, the SQLite Config DB
# (ConfigDb:ConnectionString "file:otopcua.db", relative to the working
# directory) and pki/; mount a volume there. /etc/otopcua is for the
# configuration files (appsettings.json, akka.conf).

ARG GO_IMAGE=golang:1.26-bookworm

FROM ${GO_IMAGE} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG COMMIT=unknown
RUN CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT}" -o /out/otopcua ./cmd/otopcua
# The empty base has no user database, no directories and no /tmp.
RUN mkdir -p /rootfs/etc/otopcua /rootfs/var/lib/otopcua/pki /rootfs/tmp \
 && chmod 1777 /rootfs/tmp \
 && echo 'otopcua:x:10001:10001:otopcua:/var/lib/otopcua:/sbin/nologin' > /rootfs/etc/passwd \
 && echo 'otopcua:x:10001:' > /rootfs/etc/group \
 && chown -R 10001:10001 /rootfs/etc/otopcua /rootfs/var/lib/otopcua

FROM scratch
ARG VERSION=dev
ARG COMMIT=unknown
ARG SOURCE=https://github.com/otopcua/otopcua
ARG LICENSES=NOASSERTION
LABEL org.opencontainers.image.title="otopcua" \
      org.opencontainers.image.description="One node of a redundant OPC UA server set (Warm/Hot non-transparent redundancy)" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.licenses="${LICENSES}" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${COMMIT}" \
      org.opencontainers.image.vendor="otopcua"
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /rootfs/etc/passwd /rootfs/etc/group /etc/
COPY --from=build --chown=10001:10001 /rootfs/etc/otopcua /etc/otopcua
COPY --from=build --chown=10001:10001 /rootfs/var/lib/otopcua /var/lib/otopcua
COPY --from=build /rootfs/tmp /tmp
COPY --from=build /out/otopcua /usr/local/bin/otopcua
# Environment overrides win over a mounted appsettings.json: to set these
# keys in the file instead, override the variable too (docker run -e).
ENV OTOPCUA_LOCALDB__PATH=/var/lib/otopcua/otopcua-local.db \
    OTOPCUA_TELEMETRY__LOGFORMAT=json
USER 10001:10001
WORKDIR /var/lib/otopcua
VOLUME ["/etc/otopcua", "/var/lib/otopcua"]
# OPC UA (OpcUa:Port), cluster transport (Cluster:Port), HTTP probes and
# /metrics (Http:Port): the defaults.
EXPOSE 4840 4053 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 CMD ["/usr/local/bin/otopcua", "health"]
ENTRYPOINT ["/usr/local/bin/otopcua"]
CMD ["host"]
