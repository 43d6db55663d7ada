// Throughput at a fixed concurrency, measured the same way for both sides: HTTP through autocannon
// (in this process), the peer as `concurrency` loops calling the driver. Each run starts with a short
// warm-up whose numbers are thrown away.

import autocannon, { type Request } from 'autocannon';

export interface Throughput {
  readonly perSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** Transport errors, time-outs and non-2xx answers (HTTP only). */
  readonly failures: number;
}

export interface HttpLoad {
  readonly url: string;
  readonly method: 'GET' | 'POST';
  readonly headers: Record<string, string>;
  /** A fixed body, or a fresh one per request. */
  readonly body?: string | (() => string);
  /** A fresh path per request (instead of the url's). */
  readonly path?: () => string;
}

const WARMUP_SECONDS = 1;

async function cannon(load: HttpLoad, connections: number, seconds: number): Promise<Throughput> {
  const { body } = load;
  const request: Request = { method: load.method, headers: load.headers };
  if (typeof body === 'string') request.body = body;
  const { path } = load;
  if (typeof body === 'function' || path) {
    request.setupRequest = (req) => ({
      ...req,
      ...(typeof body === 'function' ? { body: body() } : {}),
      ...(path ? { path: path() } : {}),
    });
  }
  const r = await autocannon({
    url: load.url,
    connections,
    duration: seconds,
    timeout: 30,
    requests: [request],
  });
  return {
    perSecond: r.requests.total / r.duration,
    p50Ms: r.latency.p50,
    p99Ms: r.latency.p99,
    failures: r.errors + r.non2xx,
  };
}

export async function httpThroughput(
  load: HttpLoad,
  connections: number,
  seconds: number,
): Promise<Throughput> {
  await cannon(load, connections, WARMUP_SECONDS);
  return cannon(load, connections, seconds);
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
}

async function loops(
  work: () => Promise<unknown>,
  concurrency: number,
  seconds: number,
): Promise<Throughput> {
  const start = performance.now();
  const end = start + seconds * 1000;
  const latencies: number[] = [];
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        const t = performance.now();
        await work();
        latencies.push(performance.now() - t);
      }
    }),
  );
  latencies.sort((a, b) => a - b);
  return {
    perSecond: latencies.length / ((performance.now() - start) / 1000),
    p50Ms: percentile(latencies, 0.5),
    p99Ms: percentile(latencies, 0.99),
    failures: 0,
  };
}

/** `work` called by `concurrency` loops for `seconds`; a failing call fails the measurement. */
export async function driverThroughput(
  work: () => Promise<unknown>,
  concurrency: number,
  seconds: number,
): Promise<Throughput> {
  await loops(work, concurrency, WARMUP_SECONDS);
  return loops(work, concurrency, seconds);
}
