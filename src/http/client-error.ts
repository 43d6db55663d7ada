// Requests Node's HTTP parser refuses before Fastify sees them (a header section past
// `--max-http-header-size`, a malformed request line, a client that stalls): answered in the error
// envelope too, with the HTTP status Fastify's default handler gives them, then the socket closed.

import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';

interface ClientError extends Error {
  readonly code?: string;
}

/** The reply of a refused request: HTTP status, envelope status and message. */
function answerOf(err: ClientError): [number, number, string] {
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') return [408, -1, 'The request was not received in time'];
  if (err.code === 'HPE_HEADER_OVERFLOW') return [431, -4, 'Request header fields too large'];
  return [400, -4, 'Malformed HTTP request'];
}

/** Fastify's `clientErrorHandler`, answering with the envelope of `nodeId`. */
export function clientErrorHandler(nodeId: string): (err: ClientError, socket: Socket) => void {
  return (err, socket) => {
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    if (socket.writable) {
      const [http, status, message] = answerOf(err);
      const body = JSON.stringify({
        response: { node: nodeId, status, data: message, errors: { request: { errorMessage: message } } },
      });
      socket.write(
        `HTTP/1.1 ${http} ${STATUS_CODES[http]}\r\nConnection: close\r\nContent-Type: application/json; charset=utf-8\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
    }
    socket.destroy(err);
  };
}
