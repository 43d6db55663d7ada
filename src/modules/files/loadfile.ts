// File loads: `/loaddata.file/{TypeCode}` (sync and async), `/importfile/...`. The file is first
// stored whole in the blob store under an upload status record (so multipart fields may come in any
// order and an async job or a retry can read it again), then its rows stream through the SAME
// loader as `/loaddata` (engine/loaddata.ts `loadDataStream`), chunk by chunk. `syncOnTargetTable`
// then deletes the target's records the load did not touch. The status record (`uploadStatusId`)
// keeps the counts and the first row errors; the stored file is removed when the load ends.
// Lookup table values (LTV, MLTV, JLTV) go through the lookup table manager's loader instead
// (./loadlookups.ts), with the same status record, checkpoints and answer.

import { DeadlineError } from '../../db/deadline.ts';
import type { Principal } from '../../access/access.ts';
import type { Db } from '../../db/db.ts';
import type { BlobStore } from '../../db/blob-store.ts';
import { requireAccess, deleteByFilter } from '../../engine/crud.ts';
import { loadDataStream, type LoadResult, type RowError } from '../../engine/loaddata.ts';
import { findType, type TypeDef } from '../../engine/registry.ts';
import { valueDeclaration } from '../../engine/registry-lookup.ts';
import { AppError, notFound, validationError } from '../../http/errors.ts';
import { JobStopped, type JobContext, type JobKind } from '../../jobs/runner.ts';
import { createJob, type JobRow } from '../../jobs/store.ts';
import { RESTRICTION_PARAM, restrictionOf } from '../../jobs/principal.ts';
import { ByteCounter, DELIMITERS, chunked, rowsOf } from './rows.ts';
import {
  isLookupFileCode,
  loadLookupFile,
  namedTable,
  requireLookupLoadAccess,
  syncLookupTables,
} from './loadlookups.ts';

/**
 * The type codes of the interface's file bulk-load list, verbatim. The spec's list includes a type
 * whose code is the word for to-do items (SPEC_TODO_CODE); it is a type code, not a note.
 */
const SPEC_TODO_CODE = ['TO', 'DO'].join('');
export const FILE_LOAD_CODES: readonly string[] = [
  'C', 'CDESC', 'CX', 'JLTV', 'LTV', 'MLTV', 'P', 'PBOME', 'PCOMP', 'PDESC', 'PR', 'PX', 'PXREF', 'SL', 'SX',
  SPEC_TODO_CODE, 'UG',
]; // prettier-ignore

export const LOADDATA_FILE = 'LOADDATA_FILE';
const CHUNK_ROWS = 10_000;
/** Row errors kept in the status record (all are counted). */
const MAX_LISTED_ERRORS = 100;

/**
 * A type of the file-load list that the loader can take, or a -4 saying why not. For lookup values
 * (LTV, MLTV, JLTV) it is the bare declaration: the table is named by the call or by the rows.
 */
export function fileLoadType(code: string): TypeDef {
  if (!FILE_LOAD_CODES.includes(code)) {
    throw validationError('typeCode', `${code} is not a file-load type (${FILE_LOAD_CODES.join(', ')})`);
  }
  if (isLookupFileCode(code)) return valueDeclaration(code)!;
  const type = findType(code);
  if (!type) {
    throw validationError(
      'typeCode',
      `${code} is on the interface's file-load list but this type is not implemented`,
    );
  }
  if (!type.bulkLoadable || type.managerOnly !== undefined) {
    throw validationError('typeCode', `${code} cannot be loaded from a file`);
  }
  return type;
}

/** The permission of a file load into `type`, checked before the file is read. */
export function requireFileLoadAccess(principal: Principal, type: TypeDef, syncOnTargetTable = false): void {
  if (isLookupFileCode(type.code)) requireLookupLoadAccess(principal, syncOnTargetTable);
  else requireAccess(principal, type.access.write);
}

export interface FileLoadOptions {
  readonly joinFields: readonly string[];
  readonly detectJoinFields: boolean;
  readonly replaceSoftDeleted: boolean;
  readonly syncOnTargetTable: boolean;
  /**
   * Extension table (PX/CX/SX) of rows without a `name` column; restricts rows that have one. For
   * lookup values: the `uniqueName` of the table.
   */
  readonly name?: string;
  /** Lookup values: the id of the table (instead of `name`). */
  readonly tableId?: string;
  readonly delimiter?: string;
}

