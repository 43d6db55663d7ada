// The settings of jobs, uploads and files: defaults and refusals naming the variable.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, loadConfig } from '../../src/config.ts';

test('job and file settings: defaults', () => {
  const c = loadConfig({});
  assert.equal(c.jobConcurrency, 2);
  assert.equal(c.jobHeartbeatSeconds, 10);
  assert.equal(c.jobStaleSeconds, 60);
  assert.equal(c.uploadSlotTtlMinutes, 60);
  assert.equal(c.blobStore, 'postgres');
  assert.equal(loadConfig({ BLOB_STORE: '/var/lib/ratecard/files' }).blobStore, '/var/lib/ratecard/files');
});

test('job and file settings: bad values are refused', () => {
  const bad: Array<[Record<string, string>, RegExp]> = [
    [{ JOB_CONCURRENCY: '0' }, /JOB_CONCURRENCY/],
    [{ JOB_HEARTBEAT_SECONDS: 'x' }, /JOB_HEARTBEAT_SECONDS/],
    [{ JOB_HEARTBEAT_SECONDS: '30', JOB_STALE_SECONDS: '20' }, /JOB_STALE_SECONDS must be greater/],
    [{ UPLOAD_SLOT_TTL_MINUTES: '0' }, /UPLOAD_SLOT_TTL_MINUTES/],
    [{ BLOB_STORE: 's3' }, /BLOB_STORE/],
  ];
  for (const [env, message] of bad)
    assert.throws(
      () => loadConfig(env),
      (e: unknown) => e instanceof ConfigError && message.test(e.message),
    );
});
