// Basic auth's password checks: bcrypt, one at a time, cached, newest first per client, and never
// for a client that has already gone.
//
// bcrypt is hash-wasm's WebAssembly build. The exporter runs V8 without its JavaScript compilers
// (startup/v8-flags.ts), and bcryptjs, plain JavaScript, then took 1.2 s of CPU per check at cost 10
// on the development machine (2.7-4 s on a loaded one) against 64 ms with the compilers on;
// WebAssembly is compiled whatever those flags say, and hash-wasm's check costs what bcrypt costs:
// 52 ms, like the native addons (`bcrypt` 50 ms, `@node-rs/bcrypt` 56 ms), without a native
// addon to ship beside a single executable or a .deb. Node's crypto has no bcrypt (nor Blowfish,
// without OpenSSL's legacy provider), and a worker thread runs under the same V8 flags (a worker
// refuses --opt and --sparkplug in its execArgv). Under --jitless there is no WebAssembly: bcryptjs
// then, at the interpreter's pace.
//
// A check runs on the main thread (about 50 ms at cost 10), one at a time. Between two checks the
// event loop turns until it has taken in the connections waiting to be accepted: libuv accepts
// one connection per turn (libuv#3696), so with one check per turn a flood of 100 connections kept
// the connection of a scrape that came after it in the kernel's queue for 100 checks. (A worker
// thread keeps the event loop free too, but is a second V8 isolate: 15 MiB more RSS while it ran
// on the demo host, 7.5 MiB of it still there after it ended, against a memory budget of 60.)
// Waiting checks are kept per client address and taken in turn across addresses,
// the newest of an address first: under a flood of wrong passwords, a scrape that arrives after it
// is checked next rather than after the flood, and a client elsewhere gets every other turn. A
// check whose client disconnected while it waited is skipped. Results are cached, so that
// Prometheus, which sends the same credentials every scrape, pays for one check, and so does a
// flood that repeats one wrong password.
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';

/** bcrypt's compare of a password with a hash: true when they match. */
export type BcryptCompare = (password: string, hash: string) => Promise<boolean>;

const require = createRequire(import.meta.url);

/**
 * The bcrypt of this process, loaded with the first check: only a file with basic_auth_users needs
 * it. hash-wasm refuses an empty password (bcrypt allows one: htpasswd -B makes its hash), which
 * goes to bcryptjs; more than bcrypt's 72 bytes is refused, as Go's bcrypt (exporter-toolkit)
 * refuses it.
 */
export function loadBcrypt(): BcryptCompare {
  const bcryptjs = require('bcryptjs') as { compare(password: string, hash: string): Promise<boolean> };
  if (typeof (globalThis as { WebAssembly?: unknown }).WebAssembly !== 'object')
    return (password, hash) => bcryptjs.compare(password, hash);
  const { bcryptVerify } = require('hash-wasm/dist/bcrypt.umd.min.js') as {
    bcryptVerify(options: { password: string; hash: string }): Promise<boolean>;
  };
  return (password, hash) => (password === '' ? bcryptjs.compare(password, hash) : bcryptVerify({ password, hash }));
}

// A bcrypt hash of a random string nobody knows: unknown users cost as much time as known ones.
const UNKNOWN_USER_HASH = '$2b$10$Bt7R08gnHTQXrM/3NtCh4.zkhApKepCGeyuU4bTe.0ofvjWw58kFu';
const MAX_CACHED = { good: 256, bad: 1024 } as const;

/** Who asked: checks are taken in turn across addresses; `gone()` when the client disconnected. */
export interface Client {
  address: string;
  gone(): boolean;
}

interface Waiting {
  client: Client;
  run: () => Promise<boolean>;
  settle: (result: boolean | undefined) => void;
}

export interface PasswordCheckOptions {
  /** bcrypt; by default loadBcrypt()'s, loaded with the first check. */
  compare?: BcryptCompare;
  /** Connections the server has accepted so far: between two checks the loop turns while it grows. */
  accepted?: () => number;
}

/** At most this many turns of the event loop between two checks, however fast connections come. */
const MAX_TURNS_BETWEEN_CHECKS = 1000;

