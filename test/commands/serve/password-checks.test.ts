// Password checks: the bcrypt the exporter runs (hash-wasm), then the scheduling with a bcrypt
// stand-in whose checks finish when the test says so: one at a time, cached, newest first per
// client address, in turn across addresses, and none for a client that has gone.
import { execFileSync } from 'node:child_process';
import bcryptjs from 'bcryptjs';
import { describe, expect, it } from 'vitest';
import { PasswordChecks, loadBcrypt, type Client } from '../../../src/commands/serve/password-checks.js';
import { buildOnce, PROJECT } from '../../support/built.js';

describe('bcrypt', () => {
  const hash = bcryptjs.hashSync('right', 4);

  it.each([
    ['$2y$', 'htpasswd'],
    ['$2a$', 'older tools'],
    ['$2b$', 'bcryptjs and OpenBSD'],
  ])('%s hashes (%s) verify', async (prefix) => {
    const compare = loadBcrypt();
    const variant = hash.replace(/^\$2b\$/, prefix);
    expect(await compare('right', variant)).toBe(true);
    expect(await compare('wrong', variant)).toBe(false);
    expect(await compare('', variant)).toBe(false);
  });

  it("verifies an empty password (htpasswd makes one) and refuses one past bcrypt's 72 bytes, as Go's bcrypt does", async () => {
    const compare = loadBcrypt();
    expect(await compare('', bcryptjs.hashSync('', 4))).toBe(true);
    expect(await compare('x', bcryptjs.hashSync('', 4))).toBe(false);
    const long = 'p'.repeat(80);
    await expect(compare(long, bcryptjs.hashSync(long, 4))).rejects.toThrow(/72 bytes/);
  });

  it('is bcryptjs where V8 has no WebAssembly (--jitless), with the same answers', () => {
    buildOnce();
    const script = `
      import { loadBcrypt } from './dist/commands/serve/password-checks.js';
      const compare = loadBcrypt();
      console.log(JSON.stringify({ wasm: typeof WebAssembly, right: await compare('right', ${JSON.stringify(hash)}), wrong: await compare('wrong', ${JSON.stringify(hash)}) }));
    `;
    const output = execFileSync(process.execPath, ['--jitless', '--input-type=module', '-e', script], { cwd: PROJECT, encoding: 'utf8' });
    expect(JSON.parse(output)).toEqual({ wasm: 'undefined', right: true, wrong: false });
  });
});

/** A bcrypt stand-in: each check waits until released; `started` lists the passwords in order. */
function standIn() {
  const started: string[] = [];
  const pending: (() => void)[] = [];
  const compare = (password: string, hash: string) => {
    started.push(password);
    return new Promise<boolean>((resolve) => pending.push(() => resolve(hash === `hash-of-${password}`)));
  };
  /** Finish the check in progress and let the next one start. */
  const release = async (): Promise<void> => {
    pending.shift()?.();
    await turns();
  };
  return { compare, started, release, inFlight: () => pending.length };
}

const USERS = new Map([['prometheus', 'hash-of-right']]);

/** Enough turns of the event loop for a check scheduled now to start (it waits for two). */
async function turns(): Promise<void> {
  for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
}

function client(address = '10.0.0.1'): Client & { leave(): void } {
  let gone = false;
  return { address, gone: () => gone, leave: () => (gone = true) };
}

