// The simulator's extensions for pic-js: mainnet's latency, seeded faults
// and their report, on an instance of this project's simulator
// (`multi_subnet serve`, or `pocket-ic-sim`), which serves PocketIC's REST
// API and, beside it, endpoints of its own under /instances/<id>/_/.
// The JSON bodies are ic-sim-client's (sim_client/src/api.rs); canister and
// subnet ids may be given as Principals.
//
//   import { PocketIc } from "@dfinity/pic";
//   import { simulator } from "./simulator.mjs";
//   const pic = await PocketIc.create(url);
//   const sim = simulator(pic, url);
//   await sim.setLatency({ profile: "mainnet" });
//   await sim.injectFaults({ seed: 7, traps: [{ canister: callee, chance: 0.1 }] });
//   // ... the test's calls ...
//   const report = await sim.faultsReport();
//
// pic-js has no extension hook: this reads the instance's id where pic-js
// keeps it (`pic.client.instanceId`) and fails at once if it is not there.

/** The extensions of `pic`'s instance on the server at `serverUrl`. */
export function simulator(pic, serverUrl) {
  const id = pic?.client?.instanceId;
  if (!Number.isInteger(id)) {
    throw new Error("no instance id at pic.client.instanceId: this pic-js keeps it elsewhere");
  }
  const endpoint = (name) => new URL(`instances/${id}/_/${name}`, serverUrl.endsWith("/") ? serverUrl : `${serverUrl}/`);
  const send = async (method, name, body) => {
    const url = endpoint(name);
    const answer = await fetch(url, {
      method,
      headers: body === undefined ? {} : { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body, principalsAsText),
    });
    const text = await answer.text();
    if (answer.status === 404 && !text.startsWith("{")) {
      throw new Error(`${url} is not served: only this project's simulator serves it, not PocketIC`);
    }
    if (!answer.ok) {
      let message = text;
      try { message = JSON.parse(text).message; } catch { /* the text as it came */ }
      throw new Error(`${url} refused it (${answer.status}): ${message}`);
    }
    return text === "" ? undefined : JSON.parse(text);
  };
  return {
    /** `{ profile, xnet_latency_rounds }`. */
    latency: () => send("GET", "latency"),
    /** `{ profile: "mainnet" | "pocket-ic" }` or `{ xnet_latency_rounds: n }`. */
    setLatency: (latency) => send("POST", "latency", latency),
    /** A fault spec: seed, traps, drop_best_effort_responses, stalls, events; rounds from now. */
    injectFaults: (spec) => send("POST", "faults", spec),
    clearFaults: () => send("DELETE", "faults"),
    /** `{ log, dropped_responses, canisters: [{ canister, traps, calls_performed, calls_refused, rejects_received, calls_to: [{ callee, calls_performed, rejects_received }] }], outstanding }`. */
    faultsReport: () => send("GET", "faults"),
  };
}

// A Principal (anything with toText) as its text, as the endpoints read ids.
// `this[key]` is the value before its own toJSON, which a Principal has.
function principalsAsText(key, value) {
  const original = this[key];
  return original && typeof original === "object" && typeof original.toText === "function" ? original.toText() : value;
}
