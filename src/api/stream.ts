// A streamed answer of the control API (GET /v1/events): JSON lines (application/x-ndjson,
// chunked) or, for a client that asks for text/event-stream, server-sent events. The lines
// kept so far go first; with `follow`, each new one as it comes, until the client hangs up.
// A client that reads slower than the agent writes is cut off once MAX_UNREAD_BYTES wait for
// it (the agent does not hold memory for it), and told why in a last line.
import type { IncomingMessage, ServerResponse } from 'node:http';

/** Bytes a streaming client may leave unread before it is cut off. */
export const MAX_UNREAD_BYTES = 4 << 20;

/** One item of a stream: an object with a `seq` (the SSE id) and a `type` (the SSE event). */
export interface StreamItem {
  seq: number;
  type: string;
}

/** What a handler returns to stream: the items so far, and how to follow new ones. */
export class StreamReply {
  constructor(
    readonly initial: readonly StreamItem[],
    /** Subscribes `push` to new items; returns the unsubscribe function. Absent: no follow. */
    readonly follow?: (push: (item: StreamItem) => void) => () => void,
    /** Told when the client is cut off for leaving MAX_UNREAD_BYTES unread. */
    readonly onCut?: () => void,
  ) {}
}

/** Writes `reply` to `res` until it ends (no follow) or the client goes away. */
export function sendStream(req: IncomingMessage, res: ServerResponse, reply: StreamReply): void {
  const sse = (req.headers.accept ?? '').includes('text/event-stream');
  res.writeHead(200, {
    'content-type': sse ? 'text/event-stream' : 'application/x-ndjson',
    'cache-control': 'no-cache',
  });
  const format = (item: StreamItem): string =>
    sse
      ? `id: ${item.seq}\nevent: ${item.type}\ndata: ${JSON.stringify(item)}\n\n`
      : `${JSON.stringify(item)}\n`;
  for (const item of reply.initial) res.write(format(item));
  if (reply.follow === undefined) {
    res.end();
    return;
  }
  // Headers and what was kept go out now: a follower sees at once that it is connected.
  (res as { flushHeaders?: () => void }).flushHeaders?.();
  let stop: (() => void) | undefined = undefined;
  const end = () => {
    stop?.();
    stop = undefined;
  };
  stop = reply.follow((item) => {
    if (res.writableLength > MAX_UNREAD_BYTES) {
      end();
      reply.onCut?.();
      const why = { seq: item.seq, type: 'stream.cut', summary: 'the client read too slowly' };
      res.end(format(why));
      return;
    }
    res.write(format(item));
  });
  res.on('close', end);
  req.on('close', end);
}
