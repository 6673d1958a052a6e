import { describe, expect, it } from "vitest";
import { DynamicSupervisor, InvalidArgumentError, Runtime, Supervisor, silentLogger, type SupervisorOptions } from "../../src/index.js";
import { RestartIntensity } from "../../src/supervision/restart-intensity.js";
import { Probe } from "../support/agents.js";

type AnyOptions = Record<string, unknown>;

function thrown(fn: () => unknown): InvalidArgumentError {
  try {
    fn();
  } catch (error) {
    return error as InvalidArgumentError;
  }
  throw new Error("expected a throw");
}

const badRestartOptions: Array<[string, AnyOptions, string]> = [
  ["negative maxRestarts", { maxRestarts: -1 }, "maxRestarts"],
  ["fractional maxRestarts", { maxRestarts: 1.5 }, "maxRestarts"],
  ["NaN maxRestarts", { maxRestarts: Number.NaN }, "maxRestarts"],
  ["string maxRestarts", { maxRestarts: "3" }, "maxRestarts"],
  ["zero restartWindowMs", { restartWindowMs: 0 }, "restartWindowMs"],
  ["non-integer backoffBaseMs", { backoffBaseMs: 10.5 }, "backoffBaseMs"],
  ["negative backoffBaseMs", { backoffBaseMs: -5 }, "backoffBaseMs"],
  ["infinite backoffMaxMs", { backoffMaxMs: Number.POSITIVE_INFINITY }, "backoffMaxMs"],
  ["unknown backoff name", { backoff: "FIBONACCI" }, "backoff"],
  ["lower-case backoff name", { backoff: "constant" }, "backoff"],
  // null (a YAML key without a value) is refused, not taken as "use the default"
  ["null maxRestarts", { maxRestarts: null }, "maxRestarts"],
  ["null restartWindowMs", { restartWindowMs: null }, "restartWindowMs"],
  ["null backoff", { backoff: null }, "backoff"],
  ["null backoffBaseMs", { backoffBaseMs: null }, "backoffBaseMs"],
  ["null backoffMaxMs", { backoffMaxMs: null }, "backoffMaxMs"],
];

describe("Supervisor constructor validation", () => {
  for (const [what, options, argument] of [
    ...badRestartOptions,
    ["unknown strategy", { strategy: "ALL_FOR_ONE" }, "strategy"],
    ["lower-case strategy", { strategy: "one_for_one" }, "strategy"],
    ["null strategy", { strategy: null }, "strategy"],
    ["children not an array", { children: "a,b" }, "children"],
    ["a child that is not an agent or supervisor", { children: [{ name: "x" }] }, "children"],
  ] as Array<[string, AnyOptions, string]>) {
    it(`rejects ${what} with INVALID_ARGUMENT naming '${argument}'`, () => {
      const error = thrown(() => new Supervisor("sup", { children: [], ...options }));
      expect(error).toBeInstanceOf(InvalidArgumentError);
      expect(error.code).toBe("INVALID_ARGUMENT");
      expect(error.name).toBe("InvalidArgumentError");
      expect(error.argument).toBe(argument);
      expect(error.message).toContain(argument);
      expect(error.message).toContain("sup");
    });
  }

  for (const name of ["", "has space", "glob*", 7]) {
    it(`rejects the name ${JSON.stringify(name)} with INVALID_ARGUMENT`, () => {
      const error = thrown(() => new Supervisor(name as string, { children: [] }));
      expect(error.code).toBe("INVALID_ARGUMENT");
      expect(error.argument).toBe("name");
      expect(error.message).toContain("name");
    });
  }

  it("rejects missing options with INVALID_ARGUMENT", () => {
    const error = thrown(() => new Supervisor("sup", undefined as unknown as SupervisorOptions));
    expect(error.code).toBe("INVALID_ARGUMENT");
    expect(error.argument).toBe("options");
  });

  it("rejects the same child listed twice", () => {
    const probe = new Probe("twice");
    const error = thrown(() => new Supervisor("sup", { children: [probe, probe] }));
    expect(error.code).toBe("INVALID_ARGUMENT");
    expect(error.message).toContain("twice");
  });

  it("accepts the defaults and every valid strategy and backoff", () => {
    expect(new Supervisor("sup", { children: [] }).strategy).toBe("ONE_FOR_ONE");
    for (const strategy of ["ONE_FOR_ONE", "ONE_FOR_ALL", "REST_FOR_ONE"] as const) {
      for (const backoff of ["CONSTANT", "LINEAR", "EXPONENTIAL"] as const) {
        expect(new Supervisor("sup", { children: [], strategy, backoff, maxRestarts: 0, backoffBaseMs: 0 }).strategy).toBe(strategy);
      }
    }
  });
});

