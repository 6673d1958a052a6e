import { AgentProcess, type Message } from "../../src/index.js";

/** Replies to every message with its payload plus `from: <name>`; records what it handled. */
export class Echo extends AgentProcess {
  readonly handled: Message[] = [];
  override async handle(message: Message): Promise<Message> {
    this.handled.push(message);
    return this.reply({ ...message.payload, from: this.name });
  }
}

/** Records every message and never replies. */
export class Silent extends AgentProcess {
  readonly handled: Message[] = [];
  override async handle(message: Message): Promise<void> {
    this.handled.push(message);
  }
}

/** Polls `condition` on real timers until it holds; fails the test after `timeoutMs`. */
export async function eventually(condition: () => boolean, what = "condition", timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

/** Lets queued promise callbacks and one turn of the event loop run, `turns` times. */
export async function turns(count = 5): Promise<void> {
  for (let i = 0; i < count; i++) await new Promise((resolve) => setImmediate(resolve));
}