export class PasswordChecks {
  private compare: BcryptCompare | undefined;
  private readonly good = new Set<string>();
  private readonly bad = new Set<string>();
  /** Checks waiting, per client address, oldest first; the map's order is the order of turns. */
  private readonly waiting = new Map<string, Waiting[]>();
  private running = false;
  private nextScheduled = false;
  /** Checks run and checks skipped because their client had gone (tests, bench). */
  readonly counts = { run: 0, skipped: 0 };

  private readonly accepted: () => number;

  constructor(options: PasswordCheckOptions = {}) {
    this.compare = options.compare;
    this.accepted = options.accepted ?? (() => 0);
  }

  /** Whether `password` is `user`'s in `users` (user name → bcrypt hash). */
  async verify(users: ReadonlyMap<string, string>, user: string, password: string, client: Client): Promise<boolean> {
    const hash = users.get(user);
    // The hash is part of the key: a user whose password changes in the web config is checked again.
    const key = createHash('sha256')
      .update(`${user}\0${hash ?? ''}\0${password}`)
      .digest('base64');
    if (this.good.has(key)) return true;
    if (this.bad.has(key)) return false;
    const matches = await this.schedule(client, async () => {
      this.compare ??= loadBcrypt();
      return (await this.compare(password, hash ?? UNKNOWN_USER_HASH).catch(() => false)) && hash !== undefined;
    });
    if (matches === undefined) return false;
    remember(matches ? this.good : this.bad, key, matches ? MAX_CACHED.good : MAX_CACHED.bad);
    return matches;
  }

  /** Runs `run` in the client's turn; undefined when the client had gone by then. */
  private schedule(client: Client, run: () => Promise<boolean>): Promise<boolean | undefined> {
    return new Promise((settle) => {
      const queue = this.waiting.get(client.address);
      if (queue) queue.push({ client, run, settle });
      else this.waiting.set(client.address, [{ client, run, settle }]);
      this.scheduleNext();
    });
  }

  /** Checks waiting for their turn. */
  get waitingCount(): number {
    let count = 0;
    for (const queue of this.waiting.values()) count += queue.length;
    return count;
  }

  /**
   * The next check starts once the event loop has turned twice, and then for as long as the server
   * accepted a connection in the last turn: the close of a client that sent its request and left at
   * once is read a turn after the request (libuv reads what a socket has, and finds its end on the
   * next turn), and the connections and requests that came meanwhile are taken in first.
   */
  private scheduleNext(): void {
    if (this.nextScheduled || this.running) return;
    this.nextScheduled = true;
    let turns = 0;
    let accepted = this.accepted();
    const turn = (): void => {
      turns += 1;
      const now = this.accepted();
      if (turns < 2 || (now !== accepted && turns < MAX_TURNS_BETWEEN_CHECKS)) {
        accepted = now;
        setImmediate(turn);
        return;
      }
      this.nextScheduled = false;
      this.next();
    };
    setImmediate(turn);
  }

  private next(): void {
    if (this.running) return;
    for (;;) {
      const waiting = this.take();
      if (!waiting) return;
      if (waiting.client.gone()) {
        this.counts.skipped += 1;
        waiting.settle(undefined);
        continue;
      }
      this.running = true;
      this.counts.run += 1;
      void waiting
        .run()
        .then(waiting.settle, () => waiting.settle(false))
        .finally(() => {
          this.running = false;
          this.scheduleNext();
        });
      return;
    }
  }

  /** The newest check of the address whose turn it is; that address goes to the back of the line. */
  private take(): Waiting | undefined {
    const first = this.waiting.entries().next();
    if (first.done) return undefined;
    const [address, queue] = first.value;
    const waiting = queue.pop()!;
    this.waiting.delete(address);
    if (queue.length > 0) this.waiting.set(address, queue);
    return waiting;
  }
}

/** Add to a bounded cache, forgetting the oldest entry when it is full. */
function remember(cache: Set<string>, key: string, max: number): void {
  if (cache.size >= max) cache.delete(cache.values().next().value!);
  cache.add(key);
}
