/**
 * For a child process that plays an install without an optional dependency:
 * makes `request` unresolvable (MODULE_NOT_FOUND), as if it were not installed.
 */
import Module from "node:module";

/** Makes every later `import`/`require` of `request` fail with MODULE_NOT_FOUND in this process. */
export function hideModule(request: string): void {
  const modules = Module as unknown as { _resolveFilename: (request: string, ...rest: unknown[]) => string };
  const resolve = modules._resolveFilename;
  modules._resolveFilename = (wanted, ...rest) => {
    if (wanted === request) throw Object.assign(new Error(`Cannot find module '${wanted}'`), { code: "MODULE_NOT_FOUND" });
    return resolve(wanted, ...rest);
  };
}
