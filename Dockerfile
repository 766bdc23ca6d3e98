# rayscope: a multi-stage build. The build stage compiles the release binary; the
# runtime stage is Debian slim with the binary, the example configs, a non-root user
# and a healthcheck on /-/ready (ready once the first snapshot exists).
#
#   docker build -t rayscope .
#   docker run --rm -p 127.0.0.1:8080:8080 rayscope            # the embedded default cluster
#   docker run --rm -p 127.0.0.1:8080:8080 rayscope serve --config /etc/rayscope/examples/faults.yaml

FROM rust:1.95.0-slim-bookworm AS build
WORKDIR /src
# Manifests first, so dependency downloads are cached apart from source changes.
COPY Cargo.toml Cargo.lock ./
COPY src src
COPY benches benches
COPY examples examples
# Embedded in the binary (include_str!), served at /runbooks.
COPY docs/runbooks.md docs/runbooks.md
RUN cargo build --release --locked --bin rayscope

FROM debian:bookworm-20241016-slim
# curl for the healthcheck only.
RUN apt-get update \
 && apt-get install -y --no-install-recommends curl ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --user-group --no-create-home --shell /usr/sbin/nologin rayscope
COPY --from=build /src/target/release/rayscope /usr/local/bin/rayscope
COPY examples /etc/rayscope/examples
USER rayscope:rayscope
# Listen on every interface inside the container; publish the port on 127.0.0.1 (see
# docker-compose.yml). State-changing endpoints stay off until RAYSCOPE_TOKEN is set.
ENV RAYSCOPE_LISTEN=0.0.0.0:8080
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD curl -fsS http://127.0.0.1:8080/-/ready >/dev/null || exit 1
ENTRYPOINT ["rayscope"]
CMD ["serve"]
