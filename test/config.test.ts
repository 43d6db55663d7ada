// Settings: defaults, and a clear refusal naming the variable for every bad value.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, loadConfig } from '../src/config.ts';

test('defaults', () => {
  const c = loadConfig({});
  assert.equal(c.port, 8080);
  assert.equal(c.host, '127.0.0.1');
  assert.equal(c.dataDir, './data');
  assert.equal(c.databaseUrl, undefined);
  assert.equal(c.productToken, 'Ratecard');
  assert.equal(c.basePath, '/service');
  assert.equal(c.jwtTtlSeconds, 3600);
  assert.equal(c.maxBodyBytes, 32 * 1024 * 1024);
  assert.equal(c.maxUploadBytes, 1024 ** 3);
  assert.equal(c.maxPageSize, 10_000);
  assert.equal(c.maxBatchRows, 100_000);
  assert.equal(c.syncTimeoutSeconds, 180);
  assert.equal(c.loginMaxFailures, 10);
  assert.equal(c.loginLockoutMinutes, 15);
  assert.deepEqual(c.bootstrapPartitions, ['demo']);
  assert.equal(c.bootstrapAdmin, 'admin');
  assert.match(c.nodeId, /-\d+$/);
});

test('values are read and trimmed', () => {
  const c = loadConfig({
    PORT: '9000',
    BASE_PATH: '/api/',
    BOOTSTRAP_PARTITIONS: 'a, b ,',
    TRUST_PROXY: 'yes',
  });
  assert.equal(c.port, 9000);
  assert.equal(c.basePath, '/api');
  assert.deepEqual(c.bootstrapPartitions, ['a', 'b']);
  assert.equal(c.trustProxy, true);
});

const bad: Array<[Record<string, string>, RegExp]> = [
  [{ PORT: 'x' }, /PORT must be a whole number/],
  [{ PORT: '70000' }, /PORT must be between/],
  [{ DATABASE_URL: 'mysql://x' }, /DATABASE_URL/],
  [{ PRODUCT_TOKEN: 'Rate card' }, /PRODUCT_TOKEN/],
  [{ BASE_PATH: 'service' }, /BASE_PATH/],
  [{ LOG_LEVEL: 'loud' }, /LOG_LEVEL/],
  [{ JWT_TTL_SECONDS: '-1' }, /JWT_TTL_SECONDS/],
  [{ BOOTSTRAP_PARTITIONS: 'Bad Name' }, /BOOTSTRAP_PARTITIONS/],
  [{ BOOTSTRAP_PASSWORD: 'short' }, /BOOTSTRAP_PASSWORD/],
  [{ TRUST_PROXY: 'maybe' }, /TRUST_PROXY/],
  [{ SCRYPT_COST: '1000' }, /SCRYPT_COST must be a power of two/],
];
for (const [env, message] of bad) {
  test(`refuses ${JSON.stringify(env)}`, () => {
    assert.throws(
      () => loadConfig(env),
      (e: unknown) => e instanceof ConfigError && message.test(e.message),
    );
  });
}
