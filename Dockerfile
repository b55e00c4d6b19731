# Multi-stage build: compile with the full toolchain, ship a slim runtime image that
# runs as a non-root user. SQLite is bundled into the binary; data lives in /app/data.
FROM rust:1.95-slim-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock build.rs ./
COPY link ./link
COPY .cargo ./.cargo
COPY src ./src
COPY migrations ./migrations
COPY config ./config
# Declared in Cargo.toml, so the manifest needs them even though only the binary is built.
COPY benches ./benches
COPY tests/fixtures ./tests/fixtures
RUN cargo build --profile dist --locked --bin hitl-bridge

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /app --shell /usr/sbin/nologin hitl \
 && mkdir -p /app/data \
 && chown hitl /app/data
WORKDIR /app
COPY --from=build /src/target/dist/hitl-bridge /usr/local/bin/hitl-bridge
COPY config ./config
USER hitl
# The HTTP listener (/healthz, /readyz, /metrics, /v1): reachable from outside the container.
ENV HITL_BRIDGE__HTTP__LISTEN=0.0.0.0:8790
EXPOSE 8790
# Ready = the store answers and every platform started (no curl here: the binary asks
# /readyz itself). The start period covers a slow Telegram or Discord login at start.
# With another port in http.listen, use: hitl-bridge health --url http://127.0.0.1:PORT/readyz
HEALTHCHECK --interval=30s --timeout=10s --start-period=60s --retries=3 CMD ["hitl-bridge", "health"]
VOLUME ["/app/data"]
ENTRYPOINT ["hitl-bridge"]
CMD ["run"]
