// Every setting of Ratecard, read from the environment and validated once at start-up.
// A bad value stops the process with a message naming the variable; nothing else reads process.env.

import { hostname } from 'node:os';
import { NO_OAUTH, parseOAuthConfiguration, type OAuthConfiguration } from './modules/oauth/clients.ts';

export interface Config {
  readonly port: number;
  readonly host: string;
  readonly dataDir: string;
  readonly databaseUrl: string | undefined;
  readonly dbPoolSize: number;
  readonly productToken: string;
  readonly basePath: string;
  readonly nodeId: string;
  /** The interface release reported to clients (`extendedData.Release`); clients gate features by it. */
  readonly interfaceRelease: string;
  readonly logLevel: string;
  readonly jwtTtlSeconds: number;
  readonly maxBodyBytes: number;
  readonly maxUploadBytes: number;
  readonly maxPageSize: number;
  /** Step and time limit of one logic evaluation (LOGIC_MAX_STEPS, LOGIC_MAX_MS). */
  readonly logicMaxSteps: number;
  readonly logicMaxMs: number;
  readonly maxBatchRows: number;
  readonly syncTimeoutSeconds: number;
  /** A connection silent this long (no byte either way) is closed: a client stalled mid-request. */
  readonly idleTimeoutSeconds: number;
  readonly loginMaxFailures: number;
  readonly loginLockoutMinutes: number;
  readonly scryptCost: number;
  readonly rateLimitPerMinute: number;
  readonly trustProxy: boolean;
  readonly clusterName: string;
  readonly oneTimeTokenSeconds: number;
  readonly bootstrapPartitions: readonly string[];
  readonly bootstrapAdmin: string;
  readonly bootstrapPassword: string | undefined;
  /** The application property `oauthConfiguration`: the known OAuth clients. */
  readonly oauthConfiguration: OAuthConfiguration;
  /** API version 2 tokens (`POST /token`): access and refresh token lifetimes. */
  readonly tokenV2AccessSeconds: number;
  readonly tokenV2RefreshSeconds: number;
  /** Query API limits: rows of one answer, joins of one pipeline, run time of one statement. */
  readonly queryMaxRows: number;
  readonly queryMaxJoins: number;
  readonly queryTimeoutSeconds: number;
  /** Jobs of one partition processing at once, over all nodes. */
  readonly jobConcurrency: number;
  /** How often a node refreshes the heartbeat of the jobs it runs. */
  readonly jobHeartbeatSeconds: number;
  /** A processing job without a heartbeat for this long is INTERRUPTED (its node died). */
  readonly jobStaleSeconds: number;
  /** Upload slots not used for this long are removed with their file. */
  readonly uploadSlotTtlMinutes: number;
  /** `postgres` (chunked bytea in the database) or the path of a directory shared by all nodes. */
  readonly blobStore: string;
  /** Record history of every write (on by default; off only for benchmarks and initial loads). */
  readonly recordHistory: boolean;
  /** History rows older than this many days are removed by the daily clean-up; 0 keeps them all. */
  readonly historyRetentionDays: number;
}

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

type Env = Readonly<Record<string, string | undefined>>;

/** Partition names are URL path segments and log fields: keep them plain. */
export const PARTITION_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;