describe('scheduling', () => {
  it('runs one check at a time', async () => {
    const bcrypt = standIn();
    const checks = new PasswordChecks({ compare: bcrypt.compare });
    const answers = Array.from({ length: 5 }, (_, i) => checks.verify(USERS, 'prometheus', `wrong-${i}`, client()));
    await turns();
    expect(bcrypt.started).toHaveLength(1);
    expect(bcrypt.inFlight()).toBe(1);
    for (let i = 0; i < 5; i++) {
      expect(bcrypt.inFlight()).toBe(1);
      await bcrypt.release();
    }
    expect(await Promise.all(answers)).toEqual([false, false, false, false, false]);
    expect(bcrypt.started).toHaveLength(5);
  });

  it('after a flood of wrong passwords from one client, a scrape from the same address is checked next', async () => {
    const bcrypt = standIn();
    const checks = new PasswordChecks({ compare: bcrypt.compare });
    const flood = Array.from({ length: 100 }, (_, i) => checks.verify(USERS, 'prometheus', `wrong-${i}`, client('127.0.0.1')));
    await turns();
    // The newest first: the flood was all there when the first check started.
    expect(bcrypt.started).toEqual(['wrong-99']);
    const scrape = checks.verify(USERS, 'prometheus', 'right', client('127.0.0.1'));
    expect(checks.waitingCount).toBe(100);
    await bcrypt.release();
    // The one in progress when the scrape came, then the scrape.
    expect(bcrypt.started).toEqual(['wrong-99', 'right']);
    await bcrypt.release();
    expect(await scrape).toBe(true);
    // The flood goes on behind it, newest first.
    expect(bcrypt.started.at(-1)).toBe('wrong-98');
    while (bcrypt.inFlight() > 0) await bcrypt.release();
    expect((await Promise.all(flood)).every((answer) => answer === false)).toBe(true);
    expect(checks.counts).toEqual({ run: 101, skipped: 0 });
    expect(checks.waitingCount).toBe(0);
  });

  it('takes addresses in turn: a flood from one address leaves every other turn to the others', async () => {
    const bcrypt = standIn();
    const checks = new PasswordChecks({ compare: bcrypt.compare });
    const flood = Array.from({ length: 10 }, (_, i) => checks.verify(USERS, 'prometheus', `wrong-${i}`, client('10.0.0.66')));
    await turns();
    const others = [
      checks.verify(USERS, 'prometheus', 'right', client('10.0.0.1')),
      checks.verify(USERS, 'nobody', 'x', client('10.0.0.2')),
    ];
    for (let i = 0; i < 4; i++) await bcrypt.release();
    // .66 waited first, then .1, then .2; each goes to the back of the line after its turn.
    expect(bcrypt.started.slice(0, 5)).toEqual(['wrong-9', 'wrong-8', 'right', 'x', 'wrong-7']);
    expect(await Promise.all(others)).toEqual([true, false]);
    while (bcrypt.inFlight() > 0) await bcrypt.release();
    await Promise.all(flood);
  });

  it('skips the checks of clients that disconnected while they waited', async () => {
    const bcrypt = standIn();
    const checks = new PasswordChecks({ compare: bcrypt.compare });
    const clients = Array.from({ length: 100 }, () => client('127.0.0.1'));
    const flood = clients.map((who, i) => checks.verify(USERS, 'prometheus', `wrong-${i}`, who));
    await turns();
    for (const who of clients) who.leave();
    const scrape = checks.verify(USERS, 'prometheus', 'right', client('127.0.0.1'));
    await bcrypt.release();
    await bcrypt.release();
    expect(await scrape).toBe(true);
    expect(await Promise.all(flood)).toEqual(Array(100).fill(false));
    // Only the check that had started before its client left ran.
    expect(bcrypt.started).toEqual(['wrong-99', 'right']);
    expect(checks.counts).toEqual({ run: 2, skipped: 99 });
  });

  it('does not start a check before the event loop has turned: a client that left at once is skipped', async () => {
    const bcrypt = standIn();
    const checks = new PasswordChecks({ compare: bcrypt.compare });
    const who = client();
    const answer = checks.verify(USERS, 'prometheus', 'wrong', who);
    // Its close arrived with its request, read in the same turn of the event loop.
    who.leave();
    expect(await answer).toBe(false);
    expect(bcrypt.started).toEqual([]);
    expect(checks.counts).toEqual({ run: 0, skipped: 1 });
  });

  it('lets the server take in the connections waiting to be accepted before a check starts', async () => {
    const bcrypt = standIn();
    // One more connection at each of the next 10 turns (libuv accepts one per turn), then none.
    let accepted = 0;
    let looks = 0;
    const checks = new PasswordChecks({ compare: bcrypt.compare, accepted: () => (looks++ < 10 ? ++accepted : accepted) });
    const answer = checks.verify(USERS, 'prometheus', 'right', client());
    await turns();
    expect(bcrypt.started).toEqual([]);
    for (let i = 0; i < 10; i++) await turns();
    expect(bcrypt.started).toEqual(['right']);
    await bcrypt.release();
    expect(await answer).toBe(true);
  });

  it('lets the event loop turn between two checks', async () => {
    const order: string[] = [];
    const checks = new PasswordChecks({
      compare: async (password) => {
        order.push(`check ${password}`);
        if (password === 'a') setImmediate(() => order.push('a request read meanwhile'));
        return false;
      },
    });
    await Promise.all([checks.verify(USERS, 'prometheus', 'a', client()), checks.verify(USERS, 'prometheus', 'b', client('10.0.0.2'))]);
    expect(order).toEqual(['check a', 'a request read meanwhile', 'check b']);
  });
});

describe('cache', () => {
  it('checks a good login once, and again only when its hash changes in the web config', async () => {
    const bcrypt = standIn();
    const checks = new PasswordChecks({
      compare: async (password, hash) => (bcrypt.started.push(password), hash === `hash-of-${password}`),
    });
    for (let i = 0; i < 3; i++) expect(await checks.verify(USERS, 'prometheus', 'right', client())).toBe(true);
    expect(bcrypt.started).toEqual(['right']);
    expect(await checks.verify(new Map([['prometheus', 'hash-of-new']]), 'prometheus', 'right', client())).toBe(false);
    expect(await checks.verify(new Map([['prometheus', 'hash-of-new']]), 'prometheus', 'new', client())).toBe(true);
    // A user removed from the file is refused, cache or not.
    expect(await checks.verify(new Map(), 'prometheus', 'right', client())).toBe(false);
    expect(bcrypt.started).toEqual(['right', 'right', 'new', 'right']);
  });

  it('checks a repeated wrong password once; an unknown user costs a check like a known one', async () => {
    const hashes: string[] = [];
    const checks = new PasswordChecks({ compare: async (_password, hash) => (hashes.push(hash), false) });
    for (let i = 0; i < 50; i++) expect(await checks.verify(USERS, 'prometheus', 'wrong', client())).toBe(false);
    expect(await checks.verify(USERS, 'nobody', 'right', client())).toBe(false);
    expect(hashes).toHaveLength(2);
    expect(hashes[1]).toMatch(/^\$2b\$10\$/);
  });
});
