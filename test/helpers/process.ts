// Spawns the real server or CLI as a child process (the project's Node 24), for tests of what only a
// separate process shows: the embedded lock, restarts, kill -9.

import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';

export interface Server {
  readonly child: ChildProcess;
  readonly url: string;
  output(): string;
}

const ROOT = new URL('../../', import.meta.url);

export function baseEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    LOG_LEVEL: 'info',
    SCRYPT_COST: '1024',
    BOOTSTRAP_PARTITIONS: 'p1',
    BOOTSTRAP_ADMIN: 'admin',
    BOOTSTRAP_PASSWORD: 'admin-password-1',
    ...extra,
  };
}

/** Starts `src/main.ts` on a free port and waits until it answers /ready. */
export async function startServer(env: Record<string, string>, timeoutMs = 60_000): Promise<Server> {
  const child = spawn(process.execPath, ['src/main.ts'], {
    cwd: ROOT,
    env: baseEnv({ PORT: '0', ...env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const m = /Ratecard listening on (http:\/\/[\d.]+:(\d+))/.exec(out);
    if (m && m[2] !== '0') return { child, url: m[1]!, output: () => out };
    if (child.exitCode !== null) throw new Error(`server exited ${child.exitCode}:\n${out}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  child.kill('SIGKILL');
  throw new Error(`server did not start:\n${out}`);
}

export async function stopServer(s: Server, signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
  if (s.child.exitCode !== null) return s.child.exitCode;
  const exited = once(s.child, 'exit');
  s.child.kill(signal);
  const [code] = (await exited) as [number | null];
  return code;
}

/** Runs the CLI; `input`, when given, is written to its standard input (then closed). */
export async function runCli(
  args: string[],
  env: Record<string, string>,
  input?: string,
): Promise<{ code: number; out: string }> {
  const child = spawn(process.execPath, ['src/cli.ts', ...args], {
    cwd: ROOT,
    env: baseEnv(env),
    stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
  });
  if (input !== undefined) child.stdin!.end(input);
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const [code] = (await once(child, 'exit')) as [number];
  return { code, out };
}

export function basic(partition: string, user: string, password: string): string {
  return `Basic ${Buffer.from(`${partition}/${user}:${password}`).toString('base64')}`;
}
