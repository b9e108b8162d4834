// What a user does in Chromium after `icp deploy` on this project's local
// network: opens the live view, then the Candid UI link icp-cli printed for
// the caller, calls `parallel_calls` with each n given, and opens the
// frontend canister's page. Prints what the pages showed as JSON and saves
// a screenshot of each page.
//
// Usage: node example_in_chromium.mjs CANDID_UI_LINK LIVE_VIEW_URL FRONTEND_URL SCREENSHOT_DIR N...
// PLAYWRIGHT_CORE names the playwright-core module (scripts/setup.sh
// installs it in .tools); the browser is Debian's Chromium.
const { chromium } = await import(process.env.PLAYWRIGHT_CORE);
const [candidUi, liveView, frontend, screenshots, ...calls] = process.argv.slice(2);

// The reply the output log shows after its `before` lines; a reject, which
// the Candid UI shows in the method's box instead, fails with its message.
async function reply(method, lines, before) {
  for (const started = Date.now(); Date.now() - started < 120_000; ) {
    if ((await lines.count()) >= before + 2) return lines.nth(before + 1).innerText();
    const box = await method.innerText();
    if (box.includes('Reject message')) throw new Error(`the call was rejected: ${box}`);
    await new Promise(resolve => setTimeout(resolve, 100));
  }
  throw new Error('no reply within 120 s');
}

const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium' });
// What the pages logged, to show if a step fails.
const logged = [];
try {
  const context = await browser.newContext({ viewport: { width: 1200, height: 760 } });
  // The Candid UI loads fonts and styles from CDNs, which are out of reach
  // offline: refuse them at once rather than wait for each to time out.
  await context.route(/^https?:\/\/(?!(?:[a-z0-9-]+\.)*localhost[:/]|127\.0\.0\.1[:/])/, route => route.abort());

  context.on('console', message => logged.push(`${message.type()}: ${message.text()}`));
  const live = await context.newPage();
  await live.goto(liveView);

  const ui = await context.newPage();
  await ui.goto(candidUi);
  const method = ui.locator('li', { has: ui.locator('.signature', { hasText: 'parallel_calls:' }) });
  const lines = ui.locator('#output-list .output-line');
  const replies = {};
  for (const n of calls) {
    // Each call adds two lines to the output log: the call, then its reply.
    const before = await lines.count();
    await method.locator('input').first().fill(n);
    await method.getByRole('button', { name: 'Call' }).click();
    replies[n] = await reply(method, lines, before);
  }
  await ui.screenshot({ path: `${screenshots}/candid-ui.png` });

  // The live view polls every 100 ms: give it the last rounds.
  await live.waitForTimeout(1000);
  const peak = await live.locator('#peak').innerText();
  // What went wrong, per canister: the calls past the 500 slots were refused.
  const refused = await live.locator('#fault-canisters td:nth-child(4)').allInnerTexts();
  const refusedPerPair = await live.locator('#fault-pairs td:nth-child(4)').allInnerTexts();
  const liveError = await live.locator('#error').innerText();
  await live.screenshot({ path: `${screenshots}/live-view.png` });

  const page = await context.newPage();
  const response = await page.goto(frontend);
  const title = await page.locator('#title').innerText();
  await page.screenshot({ path: `${screenshots}/frontend.png` });

  console.log(JSON.stringify({ replies, peak, refused, refusedPerPair, liveError, frontend: { status: response.status(), title } }));
} catch (error) {
  console.error(logged.join('\n'));
  throw error;
} finally {
  await browser.close();
}
