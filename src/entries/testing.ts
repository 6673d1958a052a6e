export { TestClock, settle } from "../testing/test-clock.js";
export { waitForStatus, WaitTimeoutError } from "../testing/wait-for-status.js";
export type { WaitForStatusOptions } from "../testing/wait-for-status.js";
