import { describe, expect, it } from "vitest";
import { assertValidName, Registry } from "../../src/bus/registry.js";
import { AgentProcess, DuplicateNameError, InvalidArgumentError, Supervisor } from "../../src/index.js";
import type { SupervisedChild } from "../../src/contracts/child.js";
import { throwsWithCode } from "../support/outcome.js";

function agent(name: string, capabilities: string[] = []): AgentProcess {
  return new AgentProcess(name, { capabilities });
}

/** A stand-in that skips the constructors' own name checks, so the registry's are what is tested. */
function fakeAgent(name: string): AgentProcess {
  return { name, capabilities: [] } as unknown as AgentProcess;
}

function fakeSupervisor(name: string): SupervisedChild {
  return { name } as unknown as SupervisedChild;
}

function names(agents: readonly (AgentProcess | undefined)[]): (string | undefined)[] {
  return agents.map((a) => a?.name);
}

describe("Registry names", () => {
  it("refuses a second registration of the same name with DUPLICATE_NAME", () => {
    const registry = new Registry<AgentProcess, SupervisedChild>();
    registry.register(agent("alpha"));
    const error = throwsWithCode(() => registry.register(agent("alpha")), "DUPLICATE_NAME");
    expect(error).toBeInstanceOf(DuplicateNameError);
    expect((error as DuplicateNameError).agent).toBe("alpha");
    expect(error.message).toContain("'alpha'");
    // the first registration is untouched
    expect(registry.get("alpha")?.name).toBe("alpha");
    expect(registry.all()).toHaveLength(1);
  });

  it("shares one namespace between supervisors and agents", () => {
    const registry = new Registry<AgentProcess, SupervisedChild>();
    const root = new Supervisor("root", { children: [] });
    registry.registerSupervisor(root);
    throwsWithCode(() => registry.register(agent("root")), "DUPLICATE_NAME");
    throwsWithCode(() => registry.registerSupervisor(new Supervisor("root", { children: [] })), "DUPLICATE_NAME");
    registry.register(agent("worker"));
    throwsWithCode(() => registry.registerSupervisor(new Supervisor("worker", { children: [] })), "DUPLICATE_NAME");
    expect(registry.has("root")).toBe(true);
    expect(registry.supervisor("root")).toBe(root);
    // a supervisor is not an agent
    expect(registry.get("root")).toBeUndefined();
    expect(registry.supervisor("worker")).toBeUndefined();
  });

  it.each([
    ["", "empty"],
    ["has space", "whitespace"],
    ["tab\there", "a tab"],
    ["new\nline", "a newline"],
    ["star*", "a star"],
    ["question?", "a question mark"],
    ["open[", "an opening bracket"],
    ["close]", "a closing bracket"],
    ["x".repeat(256), "256 characters"],
  ])("refuses the name %j (%s) with INVALID_ARGUMENT", (name) => {
    const registry = new Registry<AgentProcess, SupervisedChild>();
    const error = throwsWithCode(() => registry.register(fakeAgent(name)), "INVALID_ARGUMENT");
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect((error as InvalidArgumentError).argument).toBe("name");
    throwsWithCode(() => registry.registerSupervisor(fakeSupervisor(name)), "INVALID_ARGUMENT");
    expect(registry.has(name)).toBe(false);
    expect(registry.all()).toHaveLength(0);
  });

  it("refuses names that are not strings", () => {
    for (const bad of [undefined, null, 42, {}, ["a"]]) {
      throwsWithCode(() => assertValidName(bad, "agent"), "INVALID_ARGUMENT");
    }
  });

  it("accepts names up to 255 characters with punctuation that is not glob syntax", () => {
    const registry = new Registry<AgentProcess, SupervisedChild>();
    for (const name of ["x".repeat(255), "a.b-c_d:e/f", "héllo", "!bang", "^caret", "back\\slash", "😀"]) {
      expect(() => registry.register(fakeAgent(name))).not.toThrow();
      expect(registry.has(name)).toBe(true);
    }
  });
});

describe("Registry.adopt (a checked tree's names, taken whole)", () => {
  it("registers each adopted member once, keeps the tree's order, and refuses another instance under an adopted name", () => {
    const registry = new Registry<AgentProcess, SupervisedChild>();
    const root = new Supervisor("root", { children: [] });
    const a = agent("a", ["worker"]);
    const b = agent("b");
    registry.adopt(new Map([["a", a], ["b", b]]), new Map([["root", root]]));
    registry.registerSupervisor(root);
    registry.register(b);
    registry.register(a);
    registry.adopted();
    expect(names(registry.all()), "the adopted order, not the order they registered in").toEqual(["a", "b"]);
    const c = agent("c", ["worker"]);
    registry.register(c);
    const turns = [registry.withCapability("worker"), registry.withCapability("worker"), registry.withCapability("worker")];
    expect(names(turns), "an adopted agent's capabilities are recorded as it registers, once").toEqual(["a", "c", "a"]);
    throwsWithCode(() => registry.register(agent("a")), "DUPLICATE_NAME");
    throwsWithCode(() => registry.register(agent("root")), "DUPLICATE_NAME");
    throwsWithCode(() => registry.registerSupervisor(new Supervisor("b", { children: [] })), "DUPLICATE_NAME");
    expect(registry.get("a")).toBe(a);
    expect(() => registry.adopt(new Map(), new Map())).toThrow("empty registry");
  });
});

