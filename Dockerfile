# Joiner's container image, for people who build with Docker (or buildah,
# kaniko, ...). hack/image.sh builds the same image without a daemon, as an
# OCI layout: a static binary on an empty base, user 65532, entrypoint /joiner.
#
#   docker build -t ghcr.io/joiner-autoscaler/joiner:v0.1.0 .
FROM golang:1.26.8 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# Static: the final image has no libc or loader.
RUN CGO_ENABLED=0 GOOS=linux go build -trimpath -buildvcs=false -ldflags "-s -w" -o /out/joiner ./cmd/joiner \
 && /out/joiner version

FROM scratch
COPY --from=build --chmod=0555 /out/joiner /joiner
# distroless's nonroot user; the chart runs the pod as the same.
USER 65532:65532
ENTRYPOINT ["/joiner"]
LABEL org.opencontainers.image.title="joiner" \
      org.opencontainers.image.description="Joiner, a node autoscaler that speaks Karpenter's karpenter.sh/v1 API" \
      org.opencontainers.image.source="https://github.com/joiner-autoscaler/joiner" \
      org.opencontainers.image.version="v0.1.0"
