// Reading a file out of a request, streamed: a multipart/form-data part (busboy, through
// @fastify/multipart) or a raw body whose name comes from `Content-Disposition`. The bytes are
// handed on as an async iterable; nothing here buffers a file.

import type { FastifyRequest } from 'fastify';
import type {} from '@fastify/multipart';
import { requestCheck } from '../../http/envelope.ts';
import { AppError, validationError } from '../../http/errors.ts';
import { uploadTooLarge } from '../../db/blob-store.ts';
import { cleanFileName, type IncomingFile } from './slots.ts';

/** Room for multipart boundaries and small fields on top of the file itself. */
const MULTIPART_OVERHEAD = 1024 * 1024;

/** Refuses at once a request whose declared length cannot fit (no byte of it is read). */
export function refuseOversized(req: FastifyRequest, maxBytes: number): void {
  const declared = Number(req.headers['content-length']);
  if (!Number.isFinite(declared)) return;
  const room = req.isMultipart() ? maxBytes + MULTIPART_OVERHEAD : maxBytes;
  if (declared > room) throw uploadTooLarge(maxBytes);
}

/** `filename*=UTF-8''...` or `filename="..."` of a Content-Disposition header. */
export function dispositionFileName(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const star = /filename\*\s*=\s*(?:UTF-8|utf-8)''([^;]+)/.exec(header);
  if (star) {
    try {
      return decodeURIComponent(star[1]!.trim());
    } catch {
      // fall through to the plain form
    }
  }
  const plain = /filename\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;\s]+))/.exec(header);
  return plain ? (plain[1] ?? plain[2])?.replace(/\\(.)/g, '$1') : undefined;
}

/** The request has bytes of a body: a declared length above 0, or chunked. */
export function carriesBody(req: FastifyRequest): boolean {
  const length = req.headers['content-length'];
  return (length !== undefined && length.trim() !== '0') || req.headers['transfer-encoding'] !== undefined;
}

/**
 * A body this scope left unread (any content type but JSON) where the operation takes JSON or
 * nothing: refused, as the JSON-only routes refuse it, rather than ignored.
 */
export function refuseUnreadBody(req: FastifyRequest): void {
  if (req.body === undefined && carriesBody(req)) {
    throw new AppError('UNSUPPORTED_MEDIA_TYPE', 'Unsupported content type: send application/json', {
      field: 'Content-Type',
    });
  }
}

/**
 * preValidation of the operations whose request the interface leaves empty (their path names all
 * they need; body schema `noArgumentsBody`): a body they cannot read is refused, not ignored.
 */
export const noUnreadBody = requestCheck(refuseUnreadBody);

/**
 * The raw body as the file (`Content-Type` and `Content-Disposition` describe it). An empty body is
 * no file: refused at once when the headers say so (no body, or a length of 0), else when it ends
 * without a byte (chunked), the slot keeping the file it held.
 */
export function rawFile(req: FastifyRequest): IncomingFile {
  if (!carriesBody(req)) {
    throw validationError('body', 'is empty: send the file as the body or as multipart field `file`');
  }
  const type = req.headers['content-type'];
  return {
    emptyRefusedAs: 'body',
    fileName: cleanFileName(dispositionFileName(req.headers['content-disposition'])),
    contentType:
      typeof type === 'string' && type !== '' ? type.split(';')[0]!.trim() : 'application/octet-stream',
    stream: req.raw,
  };
}

export interface MultipartResult<T> {
  /** The text fields, by name (the last value of a repeated field). */
  readonly fields: Readonly<Record<string, string>>;
  /** What `onFile` answered for the file part, if there was one. */
  readonly file: T | undefined;
}

/**
 * Reads a multipart body: text fields are collected; the first file part named one of
 * `fileFields` goes to `onFile` as it arrives. Other file parts are discarded, or with
 * `refuseOthers` a -4 naming their field (a caller that undoes `onFile`'s work when it throws).
 * Fields sent after the file are still read, so `onFile` must not depend on them.
 */
