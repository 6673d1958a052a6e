import { CivitasError } from "../errors/civitas-error.js";
import type { Runtime } from "../runtime/runtime.js";
import { InvalidRequestError } from "./http-errors.js";

/** Where a list was read: this runtime's agents, or the whole cluster's shared store. */
export type ListScope = "local" | "cluster";

/**
 * The scope of a list request: `?scope=` when given; else `"cluster"` when
 * the runtime's store is shared by a cluster (it answers
 * `listSuspended({ scope: "cluster" })`), else `"local"`. The probe runs once.
 * @internal
 */
export class ScopeResolver {
  private shared: Promise<boolean> | undefined;

  constructor(private readonly runtime: Runtime) {}

  async resolve(query: URLSearchParams): Promise<ListScope> {
    const asked = query.get("scope");
    if (asked === "local" || asked === "cluster") return asked;
    if (asked !== null) throw new InvalidRequestError(`?scope= is "local" or "cluster", got ${JSON.stringify(asked)}`);
    this.shared ??= this.runtime.listSuspended({ scope: "cluster" }).then(
      () => true,
      (error: unknown) => {
        if (error instanceof CivitasError && error.code === "CLUSTER_SCOPE_UNSUPPORTED") return false;
        this.shared = undefined; // a passing failure (the store is down): ask again next time
        throw error;
      },
    );
    return (await this.shared) ? "cluster" : "local";
  }
}
