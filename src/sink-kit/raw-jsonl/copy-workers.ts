/**
 * The checked copy (checked-copy.ts) on worker threads: the jsonl sink's native path copies the units the engine
 * reads at once side by side, one per core, where on the main thread their lines were parsed one after the other —
 * JSON.parse of every line is most of the copy's work. Only a judge that holds nothing between records may go to a
 * worker (`RecordJudge.stateless`: a store whose names are free, such as a JSONL output), for a worker judges with a
 * judge of its own; the columns it observed come back serialized.
 *
 * From the project's TypeScript (the test suite) there is no compiled worker to start: `available()` is false and
 * the sink copies on the main thread, as it did before. The compiled CLI (dist/) and the benchmarks use workers.
 */
import os from 'node:os';
import { Worker } from 'node:worker_threads';
import { deserializeColumns } from '../output-files/dataset-schema.js';
import type { LogicalType } from '../../core/logical-type.js';
import type { CopyAnswer, CopyJob } from './copy-worker.js';
import { BadJsonlLine } from './line.js';

const WORKER = new URL('./copy-worker.js', import.meta.url);

export interface WorkerCopy {
  records: number;
  longest: number;
  columns: Map<string, LogicalType>;
}

export class CopyWorkers {
  private readonly idle: Worker[] = [];
  private readonly all = new Set<Worker>();
  private readonly waiting: ((w: Worker) => void)[] = [];
  private closed = false;

  /** At most `size` workers, started as jobs need them (default: one per core). */
  constructor(private readonly size = Math.max(1, os.availableParallelism())) {}

  /** Whether this build has a compiled worker to start. */
  static available(): boolean {
    return import.meta.url.endsWith('.js');
  }

  /** Runs the copy on a worker; its errors come back as the in-thread copy throws them. */
  async copy(job: CopyJob): Promise<WorkerCopy> {
    const worker = await this.take();
    try {
      return await run(worker, job);
    } finally {
      this.give(worker);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    const workers = [...this.all];
    this.all.clear();
    this.idle.length = 0;
    await Promise.all(workers.map((w) => w.terminate()));
  }

  private async take(): Promise<Worker> {
    if (this.closed) throw new Error('the copy workers were closed');
    const idle = this.idle.pop();
    if (idle) return idle;
    if (this.all.size < this.size) {
      const w = new Worker(WORKER);
      this.all.add(w);
      // A worker that dies takes no more jobs (the one it held fails with its error, see `run`).
      w.once('exit', () => {
        this.all.delete(w);
        const i = this.idle.indexOf(w);
        if (i >= 0) this.idle.splice(i, 1);
      });
      return w;
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  private give(w: Worker): void {
    if (!this.all.has(w)) return;
    const next = this.waiting.shift();
    if (next) next(w);
    else {
      // An idle worker does not keep the process alive.
      w.unref();
      this.idle.push(w);
    }
  }
}

function run(worker: Worker, job: CopyJob): Promise<WorkerCopy> {
  worker.ref();
  return new Promise<WorkerCopy>((resolve, reject) => {
    const onExit = (code: number): void => reject(new Error(`the copy worker stopped (exit code ${code})`));
    worker.once('exit', onExit);
    worker.once('error', reject);
    worker.once('message', (answer: CopyAnswer) => {
      worker.off('exit', onExit);
      worker.off('error', reject);
      if (answer.ok)
        resolve({ records: answer.records, longest: answer.longest, columns: deserializeColumns(answer.columns) });
      else reject(rebuilt(answer));
    });
    worker.postMessage(job);
  });
}

/** The worker's error as the copy on this thread would have thrown it, for `asNativeRefusal` to read. */
function rebuilt(a: Extract<CopyAnswer, { ok: false }>): Error {
  if (a.name === 'BadJsonlLine' && a.offset !== undefined) return new BadJsonlLine(a.offset, a.message);
  const err = new Error(a.message) as NodeJS.ErrnoException;
  err.name = a.name;
  if (a.code !== undefined) err.code = a.code;
  return err;
}
