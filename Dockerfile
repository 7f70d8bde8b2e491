# syntax=docker/dockerfile:1
#
# queen-kafka image: static binaries of the facade and the development
# broker in /app/bin, on a distroless non-root base. The one addition to the
# base is busybox's static shell at /bin/sh, because the StatefulSet's
# entrypoint (k8s/entrypoint.sh) has to turn the pod name into a node id
# before exec'ing the facade, and a manifest cannot do that arithmetic.
#
#   docker build -t queen-kafka .
#   docker run --rm -p 9092:9092 -e QUEEN_URL=http://queen:6632 \
#     -e QUEEN_KAFKA_ADVERTISED_ADDR=localhost:9092 queen-kafka
#   docker run --rm -p 6632:6632 -e QUEEN_DEV_ADDR=0.0.0.0:6632 \
#     -e QUEEN_DEV_DATA=/home/nonroot/queen-dev --entrypoint /app/bin/queen-dev queen-kafka
#
# queen-dev's defaults suit a laptop, not a container: it listens on
# 127.0.0.1 (unreachable through -p) and writes ./.queen-dev under /app,
# which the nonroot user cannot write. /home/nonroot is that user's own
# (mount a volume there to keep the data).

ARG GO_VERSION=1.26

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
ARG TARGETOS=linux
ARG TARGETARCH
# --version and the registry row carry it: docker build --build-arg VERSION=$(git describe --tags --always)
ARG VERSION=dev
WORKDIR /src
# The product module alone: go.work joins the test module (e2e/, its
# clients and their cgo build), which the image neither copies nor needs.
ENV GOWORK=off
# Dependencies first, so a source change does not re-download modules.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
# CGO off: fully static binaries that run on a base with no libc.
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -ldflags="-s -w -X github.com/queen-mq/queen-kafka/internal/version.version=${VERSION}" -o /out/ ./cmd/queen-kafka ./cmd/queen-dev

# busybox's musl build is statically linked; only its binary is taken.
FROM busybox:1.37-musl AS shell

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=shell /bin/busybox /bin/sh
COPY --from=build /out/queen-kafka /out/queen-dev /app/bin/
COPY --chmod=0555 k8s/entrypoint.sh /app/bin/entrypoint.sh
WORKDIR /app
# 65532 is distroless's nonroot user; stated so runAsNonRoot can verify it.
USER 65532:65532
EXPOSE 9092
ENTRYPOINT ["/app/bin/queen-kafka"]
