/**
 * A loopback TCP proxy in front of a server (a TCP port or a unix socket), which cuts live connections the way a
 * network does: the client's socket is reset (RST), the server's side closed. Cuts happen on command (`cutAll`),
 * after a number of bytes the clients sent (`cutAfterBytes`), at a chosen moment of the PostgreSQL protocol
 * (`cutAt`), or at random, reproducibly, by a seed (`random`).
 *
 * The proxy reads the PostgreSQL wire protocol's framing (a type byte and a length; the startup message has no type
 * byte) to know what a connection is doing when it is cut:
 *
 * - `copy`: a `COPY … FROM STDIN` is under way; the cut comes half-way through one of its first CopyData messages
 *   (drawn), so the server holds part of a message — or, for a COPY with fewer messages, before its CopyDone;
 * - `commit`: the server received COMMIT and answered, and the answer is withheld: the transaction committed and the
 *   client cannot know it (the "maybe committed" case);
 * - `query`: a query (simple, or the Parse of an extended one) is cut before it reaches the server.
 *
 * Random cuts decide the k-th occurrence of each moment, over all connections, from (seed, moment, k) alone: which
 * connection carries it depends on timing, but how many of a run's first k commits are cut does not. A connection
 * that negotiates TLS is passed through unparsed (and never cut at a moment).
 */
import { createServer, connect, type Server, type Socket } from 'node:net';
import { mix3 } from '../../src/emulator/data/record-rng.js';

export type CutMoment = 'copy' | 'commit' | 'query';
export const CUT_MOMENTS: readonly CutMoment[] = ['copy', 'commit', 'query'];

export interface TcpProxyOptions {
  /** Where connections go: a TCP port (on 127.0.0.1 unless `host`), or a unix socket's path. */
  target: { port: number; host?: string } | { path: string };
  /** Share of each moment's occurrences (for `copy`: of COPY statements) that are cut, drawn from `seed`. */
  random?: { seed: number; rates: Partial<Record<CutMoment, number>> };
}

export interface TcpProxy {
  /** The proxy's port on 127.0.0.1. */
  readonly port: number;
  /** Connections cut so far, by what they were doing; `bytes` and `command` count the armed and commanded cuts. */
  readonly cuts: Record<CutMoment | 'bytes' | 'command', number>;
  /** Connections accepted so far. */
  readonly connections: number;
  /** Resets every live connection now; returns how many. */
  cutAll(): number;
  /** The connection that carries the n-th byte clients send from now on is reset right after that byte. */
  cutAfterBytes(n: number): void;
  /**
   * The next occurrence of `moment` (on any connection) is cut; with `sql`, the next whose query text matches it
   * (`query` and `commit` moments).
   */
  cutAt(moment: CutMoment, sql?: RegExp): void;
  close(): Promise<void>;
}

const SSL_REQUEST = 80877103;
const GSS_REQUEST = 80877104;

/** Whole messages out of a byte stream; `typed` once the startup message (untyped) is past. */
class Framer {
  private chunks: Buffer[] = [];
  private size = 0;
  typed = false;

  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.size += chunk.length;
  }

  /** The next whole message (header included), or undefined until more bytes arrive. */
  next(single = false): Buffer | undefined {
    const need = single ? 1 : this.typed ? 5 : 4;
    if (this.size < need) return undefined;
    const head = this.peek(need);
    const length = single ? 1 : this.typed ? 1 + head.readUInt32BE(1) : head.readUInt32BE(0);
    if (this.size < length) return undefined;
    return this.take(length);
  }

  /** Everything buffered (after switching to pass-through). */
  rest(): Buffer {
    return this.take(this.size);
  }

  private peek(n: number): Buffer {
    if (this.chunks[0]!.length < n) this.chunks = [Buffer.concat(this.chunks)];
    return this.chunks[0]!.subarray(0, n);
  }

  private take(n: number): Buffer {
    const all = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks);
    this.chunks = n < all.length ? [all.subarray(n)] : [];
    this.size -= n;
    return all.subarray(0, n);
  }
}