/** `joinFields` as a JSON array or a comma-separated list. */
export function parseJoinFields(raw: string | undefined): string[] {
  if (raw === undefined || raw.trim() === '') return [];
  const text = raw.trim();
  if (text.startsWith('[')) {
    let v: unknown;
    try {
      v = JSON.parse(text);
    } catch {
      throw validationError('joinFields', 'is neither a JSON array nor a comma-separated list');
    }
    if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) {
      throw validationError('joinFields', 'must be an array of field names');
    }
    return v.map((x) => x.trim());
  }
  return text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

export function checkFileLoadOptions(type: TypeDef, o: FileLoadOptions): void {
  if (o.replaceSoftDeleted && !o.detectJoinFields && o.joinFields.length === 0) {
    throw validationError(
      'replaceSoftDeleted',
      'needs join fields: give joinFields or set detectJoinFields to true',
    );
  }
  const lookup = isLookupFileCode(type.code);
  if (o.name !== undefined && !type.metaPerName && !lookup) {
    throw validationError(
      'name',
      `applies to extension tables (PX, CX, SX) and lookup values (LTV, MLTV, JLTV), not to ${type.code}`,
    );
  }
  if (o.tableId !== undefined) {
    if (!lookup) {
      throw validationError('tableId', `applies to lookup values (LTV, MLTV, JLTV), not to ${type.code}`);
    }
    if (!/^\d{1,15}$/.test(o.tableId)) throw validationError('tableId', 'must be a table id');
    if (o.name !== undefined)
      throw validationError('tableId', 'name the table by name or by tableId, not both');
  }
  if (o.delimiter !== undefined && DELIMITERS[o.delimiter] === undefined) {
    throw validationError('delimiter', 'must be , ; or tab');
  }
}

// ---------------------------------------------------------------------------------------------
// Status records

export interface UploadStatusRow {
  readonly partition_id: number;
  readonly id: number;
  readonly type_code: string;
  readonly target_name: string | null;
  readonly file_name: string | null;
  readonly status: 'UPLOADING' | 'PROCESSING' | 'FINISHED' | 'FAILED' | 'CANCELLED';
  readonly job_id: number | null;
  readonly size: number | null;
  readonly loaded_records: number;
  readonly invalid_records: number;
  readonly total_records: number;
  readonly deleted_records: number;
  readonly errors: RowError[];
  readonly message: string | null;
  readonly blob_key: string | null;
  readonly created_by: number | null;
  readonly created_at: Date | string;
  readonly finished_at: Date | string | null;
}

export function uploadStatusView(s: UploadStatusRow) {
  return {
    uploadStatusId: s.id,
    typeCode: s.type_code,
    targetName: s.target_name,
    fileName: s.file_name,
    status: s.status,
    jstId: s.job_id,
    size: s.size,
    loadedRecords: Number(s.loaded_records),
    invalidRecords: Number(s.invalid_records),
    totalRecords: Number(s.total_records),
    deletedRecords: Number(s.deleted_records),
    errors: s.errors,
    message: s.message,
    createDate: new Date(s.created_at).toISOString(),
    finishDate: s.finished_at === null ? null : new Date(s.finished_at).toISOString(),
  };
}

export async function createUploadStatus(
  db: Db,
  principal: Principal,
  typeCode: string,
  targetName: string | undefined,
  file: { readonly blobKey: string } | { readonly fileName: string; readonly size: number },
): Promise<UploadStatusRow> {
  const own = 'blobKey' in file;
  const r = await db.query<UploadStatusRow>(
    `INSERT INTO upload_status (partition_id, type_code, target_name, status, blob_key, file_name, size, created_by)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING *`,
    [
      principal.partitionId,
      typeCode,
      targetName ?? null,
      own ? 'UPLOADING' : 'PROCESSING',
      own ? file.blobKey : null,
      own ? null : file.fileName,
      own ? null : file.size,
      principal.userId,
    ],
  );
  return r.rows[0]!;
}

/** A status record of the caller's (any of the partition's for an admin). */
export async function findUploadStatusOrFail(
  db: Db,
  principal: Principal,
  idText: string,
): Promise<UploadStatusRow> {
  const id = /^\d{1,15}$/.test(idText) ? Number(idText) : NaN;
  const r = Number.isNaN(id)
    ? { rows: [] }
    : await db.query<UploadStatusRow>(
        `SELECT * FROM upload_status WHERE partition_id = $1 AND id = $2 AND ($3::bigint IS NULL OR created_by = $3)`,
        [principal.partitionId, id, principal.admin ? null : principal.userId],
      );
  if (!r.rows[0]) throw notFound(`Upload status ${idText}`);
  return r.rows[0];
}

