# Multi-stage image on the official Bun image, running as a non-root user.
# Stage 1: production dependencies only (npm ci --omit=dev, from the lockfile).
FROM node:20-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
COPY scripts/patch-postgres.mjs ./scripts/
# Without dependencies' install scripts, then our own: the postgres.js fix
# (scripts/patch-postgres.mjs). The `bun` package (a dependency so that a production install can
# run every npm script) is dropped: the base image's /usr/local/bin/bun runs the service.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && node scripts/patch-postgres.mjs \
  && rm -rf node_modules/bun node_modules/@oven node_modules/.bin/bun node_modules/.bin/bunx

# Stage 2: the runtime.
FROM oven/bun:1.4-slim
WORKDIR /app
# The engine's heap is sized as for 512 MiB of memory (as `npm start` does; docs/configuration.md, "Memory").
ENV NODE_ENV=production PORT=3000 BUN_JSC_forceRAMSize=536870912
COPY --from=deps /app/node_modules ./node_modules
COPY package.json service.config.json ./
COPY src ./src
COPY entries ./entries
COPY plugins ./plugins
COPY migrations ./migrations
# The embedded database (used when DATABASE_URL is unset) lives in the volume /app/data, so it
# outlives the container. The operator CLI: `docker exec <container> bun entries/cli.ts <command>`.
RUN mkdir -p /app/data && chown -R bun:bun /app/data
VOLUME /app/data
USER bun
EXPOSE 3000
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["bun", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/health').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["bun", "entries/bun.ts"]
