import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const src = (path: string): string => fileURLToPath(new URL(`./src/${path}`, import.meta.url));

/**
 * The suites that need more than Node: the PostgreSQL server (127.0.0.1:5432),
 * the NATS server with JetStream (127.0.0.1:4222) or nats-server on PATH, or
 * the Python peer, or Chromium (the inbox page's browser tests). `npm test` prepares those first (scripts/test-setup.ts) and
 * runs everything; `npm run test:unit` runs the other project alone.
 */
const needsServers = [
  // every NATS suite but the pure wire code (codec, msgpack reader)
  "test/nats/**/!(codec.golden|codec.property|msgpack-reader).test.ts",
  "test/postgres/**/*.test.ts",
  "test/**/postgres-*.test.ts",
  "test/audit/settle-once-restored.test.ts",
  "test/audit/truncation-anchor.test.ts",
  "test/runtime/list-suspended.test.ts",
  "test/examples/cluster.test.ts",
  "test/examples/examples.test.ts", // one example runs on PostgreSQL
  "test/setup/**/*.test.ts",
  "test/http/browser/**/*.test.ts", // Debian's chromium
];

export default defineConfig({
  resolve: {
    alias: [
      { find: /^civitas-ts$/, replacement: src("index.ts") },
      { find: /^civitas-ts\/(.*)$/, replacement: src("entries/$1.ts") },
    ],
  },
  test: {
    testTimeout: 20_000,
    hookTimeout: 20_000,
    pool: "forks",
    projects: [
      {
        extends: true,
        test: { name: "unit", include: ["test/**/*.test.ts"], exclude: needsServers },
      },
      {
        extends: true,
        test: { name: "servers", include: needsServers },
      },
    ],
  },
});