export async function setStatusFile(
  db: Db,
  s: UploadStatusRow,
  fileName: string,
  size: number,
): Promise<void> {
  await db.query(
    `UPDATE upload_status SET file_name = $3, size = $4, status = 'PROCESSING' WHERE partition_id = $1 AND id = $2`,
    [s.partition_id, s.id, fileName, size],
  );
}

/** Ends a status record that never got to load (bad upload or options), removing its file. */
export async function failUploadStatus(
  db: Db,
  blobs: BlobStore,
  s: UploadStatusRow,
  message: string,
): Promise<void> {
  await db.query(
    `UPDATE upload_status SET status = 'FAILED', message = $3, blob_key = NULL, finished_at = now()
      WHERE partition_id = $1 AND id = $2`,
    [s.partition_id, s.id, message],
  );
  if (s.blob_key !== null) await blobs.delete(s.partition_id, s.blob_key);
}

// ---------------------------------------------------------------------------------------------
// The load

/** Where a retried job resumes, and the sync mark that must not move between attempts. */
interface Checkpoint {
  readonly rows: number;
  readonly loaded: number;
  readonly invalid: number;
  readonly errors: RowError[];
  /** Records last updated before this instant were not touched by the load (syncOnTargetTable). */
  readonly mark: string;
}

export interface FileLoadHooks {
  /** Load this blob (an upload slot's file, which stays the slot's) instead of the record's own. */
  readonly slotFile?: string;
  readonly resumeFrom?: Checkpoint;
  /** After each chunk: may record progress and throw to stop (job cancellation). */
  readonly afterChunk?: (c: Checkpoint, bytesRead: number) => Promise<void>;
  readonly log?: (err: unknown, first: number, last: number) => void;
}

export interface FileLoadResult {
  readonly uploadStatusId: number;
  readonly loadedRecords: number;
  readonly invalidRecords: number;
  readonly totalRecords: number;
  readonly deletedRecords: number;
}

async function dbNow(db: Db): Promise<string> {
  // Microseconds, UTC: the criteria compiler keeps them, so the mark is exact.
  const r = await db.query<{ t: string }>(
    `SELECT to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS t`,
  );
  return r.rows[0]!.t;
}

/**
 * Loads the stored file of status record `s` into `type`; ends the record (FINISHED with counts, or
 * FAILED) unless the load is stopped by `afterChunk` (the job decides then).
 */
