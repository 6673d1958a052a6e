import type * as FastCheck from "fast-check";

/** What to run to add the optional peer dependency `civitas-ts/testing` needs. @internal */
export const FAST_CHECK_INSTALL = "npm install --save-dev fast-check";

/**
 * Loads fast-check, the optional peer dependency of `civitas-ts/testing`,
 * when that entry is imported: the same module instance the caller's own
 * `import * as fc from "fast-check"` gets. Without it installed, the import
 * fails with an error that says how to install it, instead of
 * `ERR_MODULE_NOT_FOUND` naming a file deep inside the package.
 * @throws Error (`code` `ERR_MODULE_NOT_FOUND`, the original error as `cause`) when fast-check cannot be found.
 */
async function loadFastCheck(): Promise<typeof FastCheck> {
  try {
    return await import("fast-check");
  } catch (error) {
    const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
    if (code !== "ERR_MODULE_NOT_FOUND" || typeof message !== "string" || !message.includes("fast-check")) throw error;
    throw Object.assign(
      new Error(`civitas-ts/testing needs the optional peer dependency fast-check (^4), which could not be found (${message.split("\n")[0]}); install it with: ${FAST_CHECK_INSTALL}`, { cause: error }),
      { code },
    );
  }
}

/** The fast-check module, as `import * as fc from "fast-check"` gives it. @internal */
export const fc: typeof FastCheck = await loadFastCheck();
