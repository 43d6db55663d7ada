// The part of autocannon 9's API the bench uses (the package ships no types).
declare module 'autocannon' {
  export interface Histogram {
    readonly average: number;
    readonly p50: number;
    readonly p99: number;
    /** Completed requests (on `requests`). */
    readonly total: number;
  }

  export interface Request {
    method?: string;
    path?: string;
    headers?: Record<string, string>;
    body?: string | Buffer;
    /** Called before each request; answers the request to send. */
    setupRequest?: (req: Request) => Request;
  }

  export interface Options {
    readonly url: string;
    readonly connections?: number;
    /** Seconds. */
    readonly duration?: number;
    /** Seconds to wait for a response. */
    readonly timeout?: number;
    readonly method?: string;
    readonly headers?: Record<string, string>;
    readonly body?: string;
    readonly requests?: Request[];
  }

  export interface Result {
    /** Seconds. */
    readonly duration: number;
    readonly errors: number;
    readonly timeouts: number;
    readonly non2xx: number;
    /** Milliseconds. */
    readonly latency: Histogram;
    readonly requests: Histogram;
    readonly statusCodeStats: Record<string, { count: number }>;
  }

  function autocannon(opts: Options): Promise<Result>;
  export default autocannon;
}