export async function readMultipart<T>(
  req: FastifyRequest,
  fileFields: readonly string[],
  maxBytes: number,
  onFile: (file: IncomingFile) => Promise<T>,
  refuseOthers = false,
): Promise<MultipartResult<T>> {
  refuseLongBoundary(req.headers['content-type']);
  const fields: Record<string, string> = {};
  let file: T | undefined;
  let seen = false;
  try {
    for await (const part of req.parts({
      limits: { fileSize: maxBytes + 1, fields: 50, fieldSize: 1024 * 1024 },
    })) {
      if (part.type === 'field') {
        if (typeof part.value === 'string') fields[part.fieldname] = part.value;
        continue;
      }
      if (seen || !fileFields.includes(part.fieldname)) {
        part.file.resume();
        if (!refuseOthers) continue;
        throw validationError(
          part.fieldname,
          seen
            ? 'one file per request: a second file part was sent'
            : `not a file field of this request (send the file as ${fileFields[0]})`,
        );
      }
      seen = true;
      // A content type is printable ASCII (RFC 9110): one with NUL was refused by the database only.
      if (/[^\x20-\x7e]/.test(part.mimetype)) {
        part.file.resume();
        throw validationError(part.fieldname, 'its Content-Type holds characters no content type has');
      }
      file = await onFile({
        fileName: cleanFileName(part.filename),
        contentType: part.mimetype || 'application/octet-stream',
        stream: part.file,
        // A file part of no bytes is no file, as an empty raw body: it replaced the slot's file.
        emptyRefusedAs: part.fieldname,
      });
    }
  } catch (e) {
    const code = (e as { code?: unknown }).code;
    if (code === 'FST_REQ_FILE_TOO_LARGE') throw uploadTooLarge(maxBytes);
    if (typeof code === 'string' && /^FST_(PARTS|FILES|FIELDS)_LIMIT$/.test(code)) {
      throw new AppError('VALIDATION', 'Too many parts in the multipart body', { field: 'body' });
    }
    throw malformedMultipart(e) ?? e;
  }
  if (!seen) throw validationError(fileFields[0]!, 'the multipart body holds no file in this field');
  return { fields, file };
}

/** The longest boundary busboy's search takes (its needle, `\r\n--` and the boundary, ≤ 256 bytes). */
const MAX_BOUNDARY = 250;

/**
 * A boundary is 1 to 70 characters (RFC 2046 §5.1.1); one past what the parser can search for was
 * its uncaught error (a 500): a -4 on `body`.
 */
function refuseLongBoundary(contentType: string | undefined): void {
  const m = /;\s*boundary\s*=\s*(?:"([^"]*)"|([^;\s]*))/i.exec(contentType ?? '');
  const boundary = m?.[1] ?? m?.[2] ?? '';
  if (Buffer.byteLength(boundary) > MAX_BOUNDARY) {
    throw validationError(
      'body',
      `malformed multipart/form-data: a boundary of ${Buffer.byteLength(boundary)} bytes (RFC 2046 allows 70; at most ${MAX_BOUNDARY} are taken)`,
    );
  }
}

/**
 * busboy's complaints about the body itself — truncated ("Unexpected end of multipart data", "Part
 * terminated early ..."), no boundary ("Multipart: Boundary not found") — are the client's fault: a
 * -4 on `body`. They carry no code; errors of ours and of the database do.
 */
function malformedMultipart(e: unknown): AppError | undefined {
  if (!(e instanceof Error) || e instanceof AppError || (e as { code?: unknown }).code !== undefined) {
    return undefined;
  }
  return /multipart|boundary|terminated early/i.test(e.message)
    ? validationError('body', `malformed multipart/form-data: ${e.message}`)
    : undefined;
}

/** A boolean form field: absent → `def`; `true`/`false` (any case) otherwise a -4. */
export function formBoolean(fields: Readonly<Record<string, string>>, name: string, def = false): boolean {
  const v = fields[name];
  if (v === undefined || v.trim() === '') return def;
  if (/^true$/i.test(v.trim())) return true;
  if (/^false$/i.test(v.trim())) return false;
  throw validationError(name, `must be true or false, got ${JSON.stringify(v)}`);
}
