// Helpers of the jobs and files suites: multipart and raw requests, a job runner bound to the
// harness's partitions, and polling for a job's end.

import assert from 'node:assert/strict';
import { ADMIN, ADMIN_PASSWORD, type Harness } from '../helpers/app.ts';
import { buildJobRunner } from '../../src/modules/files/runner-setup.ts';
import type { JobKinds, JobRunner } from '../../src/jobs/runner.ts';

export const admin = { user: ADMIN, password: ADMIN_PASSWORD };
export type Who = { user: string; password: string };

export interface Res {
  readonly status: number;
  readonly headers: Headers;
  readonly body: any;
  readonly bytes: Buffer;
}

export function authHeader(h: Harness, who: Who = admin, partition = h.partition): string {
  return `Basic ${Buffer.from(`${partition}/${who.user}:${who.password}`).toString('base64')}`;
}

export async function send(
  h: Harness,
  path: string,
  init: { method?: string; body?: RequestInit['body']; headers?: Record<string, string>; who?: Who } = {},
): Promise<Res> {
  const res = await fetch(`${h.url}${h.config.basePath}/${h.partition}${path}`, {
    method: init.method ?? 'POST',
    headers: { authorization: authHeader(h, init.who), ...init.headers },
    ...(init.body !== undefined ? { body: init.body } : {}),
  });
  const bytes = Buffer.from(await res.arrayBuffer());
  let body: unknown;
  try {
    body = JSON.parse(bytes.toString('utf8'));
  } catch {
    body = undefined;
  }
  return { status: res.status, headers: res.headers, body, bytes };
}

/** A multipart body: text fields and one file. */
export function form(
  fields: Record<string, string>,
  file?: { field: string; name: string; data: Buffer | string; type?: string },
): FormData {
  const f = new FormData();
  for (const [k, v] of Object.entries(fields)) f.append(k, v);
  if (file) {
    f.append(file.field, new Blob([file.data], { type: file.type ?? 'application/octet-stream' }), file.name);
  }
  return f;
}

export function assertOk(r: Res): any {
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.body.response.status, 0);
  return r.body.response.data;
}

export function assertError(r: Res, http: number, status: number): void {
  assert.equal(r.status, http, JSON.stringify(r.body));
  assert.equal(r.body.response.status, status, JSON.stringify(r.body));
}

/** A new slot holding `data`; answers its id. */
export async function slotWith(
  h: Harness,
  data: Buffer | string,
  name = 'f.bin',
  who: Who = admin,
): Promise<string> {
  const slotId = assertOk(await send(h, '/uploadmanager.newuploadslot', { who }))[0].slotId as string;
  assertOk(
    await send(h, `/uploadmanager.upload/${slotId}`, {
      who,
      body: form({}, { field: 'file', name, data }),
    }),
  );
  return slotId;
}

/** A runner for this harness's partition only (other suites share the database on PostgreSQL). */
export function runnerFor(h: Harness, extraKinds: JobKinds = {}, partitions = [h.partitionId]): JobRunner {
  return buildJobRunner(h.db, h.config, { extraKinds, partitions, pollMs: 100 });
}

export async function waitForJob(
  h: Harness,
  jstId: number,
  until: (job: any) => boolean = (j) => ['FINISHED', 'FAILED', 'CANCELLED'].includes(j.status),
  timeoutMs = 30_000,
): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const job = assertOk(await send(h, `/admin.fetchjst/${jstId}`))[0];
    if (until(job)) return job;
    if (Date.now() > deadline) assert.fail(`job ${jstId} still ${job.status}: ${JSON.stringify(job)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