function int(env: Env, name: string, def: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return def;
  if (!/^\d+$/.test(raw.trim()))
    throw new ConfigError(`${name} must be a whole number, got ${JSON.stringify(raw)}`);
  const v = Number(raw.trim());
  if (v < min || v > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${v}`);
  return v;
}

function str(env: Env, name: string, def: string): string {
  const raw = env[name];
  return raw === undefined || raw === '' ? def : raw;
}

function bool(env: Env, name: string, def: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return def;
  if (/^(1|true|yes|on)$/i.test(raw)) return true;
  if (/^(0|false|no|off)$/i.test(raw)) return false;
  throw new ConfigError(`${name} must be true or false, got ${JSON.stringify(raw)}`);
}

/** OAUTH_CONFIGURATION: JSON, or the path of a JSON file; unset means no OAuth client is known. */
function oauthConfiguration(env: Env): OAuthConfiguration {
  const raw = env.OAUTH_CONFIGURATION;
  if (raw === undefined || raw.trim() === '') return NO_OAUTH;
  try {
    return parseOAuthConfiguration(raw);
  } catch (e) {
    throw new ConfigError(`OAUTH_CONFIGURATION: ${(e as Error).message}`);
  }
}

/** Jobs, uploads and files (README "Jobs, uploads and files"). */
function jobSettings(env: Env) {
  const jobHeartbeatSeconds = int(env, 'JOB_HEARTBEAT_SECONDS', 10, 1, 3600);
  const jobStaleSeconds = int(env, 'JOB_STALE_SECONDS', 60, 2, 86_400);
  if (jobStaleSeconds <= jobHeartbeatSeconds) {
    throw new ConfigError('JOB_STALE_SECONDS must be greater than JOB_HEARTBEAT_SECONDS');
  }
  const blobStore = str(env, 'BLOB_STORE', 'postgres');
  if (blobStore !== 'postgres' && !blobStore.startsWith('/') && !blobStore.startsWith('.')) {
    throw new ConfigError('BLOB_STORE must be postgres or a directory path (absolute, or starting with .)');
  }
  return {
    jobConcurrency: int(env, 'JOB_CONCURRENCY', 2, 1, 1000),
    jobHeartbeatSeconds,
    jobStaleSeconds,
    uploadSlotTtlMinutes: int(env, 'UPLOAD_SLOT_TTL_MINUTES', 60, 1, 525_600),
    blobStore,
  };
}

/**
 * The release of the interface we speak, as clients of the vendor's interface read it. Clients gate
 * features by it (pyfxlib refuses notifications below 15.2), so the default is a release at which
 * every operation we implement exists; Ratecard's own version is reported separately.
 */
export const DEFAULT_INTERFACE_RELEASE = '15.2';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export function loadConfig(env: Env = process.env): Config {
  const databaseUrl = env.DATABASE_URL === '' ? undefined : env.DATABASE_URL;
  if (databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError('DATABASE_URL must be a postgres:// or postgresql:// URL');
  }
  const productToken = str(env, 'PRODUCT_TOKEN', 'Ratecard');
  if (!/^[A-Za-z][A-Za-z0-9]{0,31}$/.test(productToken)) {
    throw new ConfigError('PRODUCT_TOKEN must be letters and digits, starting with a letter');
  }
  const basePath = str(env, 'BASE_PATH', '/service').replace(/\/+$/, '');
  if (!/^(\/[A-Za-z0-9_.-]+)+$/.test(basePath)) {
    throw new ConfigError(`BASE_PATH must look like /service, got ${JSON.stringify(basePath)}`);
  }
  const interfaceRelease = str(env, 'INTERFACE_RELEASE', DEFAULT_INTERFACE_RELEASE);
  if (!/^\d{1,4}(\.\d{1,4}){0,3}$/.test(interfaceRelease)) {
    throw new ConfigError(`INTERFACE_RELEASE must look like 15.2, got ${JSON.stringify(interfaceRelease)}`);
  }
  const logLevel = str(env, 'LOG_LEVEL', 'info');
  if (!LOG_LEVELS.includes(logLevel))
    throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}`);

  const bootstrapPartitions = str(env, 'BOOTSTRAP_PARTITIONS', 'demo')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  for (const p of bootstrapPartitions) {
    if (!PARTITION_NAME.test(p)) {
      throw new ConfigError(
        `BOOTSTRAP_PARTITIONS: ${JSON.stringify(p)} is not a valid partition name (a-z, 0-9, _ and -)`,
      );
    }
  }
  const bootstrapPassword = env.BOOTSTRAP_PASSWORD === '' ? undefined : env.BOOTSTRAP_PASSWORD;
  if (bootstrapPassword !== undefined && bootstrapPassword.length < 8) {
    throw new ConfigError('BOOTSTRAP_PASSWORD must have at least 8 characters');
  }

  const syncTimeoutSeconds = int(env, 'SYNC_TIMEOUT_SECONDS', 180, 1, 86_400);
  const scryptCost = int(env, 'SCRYPT_COST', 16_384, 2, 2 ** 20);
  if ((scryptCost & (scryptCost - 1)) !== 0)
    throw new ConfigError(`SCRYPT_COST must be a power of two, got ${scryptCost}`);

  return {
    port: int(env, 'PORT', 8080, 0, 65535),
    host: str(env, 'HOST', '127.0.0.1'),
    dataDir: str(env, 'DATA_DIR', './data'),
    databaseUrl,
    dbPoolSize: int(env, 'DB_POOL_SIZE', 10, 1, 1000),
    productToken,
    basePath,
    nodeId: str(env, 'NODE_ID', `${hostname()}-${process.pid}`),
    interfaceRelease,
    logLevel,
    jwtTtlSeconds: int(env, 'JWT_TTL_SECONDS', 3600, 10, 366 * 86400),
    maxBodyBytes: int(env, 'MAX_BODY_BYTES', 32 * 1024 * 1024, 1024, 2 ** 31),
    maxUploadBytes: int(env, 'MAX_UPLOAD_BYTES', 1024 * 1024 * 1024, 1024, 2 ** 42),
    maxPageSize: int(env, 'MAX_PAGE_SIZE', 10_000, 1, 10_000_000),
    logicMaxSteps: int(env, 'LOGIC_MAX_STEPS', 100_000, 100, 100_000_000),
    logicMaxMs: int(env, 'LOGIC_MAX_MS', 1_000, 1, 600_000),
    maxBatchRows: int(env, 'MAX_BATCH_ROWS', 100_000, 1, 100_000_000),
    syncTimeoutSeconds,
    // Longer than a synchronous request may keep its client waiting for the answer.
    idleTimeoutSeconds: int(env, 'IDLE_TIMEOUT_SECONDS', syncTimeoutSeconds + 60, 1, 100_000),
    loginMaxFailures: int(env, 'LOGIN_MAX_FAILURES', 10, 1, 10_000),
    loginLockoutMinutes: int(env, 'LOGIN_LOCKOUT_MINUTES', 15, 1, 10_080),
    scryptCost,
    rateLimitPerMinute: int(env, 'RATE_LIMIT_PER_MINUTE', 0, 0, 10_000_000),
    trustProxy: bool(env, 'TRUST_PROXY', false),
    clusterName: str(env, 'CLUSTER_NAME', 'ratecard'),
    oneTimeTokenSeconds: int(env, 'ONE_TIME_TOKEN_SECONDS', 60, 5, 3600),
    bootstrapPartitions,
    bootstrapAdmin: str(env, 'BOOTSTRAP_ADMIN', 'admin'),
    bootstrapPassword,
    oauthConfiguration: oauthConfiguration(env),
    tokenV2AccessSeconds: int(env, 'TOKEN_V2_ACCESS_SECONDS', 3600, 10, 366 * 86400),
    tokenV2RefreshSeconds: int(env, 'TOKEN_V2_REFRESH_SECONDS', 30 * 86400, 60, 3660 * 86400),
    queryMaxRows: int(env, 'QUERY_MAX_ROWS', 10_000, 1, 10_000_000),
    queryMaxJoins: int(env, 'QUERY_MAX_JOINS', 4, 0, 16),
    queryTimeoutSeconds: int(env, 'QUERY_TIMEOUT_SECONDS', 30, 1, 86_400),
    ...jobSettings(env),
    recordHistory: bool(env, 'RECORD_HISTORY', true),
    historyRetentionDays: int(env, 'HISTORY_RETENTION_DAYS', 0, 0, 365_000),
  };
}
