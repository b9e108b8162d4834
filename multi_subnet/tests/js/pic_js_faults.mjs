// pic-js (npm's @dfinity/pic, which scripts/setup.sh installs; its root in
// $PIC_JS) on the simulator behind PocketIC's REST API, with the
// simulator's extensions through sim_client/js/simulator.mjs: the callee
// traps on every 2nd execution, so 5 of the caller's 10 sequential calls
// fail, and the report accounts for each; turned off, all 10 succeed.
// Prints what it saw as JSON.
//
//   PIC_JS=.tools/node_modules/@dfinity/pic node pic_js_faults.mjs URL CALLER_WASM CALLEE_WASM

import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { simulator } from "../../../sim_client/js/simulator.mjs";

const [url, callerWasm, calleeWasm] = process.argv.slice(2);
const { PocketIc } = await import(pathToFileURL(join(process.env.PIC_JS, "dist/index.js")));

const pic = await PocketIc.create(url);
const callee = await pic.setupCanister({
  idlFactory: ({ IDL }) => IDL.Service({ pings_received: IDL.Func([], [IDL.Nat64], ["query"]) }),
  wasm: calleeWasm,
});
const caller = await pic.setupCanister({
  idlFactory: ({ IDL }) =>
    IDL.Service({
      setup_callee: IDL.Func([IDL.Principal], [], []),
      sequential_calls: IDL.Func([IDL.Nat64], [IDL.Nat64], []),
    }),
  wasm: callerWasm,
});
await caller.actor.setup_callee(callee.canisterId);
const succeeded = async () => Number(await caller.actor.sequential_calls(10n));

const sim = simulator(pic, url);
const before = await succeeded();
await sim.injectFaults({ traps: [{ canister: callee.canisterId, every: 2 }] });
const withTraps = await succeeded();
const report = await sim.faultsReport();
const of = (id) => report.canisters.find((c) => c.canister === id.toText());
await sim.clearFaults();
const after = await succeeded();
let refused;
try {
  await sim.injectFaults({ drop_best_effort_responses: 2 });
} catch (e) {
  refused = e.message;
}
await pic.tearDown();

console.log(JSON.stringify({
  before,
  withTraps,
  calleeTraps: of(callee.canisterId).traps,
  callerRejects: of(caller.canisterId).rejects_received,
  outstanding: report.outstanding,
  after,
  refused,
}));
