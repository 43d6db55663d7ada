// Sending a stored file: its content type and `Content-Disposition`, and HTTP range requests
// (RFC 9110: one range → 206 with Content-Range; a range starting past the end → 416 with
// `Content-Range: bytes */<size>`; several ranges or a malformed header → the whole file, as the
// RFC allows). The bytes stream from the blob store; nothing is buffered.

import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { BlobStore, ByteRange } from '../../db/blob-store.ts';
import { AppError } from '../../http/errors.ts';

export interface StoredFile {
  readonly partitionId: number;
  readonly key: string;
  readonly size: number;
  readonly contentType: string;
  readonly fileName: string;
}

/** The range a `Range` header asks for: a ByteRange, 'all' (absent or ignored) or 'unsatisfiable'. */
export function parseRange(header: string | undefined, size: number): ByteRange | 'all' | 'unsatisfiable' {
  if (header === undefined) return 'all';
  const m = /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header);
  if (!m || (m[1] === '' && m[2] === '')) return 'all';
  if (m[1] === '') {
    // The last n bytes.
    const n = Number(m[2]);
    if (n === 0 || size === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - n), end: size };
  }
  const start = Number(m[1]);
  const last = m[2] === '' ? size - 1 : Number(m[2]);
  if (start >= size) return 'unsatisfiable';
  if (last < start) return 'all';
  return { start, end: Math.min(last, size - 1) + 1 };
}

/** `attachment; filename="..."; filename*=UTF-8''...` (the ASCII form for old clients). */
export function contentDisposition(fileName: string, kind: 'attachment' | 'inline' = 'attachment'): string {
  const ascii = fileName.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '_');
  return `${kind}; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(fileName)}`;
}

export function sendFile(
  req: FastifyRequest,
  reply: FastifyReply,
  blobs: BlobStore,
  file: StoredFile,
  kind: 'attachment' | 'inline' = 'attachment',
): FastifyReply {
  const etag = `"${file.key}"`;
  const ifRange = req.headers['if-range'];
  const header = ifRange === undefined || ifRange === etag ? req.headers.range : undefined;
  const range = parseRange(header, file.size);
  if (range === 'unsatisfiable') {
    void reply.header('content-range', `bytes */${file.size}`);
    throw new AppError('RANGE_NOT_SATISFIABLE', `The file has ${file.size} bytes`, {
      field: 'headers.range',
    });
  }
  void reply
    .header('accept-ranges', 'bytes')
    .header('etag', etag)
    .header('content-type', file.contentType)
    // The uploader's content type is served as is: the browser must not sniff another (HTML, script).
    .header('x-content-type-options', 'nosniff')
    .header('content-disposition', contentDisposition(file.fileName, kind))
    .header('cache-control', 'private, no-cache');
  if (range === 'all') {
    void reply.header('content-length', file.size);
    return reply.send(Readable.from(blobs.read(file.partitionId, file.key)));
  }
  void reply
    .code(206)
    .header('content-range', `bytes ${range.start}-${range.end - 1}/${file.size}`)
    .header('content-length', range.end - range.start);
  return reply.send(Readable.from(blobs.read(file.partitionId, file.key, range)));
}