interface Connection {
  client: Socket;
  server: Socket;
  cut: boolean;
}

export async function startTcpProxy(opts: TcpProxyOptions): Promise<TcpProxy> {
  const live = new Set<Connection>();
  const cuts: TcpProxy['cuts'] = { copy: 0, commit: 0, query: 0, bytes: 0, command: 0 };
  const seen: Record<CutMoment, number> = { copy: 0, commit: 0, query: 0 };
  const armed: { moment: CutMoment; sql?: RegExp }[] = [];
  let bytesLeft: number | undefined;
  let connections = 0;

  /** Whether this occurrence of `moment` (of query `sql`) is cut: an armed cut first, then the seeded draw. */
  const decide = (moment: CutMoment, sql = ''): boolean => {
    const k = seen[moment]++;
    const i = armed.findIndex((a) => a.moment === moment && (a.sql?.test(sql) ?? true));
    if (i >= 0) {
      armed.splice(i, 1);
      return true;
    }
    const rate = opts.random?.rates[moment] ?? 0;
    return rate > 0 && mix3(opts.random!.seed, CUT_MOMENTS.indexOf(moment), k) / 2 ** 32 < rate;
  };

  /**
   * The client's socket is reset at once; the server's side is ended after the bytes already written reach it, so
   * a cut mid-message leaves the server holding part of one, then the end of the stream, as after a dead peer.
   */
  const cut = (conn: Connection, why: keyof TcpProxy['cuts']): void => {
    if (conn.cut) return;
    conn.cut = true;
    cuts[why]++;
    live.delete(conn);
    conn.client.resetAndDestroy();
    conn.server.end();
  };

  const onConnection = (client: Socket): void => {
    connections++;
    const server =
      'path' in opts.target ? connect(opts.target.path) : connect(opts.target.port, opts.target.host ?? '127.0.0.1');
    const conn: Connection = { client, server, cut: false };
    live.add(conn);
    const up = new Framer();
    const down = new Framer();
    // The server's messages are all typed (its one-byte answer to an SSLRequest is read as `single`).
    down.typed = true;
    let passThrough = false;
    let awaitingSslAnswer = false;
    let cutCommitAnswer = false;
    /** For a COPY drawn to be cut: the index of the CopyData message to cut in, and how many went by. */
    let copyCut: { at: number; seen: number } | undefined;

    // Bytes to the other side with backpressure: the sender pauses while the receiver's buffer is full.
    const waiting = new Set<Socket>();
    const send = (to: Socket, from: Socket, data: Buffer): void => {
      if (conn.cut || data.length === 0) return;
      if (!to.write(data) && !waiting.has(to)) {
        waiting.add(to);
        from.pause();
        to.once('drain', () => {
          waiting.delete(to);
          from.resume();
        });
      }
    };

    /** Forwards `msg` upstream, cutting after `bytesLeft` of it when a byte cut is armed. */
    const sendUp = (msg: Buffer): void => {
      if (bytesLeft !== undefined && msg.length >= bytesLeft) {
        send(server, client, msg.subarray(0, bytesLeft));
        bytesLeft = undefined;
        return cut(conn, 'bytes');
      }
      if (bytesLeft !== undefined) bytesLeft -= msg.length;
      send(server, client, msg);
    };

    const fromClient = (msg: Buffer): void => {
      if (!up.typed) {
        const code = msg.length >= 8 ? msg.readUInt32BE(4) : 0;
        if (code === SSL_REQUEST || code === GSS_REQUEST) awaitingSslAnswer = true;
        else up.typed = true;
        sendUp(msg);
        return;
      }
      const type = String.fromCharCode(msg[0]!);
      if (copyCut && type === 'd' && copyCut.seen++ === copyCut.at) {
        send(server, client, msg.subarray(0, msg.length >> 1));
        return cut(conn, 'copy');
      }
      // CopyDone or CopyFail of a COPY drawn to be cut whose data ended first.
      if (copyCut && (type === 'c' || type === 'f')) return cut(conn, 'copy');
      if (type === 'Q' || type === 'P') {
        // Parse: 'P', length, the statement's name (NUL-terminated), then the query text.
        const end = msg.indexOf(0, type === 'Q' ? 5 : msg.indexOf(0, 5) + 1);
        const sql = msg.toString('utf8', type === 'Q' ? 5 : msg.indexOf(0, 5) + 1, end < 0 ? msg.length : end);
        if (decide('query', sql)) return cut(conn, 'query');
        if (type === 'Q' && /^\s*COMMIT\b/i.test(sql) && decide('commit', sql)) cutCommitAnswer = true;
        if (type === 'Q' && /^\s*COPY\b/i.test(sql)) {
          const k = seen.copy;
          // One of the first four messages (~1 MiB with the postgres sink's chunks), drawn with the decision.
          if (decide('copy', sql)) copyCut = { at: opts.random ? mix3(opts.random.seed, 99, k) % 4 : 0, seen: 0 };
        }
      }
      sendUp(msg);
    };

    const fromServer = (msg: Buffer): void => {
      if (awaitingSslAnswer) {
        awaitingSslAnswer = false;
        if (msg[0] === 'S'.charCodeAt(0) || msg[0] === 'G'.charCodeAt(0)) passThrough = true;
        send(client, server, msg);
        if (passThrough) {
          send(server, client, up.rest());
          send(client, server, down.rest());
        }
        return;
      }
      // The server answered the COMMIT: it is done, and the client never hears of it.
      if (cutCommitAnswer) return cut(conn, 'commit');
      send(client, server, msg);
    };

    // Small messages leave at once (as the client's own socket sends them), a chunk's messages in one write.
    client.setNoDelay(true);
    if (!('path' in opts.target)) server.setNoDelay(true);
    client.on('data', (chunk: Buffer) => {
      if (conn.cut) return;
      if (passThrough) return send(server, client, chunk);
      up.push(chunk);
      server.cork();
      for (let m = up.next(); m && !conn.cut && !passThrough; m = up.next()) fromClient(m);
      server.uncork();
    });
    server.on('data', (chunk: Buffer) => {
      if (conn.cut) return;
      if (passThrough) return send(client, server, chunk);
      down.push(chunk);
      client.cork();
      for (let m = down.next(awaitingSslAnswer); m && !conn.cut; m = down.next(awaitingSslAnswer)) fromServer(m);
      client.uncork();
    });
    // Either side ending or failing ends the other, as a plain TCP relay would.
    const end = (): void => {
      if (conn.cut) return;
      conn.cut = true;
      live.delete(conn);
      client.destroy();
      server.destroy();
    };
    for (const s of [client, server]) {
      s.on('error', end);
      s.on('close', end);
    }
  };

  const netServer: Server = createServer(onConnection);
  await new Promise<void>((resolve, reject) => {
    netServer.once('error', reject);
    netServer.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (netServer.address() as { port: number }).port;

  return {
    port,
    cuts,
    get connections() {
      return connections;
    },
    cutAll() {
      const all = [...live];
      for (const c of all) cut(c, 'command');
      return all.length;
    },
    cutAfterBytes(n) {
      if (!(n > 0)) throw new Error(`cutAfterBytes: ${n} is not a positive number of bytes`);
      bytesLeft = n;
    },
    cutAt(moment, sql) {
      armed.push({ moment, ...(sql && { sql }) });
    },
    async close() {
      for (const c of [...live]) {
        c.cut = true;
        c.client.destroy();
        c.server.destroy();
      }
      live.clear();
      await new Promise<void>((resolve) => netServer.close(() => resolve()));
    },
  };
}
