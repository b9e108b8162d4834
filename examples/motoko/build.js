// Compiles a Motoko canister with the Motoko compiler from npm (`motoko`,
// which ships moc as JavaScript and the core library), as moc builds it by
// default: `node build.js <source.mo> <out.wasm>`; `scripts/setup.sh`
// installs the package into .tools (run with NODE_PATH=.tools/node_modules).
const fs = require('fs');
const mo = require('motoko');
const [source, out] = process.argv.slice(2);
if (!source || !out) {
  console.error('usage: node build.js <source.mo> <out.wasm>');
  process.exit(2);
}
mo.loadPackage(require('motoko/packages/latest/core.json'));
mo.write('Main.mo', fs.readFileSync(source, 'utf8'));
try {
  fs.writeFileSync(out, mo.wasm('Main.mo', 'ic').wasm);
} catch (e) {
  const diagnostics = mo.check('Main.mo').filter((d) => d.severity === 1);
  const lines = diagnostics.map((d) => `${source}:${d.range.start.line + 1}: ${d.message}`);
  console.error(lines.length ? lines.join('\n') : `${source}: ${e.message || e}`);
  process.exit(1);
}
