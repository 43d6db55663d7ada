// Answers whose `data` array is JSON written as bytes (src/engine/record-json.ts), or a JSON text the
// database wrote, copied in once: the whole envelope goes into one buffer taken from a pool and is
// sent as it is. A page's JSON is then never a string (read back from bytes, joined into the
// envelope, flattened for its length, joined to the HTTP header and encoded again by the socket: four
// copies of ~100 KB a page, measured as two thirds of what the server allocated under the bench's
// `iStartsWith` line), and no buffer is allocated per answer either (V8 counts a buffer as external
// memory, which made it collect the whole heap several times a second under load). A buffer goes back
// to the pool when its response closes: Node emits `close` after the socket has written the last byte
// or has been destroyed, never while the kernel may still read from the buffer.

import type { FastifyReply, FastifyRequest } from 'fastify';
import { JsonBytes, type JsonWrite } from '../engine/record-json.ts';
import { envelopeEnds, type ListInfo } from './envelope.ts';

/** Buffers waiting for an answer, the last given back first; together at most MAX_POOLED_BYTES. */
const free: JsonBytes[] = [];
const MAX_POOLED_BYTES = 32 << 20;
let pooledBytes = 0;

function take(): JsonBytes {
  const out = free.pop();
  if (out === undefined) return new JsonBytes(1 << 16);
  pooledBytes -= out.capacity;
  return out;
}

/** `out` back to the pool, empty; let go when the pool holds enough bytes already. */
function giveBack(out: JsonBytes): void {
  if (pooledBytes + out.capacity > MAX_POOLED_BYTES) return;
  out.clear();
  free.push(out);
  pooledBytes += out.capacity;
}

/** Sends a success envelope whose `data` is the JSON array `writeData` writes into `out`. */
export function sendJsonArray(
  req: FastifyRequest,
  reply: FastifyReply,
  writeData: JsonWrite,
  list?: ListInfo,
): FastifyReply {
  const out = take();
  const [head, tail] = envelopeEnds(req, list);
  try {
    out.utf8(head);
    writeData(out);
    out.utf8(tail);
  } catch (e) {
    giveBack(out);
    throw e;
  }
  reply.raw.once('close', () => giveBack(out));
  return reply.type('application/json; charset=utf-8').send(out.bytes());
}
