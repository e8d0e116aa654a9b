/**
 * A worker thread's side of the checked copy (copy-workers.ts): copies one file per message with every line checked
 * and judged (checked-copy.ts), observing the records' columns, and answers with what it found or why it stopped.
 */
import { parentPort } from 'node:worker_threads';
import type { StoreLimits } from '../../core/types.js';
import { InferredSchema } from '../../schema/infer.js';
import { RecordJudge } from '../../schema/storable.js';
import { serializeColumns } from '../output-files/dataset-schema.js';
import { copyCheckedJsonl } from './checked-copy.js';
import { BadJsonlLine } from './line.js';

export interface CopyJob {
  src: string;
  dest: string;
  gzipLevel: number | undefined;
  /** The sink's store limits: its judge holds nothing between records (`RecordJudge.stateless`). */
  limits: StoreLimits;
  maxLineBytes: number;
  /** The copy goes after `dest`'s bytes (a spool of several units). */
  append: boolean;
}

export type CopyAnswer =
  | { ok: true; records: number; longest: number; columns: ReturnType<typeof serializeColumns> }
  | { ok: false; name: string; message: string; code?: string; offset?: number };

parentPort?.on('message', (job: CopyJob) => {
  const schema = new InferredSchema({ temporalText: true });
  copyCheckedJsonl(
    job.src,
    job.dest,
    job.gzipLevel,
    {
      schema,
      check: new RecordJudge(job.limits),
      maxLineBytes: job.maxLineBytes,
    },
    job.append,
  ).then(
    (copied) => parentPort!.postMessage({ ok: true, ...copied, columns: serializeColumns(schema.columns) }),
    (err: unknown) => {
      const e = err as NodeJS.ErrnoException;
      const answer: CopyAnswer = {
        ok: false,
        name: e?.name ?? 'Error',
        message: e?.message ?? String(err),
        ...(typeof e?.code === 'string' && { code: e.code }),
        ...(err instanceof BadJsonlLine && { offset: err.offset }),
      };
      parentPort!.postMessage(answer);
    },
  );
});