describe("DynamicSupervisor constructor validation", () => {
  for (const [what, options, argument] of [
    ...badRestartOptions,
    ["zero maxChildren", { maxChildren: 0 }, "maxChildren"],
    ["fractional maxChildren", { maxChildren: 2.5 }, "maxChildren"],
    ["null maxChildren", { maxChildren: null }, "maxChildren"],
  ] as Array<[string, AnyOptions, string]>) {
    it(`rejects ${what} with INVALID_ARGUMENT naming '${argument}'`, () => {
      const error = thrown(() => new DynamicSupervisor("dyn", options));
      expect(error).toBeInstanceOf(InvalidArgumentError);
      expect(error.code).toBe("INVALID_ARGUMENT");
      expect(error.argument).toBe(argument);
      expect(error.message).toContain(argument);
      expect(error.message).toContain("dyn");
    });
  }

  it("rejects an empty name with INVALID_ARGUMENT", () => {
    const error = thrown(() => new DynamicSupervisor(""));
    expect(error.code).toBe("INVALID_ARGUMENT");
    expect(error.argument).toBe("name");
  });

  it("defaults maxChildren to unbounded", () => {
    expect(new DynamicSupervisor("dyn").maxChildren).toBe(Number.POSITIVE_INFINITY);
    expect(new DynamicSupervisor("dyn", { maxChildren: 3 }).maxChildren).toBe(3);
  });
});

describe("duplicate names across the tree", () => {
  const cases: Array<[string, () => Supervisor]> = [
    ["two agents", () => new Supervisor("root", { children: [new Probe("a"), new Supervisor("inner", { children: [new Probe("a")] })] })],
    ["an agent and a supervisor", () => new Supervisor("root", { children: [new Probe("inner"), new Supervisor("inner", { children: [] })] })],
    ["an agent and the root", () => new Supervisor("root", { children: [new Probe("root")] })],
    ["a dynamic supervisor and an agent", () => new Supervisor("root", { children: [new DynamicSupervisor("d"), new Probe("d")] })],
    ["two supervisors", () => new Supervisor("root", { children: [new Supervisor("s", { children: [] }), new Supervisor("s", { children: [] })] })],
  ];
  for (const [what, tree] of cases) {
    it(`new Runtime() rejects ${what} sharing a name with DUPLICATE_NAME`, () => {
      const error = thrown(() => new Runtime({ root: tree(), logger: silentLogger })) as unknown as { code: string; name: string };
      expect(error.code).toBe("DUPLICATE_NAME");
      expect(error.name).toBe("DuplicateNameError");
    });
  }

  it("a refused construction attaches nothing: every agent and supervisor can form another runtime", () => {
    const a = new Probe("a");
    const inner = new Supervisor("inner", { children: [a] });
    const dyn = new DynamicSupervisor("d");
    const late = new Probe("inner");
    const error = thrown(() => new Runtime({ root: new Supervisor("root", { children: [inner, dyn, late] }), logger: silentLogger })) as unknown as { code: string };
    expect(error.code).toBe("DUPLICATE_NAME");
    const runtime = new Runtime({ root: new Supervisor("root", { children: [inner, dyn] }), logger: silentLogger });
    expect(runtime.getAgent("a")).toBe(a);
    expect(runtime.getSupervisor("d")).toBe(dyn);
  });

  it("new Runtime() refuses an agent or supervisor that already belongs to a runtime, registering nothing", () => {
    const a = new Probe("a");
    const sup = new Supervisor("sup", { children: [] });
    new Runtime({ root: [a, sup], logger: silentLogger });
    const fresh = new Probe("fresh");
    for (const taken of [a, sup]) {
      const error = thrown(() => new Runtime({ root: [fresh, taken], logger: silentLogger }));
      expect(error.code).toBe("INVALID_ARGUMENT");
      expect(error.message).toContain("already belongs to a runtime");
    }
    expect(() => new Runtime({ root: [fresh], logger: silentLogger })).not.toThrow();
  });

  it("new Runtime() refuses one instance at two places in the tree", () => {
    const a = new Probe("a");
    const error = thrown(() => new Runtime({ root: [a, new Supervisor("inner", { children: [a] })], logger: silentLogger }));
    expect(error.code).toBe("INVALID_ARGUMENT");
    expect(error.message).toContain("twice");
    expect(() => new Runtime({ root: [a], logger: silentLogger })).not.toThrow();
  });

  it("a list root is wrapped in a supervisor named root, which also takes part", () => {
    const error = thrown(() => new Runtime({ root: [new Probe("root")], logger: silentLogger })) as unknown as { code: string };
    expect(error.code).toBe("DUPLICATE_NAME");
  });
});

describe("RestartIntensity", () => {
  it("allows maxRestarts restarts within the window and refuses the next one", () => {
    const intensity = new RestartIntensity(2, 100);
    expect(intensity.record(0)).toBe(true);
    expect(intensity.record(50)).toBe(true);
    expect(intensity.record(99)).toBe(false);
  });

  it("forgets restarts that left the window", () => {
    const intensity = new RestartIntensity(2, 100);
    expect(intensity.record(0)).toBe(true);
    expect(intensity.record(50)).toBe(true);
    expect(intensity.count(100)).toBe(1);
    expect(intensity.record(100)).toBe(true);
    expect(intensity.count(149)).toBe(2);
    expect(intensity.count(150)).toBe(1);
    intensity.reset();
    expect(intensity.count(150)).toBe(0);
  });

  it("maxRestarts 0 refuses the first restart", () => {
    expect(new RestartIntensity(0, 1000).record(5)).toBe(false);
  });
});
