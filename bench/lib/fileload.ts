// The file-load workload: a CSV of `megabytes` MiB, generated as it is sent (never whole in memory),
// streamed as multipart/form-data to the synchronous `/loaddata.file/P`, while the server's memory is
// sampled from /proc. It shows whether a large file loads in constant memory; it has no peer.

import { readFileSync, writeFileSync } from 'node:fs';
import { Readable } from 'node:stream';
import type { Bench, Line } from './workloads.ts';

const FILE_ATTRIBUTES = 10;
const SAMPLE_MS = 200;
const MiB = 1024 * 1024;

/** `sku,label,attribute1..10` rows (skus apart from the other workloads') while they fit in `maxBytes`. */
function* csvChunks(maxBytes: number, counted: { rows: number; bytes: number }): Generator<Buffer> {
  const header = ['sku', 'label', ...Array.from({ length: FILE_ATTRIBUTES }, (_, i) => `attribute${i + 1}`)];
  let chunk = header.join(',') + '\n'; // ASCII only: string length = bytes
  for (let i = 1; ; i++) {
    // attribute2 is declared NUMERIC by the bench (data.ts INDEXED_META): a number there.
    const attrs = Array.from({ length: FILE_ATTRIBUTES }, (_, k) =>
      k === 1 ? String((i * 7919) % 1_000_000) : `v${(i * (k + 7919)) % 1_000_000}`,
    );
    const line = `FILE${String(i).padStart(9, '0')},File product ${i},${attrs.join(',')}\n`;
    const full = counted.bytes + chunk.length + line.length > maxBytes;
    if (!full) [chunk, counted.rows] = [chunk + line, counted.rows + 1];
    if (full || chunk.length >= 64 * 1024) {
      counted.bytes += chunk.length;
      if (chunk !== '') yield Buffer.from(chunk);
      chunk = '';
    }
    if (full) return;
  }
}

/** A multipart/form-data body around `file`, as a stream: boundary, part headers, file, closing boundary. */
function* multipart(
  boundary: string,
  fields: Record<string, string>,
  file: Iterable<Buffer>,
): Generator<Buffer> {
  for (const [name, value] of Object.entries(fields)) {
    yield Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`);
  }
  yield Buffer.from(
    `--${boundary}\r\ncontent-disposition: form-data; name="fileName"; filename="bench.csv"\r\n` +
      'content-type: text/csv\r\n\r\n',
  );
  yield* file;
  yield Buffer.from(`\r\n--${boundary}--\r\n`);
}

/** VmRSS and VmHWM of a process in MiB; undefined without /proc (not Linux). */
function memoryOf(pid: number): { rss: number; hwm: number } | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1]);
    return { rss: kib('VmRSS') / 1024, hwm: kib('VmHWM') / 1024 };
  } catch {
    return undefined;
  }
}

/** Resets VmHWM to the current RSS (Linux `clear_refs` 5), so it tells this load's peak; false if refused. */
function resetPeak(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

interface LoadResult {
  readonly loadedRecords?: number;
  readonly invalidRecords?: number;
  readonly totalRecords?: number;
}

/** Streams a `megabytes` MiB CSV through `/loaddata.file/P`, sampling the server's memory every 200 ms. */
export async function fileLoad(b: Bench, megabytes: number): Promise<Line> {
  const workload = `file load: streamed CSV of ${megabytes} MB (${FILE_ATTRIBUTES} attributes) through \`/loaddata.file/P\``;
  const pid = b.server.pid;
  const hwmReset = resetPeak(pid);
  const before = memoryOf(pid);
  let peakRss = before?.rss ?? 0;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, memoryOf(pid)?.rss ?? 0)), SAMPLE_MS);

  const counted = { rows: 0, bytes: 0 };
  const boundary = `----ratecard-bench-${Date.now()}`;
  const body = Readable.from(
    multipart(boundary, { detectJoinFields: 'false' }, csvChunks(megabytes * MiB, counted)),
  );
  const t0 = performance.now();
  let text: string;
  let status: number;
  try {
    const r = await fetch(`${b.server.base}/loaddata.file/P`, {
      method: 'POST',
      body,
      duplex: 'half',
      headers: { 'content-type': `multipart/form-data; boundary=${boundary}`, 'x-ratecard-jwt': b.token },
      signal: AbortSignal.timeout(3_600_000),
    });
    [status, text] = [r.status, await r.text()];
  } finally {
    clearInterval(sampler);
  }
  const seconds = (performance.now() - t0) / 1000;
  const after = memoryOf(pid);
  if (after) peakRss = Math.max(peakRss, after.rss);

  const envelope = JSON.parse(text) as { response?: { status?: number; data?: LoadResult[] } };
  const result = envelope.response?.data?.[0];
  if (status >= 300 || envelope.response?.status !== 0 || result === undefined) {
    return { workload, api: `failed: HTTP ${status} ${text.slice(0, 300)}`, peer: '—' };
  }
  const int = (n: number) => Math.round(n).toLocaleString('en-US');
  const mb = (n: number) => `${n.toFixed(0)} MB`;
  const loaded = result.loadedRecords ?? 0;
  const shortfall =
    loaded === counted.rows
      ? ''
      : `, **loaded ${int(loaded)} of ${int(counted.rows)}** (${int(result.invalidRecords ?? 0)} invalid)`;
  const memory =
    before && after
      ? `; server RSS ${mb(before.rss)} before, peak ${mb(peakRss)} (VmHWM ${mb(after.hwm)}), +${mb(peakRss - before.rss)}`
      : '; server memory not sampled (no /proc)';
  b.notes.push(
    `file load: ${(counted.bytes / MiB).toFixed(1)} MB of CSV generated while sent (never whole in memory) as ` +
      `multipart/form-data to the synchronous \`/loaddata.file/P\` (server started with SYNC_TIMEOUT_SECONDS=3600; ` +
      `the default MAX_UPLOAD_BYTES of 1 GiB admits up to BENCH_FILE_MB=1024). Time is upload plus load. The ` +
      `server's VmRSS was read from /proc/${pid}/status every ${SAMPLE_MS} ms; "peak" is the largest sample, VmHWM ` +
      (hwmReset
        ? "the kernel's high-water mark, reset just before the upload."
        : "the kernel's high-water mark since the server started (it could not be reset)."),
  );
  return {
    workload,
    api:
      `${(counted.bytes / MiB).toFixed(1)} MB, ${int(counted.rows)} rows in ${seconds.toFixed(1)} s ` +
      `(${int(counted.rows / seconds)} rows/s)${shortfall}${memory}`,
    peer: '—',
  };
}