describe("Registry lookups", () => {
  function populated(): Registry<AgentProcess, SupervisedChild> {
    const registry = new Registry<AgentProcess, SupervisedChild>();
    for (const name of ["worker-1", "worker-2", "worker-10", "manager", "worker-a", "w!x"]) registry.register(agent(name));
    return registry;
  }

  it.each([
    ["worker-*", ["worker-1", "worker-2", "worker-10", "worker-a"]],
    ["worker-?", ["worker-1", "worker-2", "worker-a"]],
    ["worker-??", ["worker-10"]],
    ["worker-[12]", ["worker-1", "worker-2"]],
    ["worker-[!12]", ["worker-a"]],
    ["worker-[0-9]", ["worker-1", "worker-2"]],
    ["w!x", ["w!x"]],
    ["*", ["worker-1", "worker-2", "worker-10", "manager", "worker-a", "w!x"]],
    ["*er", ["manager"]],
    ["manager*", ["manager"]],
    ["nobody*", []],
    ["worker", []],
  ])("match(%j) finds exactly the matching agents, in registration order", (pattern, expected) => {
    expect(names(populated().match(pattern))).toEqual(expected);
  });

  it("finds agents by capability round-robin, skipping those without it", () => {
    const registry = new Registry<AgentProcess, SupervisedChild>();
    registry.register(agent("a", ["search"]));
    registry.register(agent("b", ["search", "summarize"]));
    registry.register(agent("c", ["summarize"]));
    expect(names([1, 2, 3, 4, 5].map(() => registry.withCapability("search")))).toEqual(["a", "b", "a", "b", "a"]);
    expect(names([1, 2, 3].map(() => registry.withCapability("summarize")))).toEqual(["b", "c", "b"]);
    expect(registry.withCapability("translate")).toBeUndefined();
  });

  it("release frees the name and the agent's capabilities", () => {
    const registry = new Registry<AgentProcess, SupervisedChild>();
    registry.register(agent("a", ["search"]));
    registry.register(agent("b", ["search"]));
    registry.register(agent("solo", ["unique"]));
    registry.release("a");
    expect(registry.has("a")).toBe(false);
    expect(registry.get("a")).toBeUndefined();
    expect(names(registry.all())).toEqual(["b", "solo"]);
    expect(names([1, 2, 3].map(() => registry.withCapability("search")))).toEqual(["b", "b", "b"]);
    registry.release("solo");
    expect(registry.withCapability("unique")).toBeUndefined();
    expect(names(registry.match("*"))).toEqual(["b"]);
    // the name can be taken again, by a new agent with other capabilities
    const again = agent("a", ["other"]);
    registry.register(again);
    expect(registry.get("a")).toBe(again);
    expect(registry.withCapability("other")).toBe(again);
  });

  it("find and get agree with the registrations whatever was found last: a release or a re-registration is seen at once", () => {
    const registry = new Registry<AgentProcess, SupervisedChild>();
    const first = agent("a");
    const other = agent("b");
    registry.register(first);
    registry.register(other);
    expect(registry.find("a")).toBe(first);
    expect(registry.get("a")).toBe(first);
    expect(registry.get("b")).toBe(other);
    expect(registry.find("nobody")).toBeUndefined();
    expect(registry.get("a")).toBe(first);
    registry.release("a");
    expect(registry.get("a")).toBeUndefined();
    expect(registry.find("a")).toBeUndefined();
    const again = agent("a");
    registry.register(again);
    expect(registry.get("a")).toBe(again);
    expect(registry.find("b")).toBe(other);
    registry.release("b");
    expect(registry.get("b")).toBeUndefined();
    expect(registry.get("a")).toBe(again);
  });

  it("release frees a supervisor's reserved name, and ignores unknown names", () => {
    const registry = new Registry<AgentProcess, SupervisedChild>();
    registry.registerSupervisor(new Supervisor("sup", { children: [] }));
    registry.release("sup");
    registry.release("never-registered");
    expect(registry.has("sup")).toBe(false);
    expect(registry.supervisor("sup")).toBeUndefined();
    expect(() => registry.registerSupervisor(new Supervisor("sup", { children: [] }))).not.toThrow();
    expect(registry.has("sup")).toBe(true);
  });
});
