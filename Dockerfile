# The bench image: `docker build -t bench .` (see README, "Install").
# Stage 1 builds with the locked toolchain and Cargo.lock; stage 2 ships the binary, CA
# certificates (for https endpoints) and nothing else. The entrypoint is the binary itself
# (exec form, PID 1), so SIGTERM from `docker stop` or Kubernetes reaches bench, which keeps
# the partial run marked incomplete.
FROM rust:1.95-slim-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src ./src
RUN cargo build --release --locked --bin bench && strip target/release/bench

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/target/release/bench /usr/local/bin/bench
COPY scenarios /scenarios
WORKDIR /work
ENTRYPOINT ["/usr/local/bin/bench"]
CMD ["--help"]
