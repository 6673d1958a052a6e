/**
 * `npm run demo:inbox`: a runtime (from examples/inbox/topology.yaml) with
 * two held payments and two paused agents, and the approver inbox serving
 * them at http://127.0.0.1:8080/ (PORT to change it). Sign in as ana, ben or
 * carol with the password "demo". Ctrl-C stops it.
 */
import { startInboxDemo, USERS } from "./demo.js";

const demo = await startInboxDemo(Number(process.env.PORT ?? 8080));
console.log(`inbox: ${demo.inbox.url} (sign in as ${USERS.join(", ")}; password: demo)`);
console.log("held: 2 payments (finance, then cfo); paused: payer-eu, payer-us");
const stop = (): void => {
  void demo.stop().then(() => process.exit(0));
};
process.once("SIGINT", stop);
process.once("SIGTERM", stop);
