// The server under test: `src/main.ts` as a child process (pinned to core 0 when possible), and a
// small client for the calls the bench makes outside autocannon.

import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';

export const PARTITION = 'bench';
const ADMIN = 'admin';
const PASSWORD = 'bench-password-1';
const ROOT = new URL('../../', import.meta.url);

export interface Server {
  readonly url: string;
  /** `/service/bench`. */
  readonly base: string;
  /** The server's node process (taskset execs it, so the child's pid is node's). */
  readonly pid: number;
  output(): string;
  stop(): Promise<void>;
}

/** A free port picked here: at LOG_LEVEL=warn the server does not log the port it got for PORT=0. */
async function freePort(): Promise<number> {
  const s = createServer();
  s.listen(0, '127.0.0.1');
  await once(s, 'listening');
  const { port } = s.address() as { port: number };
  s.close();
  await once(s, 'close');
  return port;
}

export async function startServer(dbEnv: Record<string, string>, pin: boolean): Promise<Server> {
  const port = await freePort();
  const env = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    PORT: String(port),
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn',
    BOOTSTRAP_PARTITIONS: PARTITION,
    BOOTSTRAP_ADMIN: ADMIN,
    BOOTSTRAP_PASSWORD: PASSWORD,
    SCRYPT_COST: '16384',
    // The file-load workload's synchronous load of a large file must not be cut at the default 180 s.
    SYNC_TIMEOUT_SECONDS: '3600',
    // Record history is on by default (every write also writes its history rows); BENCH_RECORD_HISTORY=false
    // measures the engine without it.
    RECORD_HISTORY: process.env.BENCH_RECORD_HISTORY ?? 'true',
    ...dbEnv,
  };
  // BENCH_SERVER_NODE_ARGS: extra node flags for the server, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`.
  const extra = (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter((a) => a !== '');
  const main = [process.execPath, ...extra, 'src/main.ts'];
  const [cmd, args] = pin ? ['taskset', ['-c', '0', ...main]] : [process.execPath, main.slice(1)];
  const child = spawn(cmd, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const keep = (d: Buffer) => (out = (out + d.toString()).slice(-20_000));
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  if (child.pid === undefined) throw new Error(`could not start ${cmd}`);
  const url = `http://127.0.0.1:${port}`;
  const server: Server = {
    url,
    base: `${url}/service/${PARTITION}`,
    pid: child.pid,
    output: () => out,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    },
  };
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}:\n${out}`);
    const ready = await fetch(`${url}/ready`).then(
      (r) => r.ok,
      () => false,
    );
    if (ready) return server;
    await new Promise((r) => setTimeout(r, 100));
  }
  await server.stop();
  throw new Error(`server did not become ready:\n${out}`);
}

/** The part of the response envelope the bench reads. */
export interface Envelope {
  readonly response?: { readonly status?: number; readonly totalRows?: number; readonly data?: unknown };
}

export interface Reply {
  readonly status: number;
  readonly headers: Headers;
  readonly body: Envelope;
  readonly text: string;
}

/** POST `body` (a JSON string) to `url`; answers the status and the parsed envelope. */
export async function post(
  url: string,
  body: string | undefined,
  headers: Record<string, string>,
): Promise<Reply> {
  const r = await fetch(url, {
    method: 'POST',
    headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
    body,
    signal: AbortSignal.timeout(600_000),
  });
  const text = await r.text();
  let envelope: Envelope = {};
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed === 'object' && parsed !== null) envelope = parsed;
  } catch {
    // not JSON: `text` still tells what came back
  }
  return { status: r.status, headers: r.headers, body: envelope, text };
}

/** A 2xx answer with envelope status 0, or an error naming the call. */
export function expectOk(what: string, r: Reply): Reply {
  if (r.status >= 300 || r.body.response?.status !== 0) {
    throw new Error(`${what}: HTTP ${r.status} ${r.text.slice(0, 500)}`);
  }
  return r;
}

/** Basic login to `/login/extended`; answers the session token from `x-ratecard-jwt`. */
export async function login(server: Server): Promise<string> {
  const basic = `Basic ${Buffer.from(`${PARTITION}/${ADMIN}:${PASSWORD}`).toString('base64')}`;
  const r = expectOk(
    'login',
    await post(`${server.base}/login/extended`, undefined, { authorization: basic }),
  );
  const token = r.headers.get('x-ratecard-jwt');
  if (token === null) throw new Error('login answered no x-ratecard-jwt header');
  return token;
}