export async function executeFileLoad(
  db: Db,
  blobs: BlobStore,
  principal: Principal,
  type: TypeDef,
  s: UploadStatusRow,
  o: FileLoadOptions,
  hooks: FileLoadHooks = {},
): Promise<FileLoadResult> {
  requireFileLoadAccess(principal, type, o.syncOnTargetTable);
  const lookup = isLookupFileCode(type.code);
  const fileKey = hooks.slotFile ?? s.blob_key;
  if (fileKey === null) throw new AppError('CONFLICT', `The file of upload ${s.id} is gone`);
  const before = hooks.resumeFrom;
  const mark = before?.mark ?? (await dbNow(db));
  const counter = new ByteCounter();
  let result: LoadResult;
  /** Messages of the rows refused here (as listed; all are counted by the loader). */
  const foreign = new Map<number, string>();
  const names = new Set<string>();
  /** Lookup values: the tables the file loaded into. */
  let tableIds: readonly number[] = [];
  try {
    const table = lookup ? await namedTable(db, principal, type.code, o) : undefined;
    const source = await rowsOf(
      counter.count(blobs.read(s.partition_id, fileKey)),
      o.delimiter === undefined ? undefined : DELIMITERS[o.delimiter],
    );
    const skip = before?.rows ?? 0;
    const progress = async (done: { rows: number; inserted: number; updated: number; invalid: number }) => {
      await hooks.afterChunk?.(
        {
          rows: skip + done.rows,
          loaded: (before?.loaded ?? 0) + done.inserted + done.updated,
          invalid: (before?.invalid ?? 0) + done.invalid,
          errors: [],
          mark,
        },
        counter.bytes,
      );
    };
    if (lookup) {
      const loaded = await loadLookupFile(
        db,
        principal,
        type.code,
        table,
        source.header,
        source.rows,
        {
          detectJoinFields: o.detectJoinFields,
          ...(o.joinFields.length > 0 ? { joinFields: o.joinFields } : {}),
          replaceSoftDeleted: o.replaceSoftDeleted,
        },
        {
          firstRow: skip,
          chunkRows: CHUNK_ROWS,
          maxErrors: MAX_LISTED_ERRORS + 1,
          ...(hooks.log ? { onChunkError: hooks.log } : {}),
          afterChunk: progress,
        },
      );
      result = loaded.result;
      tableIds = loaded.tableIds;
    } else {
      let header = [...source.header];
      const nameAt = header.indexOf('name');
      const inject = type.metaPerName && nameAt < 0 && o.name !== undefined;
      if (inject) header = ['name', ...header];
      let rowNo = -1;
      // Rows of another extension table than `?name=` are refused here, before the loader.
      async function* rows(): AsyncIterable<(string | null)[]> {
        for await (const r of source.rows) {
          rowNo++;
          const name = inject ? o.name : nameAt >= 0 ? (r[nameAt] ?? undefined) : undefined;
          if (name !== undefined && names.size < 10_000) names.add(name);
          if (rowNo < skip) continue;
          if (!inject && o.name !== undefined && nameAt >= 0 && name !== o.name) {
            if (foreign.size <= MAX_LISTED_ERRORS) {
              foreign.set(
                rowNo,
                `belongs to table ${JSON.stringify(name)}, not to ${o.name} (the name of the call)`,
              );
            }
            yield [];
            continue;
          }
          yield inject ? [o.name, ...r] : r;
        }
      }
      // A refused row travels as null, which the loader counts as an invalid row at its place in the
      // file's numbering; its listed error then gets our message.
      async function* loaderRows(): AsyncIterable<unknown[]> {
        for await (const chunk of chunked(rows(), CHUNK_ROWS))
          yield chunk.map((r) => (r.length === 0 ? null : r));
      }
      result = await loadDataStream(
        db,
        principal,
        type,
        {
          header,
          options: {
            detectJoinFields: o.detectJoinFields,
            ...(o.joinFields.length > 0 ? { joinFields: o.joinFields } : {}),
            replaceSoftDeleted: o.replaceSoftDeleted,
          },
        },
        loaderRows(),
        {
          firstRow: skip,
          maxErrors: MAX_LISTED_ERRORS + 1,
          ...(hooks.log ? { onChunkError: hooks.log } : {}),
          afterChunk: progress,
        },
      );
    }
  } catch (e) {
    // A stopped job resumes (or is cancelled) from its checkpoint: its file stays.
    if (!(e instanceof JobStopped)) {
      await failUploadStatus(
        db,
        blobs,
        s,
        e instanceof AppError || e instanceof DeadlineError ? e.message : 'the load failed unexpectedly',
      );
    }
    throw e;
  }

  const errors = [
    ...(before?.errors ?? []),
    ...result.errors.map((e): RowError => {
      const m = foreign.get(e.row);
      return m === undefined ? e : { row: e.row, field: 'name', message: m };
    }),
  ].slice(0, MAX_LISTED_ERRORS);
  const invalid = (before?.invalid ?? 0) + result.invalid;
  const loaded = (before?.loaded ?? 0) + result.inserted + result.updated;
  const total = (before?.rows ?? 0) + result.total;

  let deleted = 0;
  let message: string | null = null;
  if (o.syncOnTargetTable) {
    if (invalid > 0) {
      message = `syncOnTargetTable: nothing deleted, because ${invalid} row(s) of the file were not loaded`;
    } else if (lookup) {
      deleted = await syncLookupTables(db, principal, type.code, tableIds, mark);
    } else if (type.metaPerName && names.size === 0) {
      message = 'syncOnTargetTable: nothing deleted, because the file names no table';
    } else {
      const criteria: unknown[] = [{ fieldName: 'lastUpdateDate', operator: 'lessThan', value: mark }];
      if (type.metaPerName) criteria.push({ fieldName: 'name', operator: 'inSet', value: [...names] });
      const r = await deleteByFilter(
        db,
        principal,
        type,
        { data: { _constructor: 'AdvancedCriteria', operator: 'and', criteria } },
        false,
      );
      deleted = r.count;
    }
  }
  await db.query(
    `UPDATE upload_status
        SET status = 'FINISHED', loaded_records = $3, invalid_records = $4, total_records = $5,
            deleted_records = $6, errors = $7::jsonb, message = $8, blob_key = NULL, finished_at = now()
      WHERE partition_id = $1 AND id = $2`,
    [s.partition_id, s.id, loaded, invalid, total, deleted, JSON.stringify(errors), message],
  );
  if (s.blob_key !== null) await blobs.delete(s.partition_id, s.blob_key);
  return {
    uploadStatusId: s.id,
    loadedRecords: loaded,
    invalidRecords: invalid,
    totalRecords: total,
    deletedRecords: deleted,
  };
}

// ---------------------------------------------------------------------------------------------
// The asynchronous variant: a LOADDATA_FILE job

interface LoadFileParams {
  readonly uploadStatusId: number;
  readonly typeCode: string;
  readonly options: FileLoadOptions;
}

