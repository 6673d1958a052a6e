import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");

/** The Python packages the Python peer (test/nats/fixtures/python_peer.py) imports. */
export const PYTHON_PACKAGES = [
  { name: "nats-py", module: "nats" },
  { name: "msgpack", module: "msgpack" },
] as const;

/**
 * The interpreter of the project-local virtual environment that
 * `scripts/test-setup.ts` (run by `npm test`) fills with {@link PYTHON_PACKAGES}:
 * `<stateDir>/python/bin/python`, `stateDir` being `.test-env` in the repository.
 */
export function testPython(stateDir = path.join(repoRoot, ".test-env")): string {
  return path.join(stateDir, "python", "bin", "python");
}

/** The interpreter the Python peer runs with: the test environment's once it exists, else python3 on PATH. */
export function peerPython(): string {
  const local = testPython();
  return existsSync(local) ? local : "python3";
}
