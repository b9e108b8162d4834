// What a JavaScript app's first requests to a network meet: agent-js
// (npm's @icp-sdk/core, which scripts/setup.sh installs; its root in
// $AGENT_JS) queries a ledger, its response's signature checked against
// the subnet's node keys, then reads the state's time, its certificate
// (and the root's delegation to the subnet) verified as agent-js verifies
// them. Prints what it read as JSON; a refusal ends it with the agent's
// message on stderr.
//
//   AGENT_JS=.tools/node_modules/@icp-sdk/core node agent_js_first_requests.mjs URL ROOT_KEY_HEX LEDGER_ID

import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [host, rootKeyHex, ledgerId] = process.argv.slice(2);
const lib = (module) => import(pathToFileURL(join(process.env.AGENT_JS, "lib/esm", module, "index.js")));
const { Actor, Certificate, HttpAgent, lookupResultToBuffer } = await lib("agent");
const { Principal } = await lib("principal");

const rootKey = Uint8Array.from(Buffer.from(rootKeyHex, "hex"));
const agent = await HttpAgent.create({ host, rootKey, shouldFetchRootKey: false, verifyQuerySignatures: true });
const canisterId = Principal.fromText(ledgerId);

const ledger = Actor.createActor(
  ({ IDL }) => IDL.Service({ icrc1_symbol: IDL.Func([], [IDL.Text], ["query"]) }),
  { agent, canisterId },
);
const symbol = await ledger.icrc1_symbol();

const time = new TextEncoder().encode("time");
const { certificate } = await agent.readState(canisterId, { paths: [[time]] });
const verified = await Certificate.create({ certificate, rootKey, principal: { canisterId } });
const leb = lookupResultToBuffer(verified.lookup_path([time]));
let nanos = 0n;
for (const [i, byte] of [...leb].entries()) nanos |= BigInt(byte & 0x7f) << BigInt(7 * i);

console.log(JSON.stringify({ symbol, certified_time_ms: Number(nanos / 1_000_000n), now_ms: Date.now() }));