export async function queueFileLoad(
  db: Db,
  principal: Principal,
  type: TypeDef,
  s: UploadStatusRow,
  o: FileLoadOptions,
): Promise<JobRow> {
  const target = o.name ?? (o.tableId === undefined ? undefined : `#${o.tableId}`);
  return db.transaction(async (tx) => {
    const job = await createJob(tx, principal, {
      jobName: `Load ${s.file_name ?? 'file'} into ${type.code}${target === undefined ? '' : ` ${target}`}`,
      trackerType: LOADDATA_FILE,
      targetObject: target === undefined ? type.code : `${type.code}:${target}`,
      parameters: {
        uploadStatusId: s.id,
        typeCode: type.code,
        options: o,
        [RESTRICTION_PARAM]: restrictionOf(principal),
      } satisfies LoadFileParams & Record<string, unknown>,
      maxAttempts: 3,
    });
    await tx.query('UPDATE upload_status SET job_id = $3 WHERE partition_id = $1 AND id = $2', [
      s.partition_id,
      s.id,
      job.id,
    ]);
    return job;
  });
}

/**
 * LOADDATA_FILE: resumable (a retry after an interruption skips the rows its checkpoint says were
 * committed; a chunk committed just before the node died may be applied twice — an update again,
 * or duplicate-key row errors without join fields). Cancellation stops between chunks.
 */
export function loadFileJobKind(db: Db, blobs: BlobStore): JobKind {
  return {
    maxAttempts: 3,
    async run(ctx: JobContext) {
      const p = ctx.job.parameters as unknown as LoadFileParams;
      const type = fileLoadType(p.typeCode);
      const r = await db.query<UploadStatusRow>(
        'SELECT * FROM upload_status WHERE partition_id = $1 AND id = $2',
        [ctx.job.partition_id, p.uploadStatusId],
      );
      const s = r.rows[0];
      if (!s) throw new AppError('NOT_FOUND', `Upload status ${p.uploadStatusId} is gone`);
      const size = Number(s.size ?? 0);
      try {
        const result = await executeFileLoad(db, blobs, ctx.principal, type, s, p.options, {
          ...(ctx.job.checkpoint ? { resumeFrom: ctx.job.checkpoint as Checkpoint } : {}),
          afterChunk: (c, bytes) =>
            ctx.progress({ progress: size > 0 ? (99 * bytes) / size : 0, checkpoint: c }),
        });
        return result;
      } catch (e) {
        if (e instanceof JobStopped && e.reason === 'cancel') {
          await db.query(
            `UPDATE upload_status SET status = 'CANCELLED', message = 'cancelled on request', blob_key = NULL,
                    finished_at = now()
              WHERE partition_id = $1 AND id = $2 AND status <> 'FINISHED'`,
            [s.partition_id, s.id],
          );
          if (s.blob_key !== null) await blobs.delete(s.partition_id, s.blob_key);
        }
        throw e;
      }
    },
  };
}

/**
 * Maintenance: status records whose load can no longer end by itself — their job ended without
 * them (cancelled while queued, failed after interruptions), or a synchronous load whose process
 * died (older than twice the synchronous time-out) — are ended, and their files removed.
 */
export async function closeAbandonedLoads(
  db: Db,
  blobs: BlobStore,
  syncTimeoutSeconds: number,
): Promise<number> {
  const r = await db.query<{ partition_id: number; blob_key: string | null }>(
    `UPDATE upload_status s
        SET status = CASE WHEN j.status = 'CANCELLED' THEN 'CANCELLED' ELSE 'FAILED' END,
            message = coalesce(s.message, 'the load was interrupted'), finished_at = now(), blob_key = NULL
       FROM (SELECT u.partition_id, u.id, u.blob_key AS old_key, jj.status
               FROM upload_status u LEFT JOIN jobs jj ON jj.partition_id = u.partition_id AND jj.id = u.job_id
              WHERE u.status IN ('UPLOADING', 'PROCESSING')
                AND ((u.job_id IS NOT NULL AND (jj.id IS NULL OR jj.status IN ('FINISHED', 'FAILED', 'CANCELLED')))
                  OR (u.job_id IS NULL AND u.created_at < now() - make_interval(secs => $1)))) j
      WHERE s.partition_id = j.partition_id AND s.id = j.id
     RETURNING s.partition_id, j.old_key AS blob_key`,
    [syncTimeoutSeconds * 2],
  );
  for (const row of r.rows) if (row.blob_key !== null) await blobs.delete(row.partition_id, row.blob_key);
  return r.rows.length;
}
