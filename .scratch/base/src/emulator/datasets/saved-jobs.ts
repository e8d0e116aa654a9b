/**
 * Filter jobs in the emulator's state file: each job's id, creation time and the request that started it (filter as
 * sent, uploaded files, records limit), not its matches: the data is generated from the seed, so scanning again
 * finds the same records, and a state file stays small whatever the snapshots' sizes.
 */
import { z } from 'zod';
import type { EmulatorContext } from '../context.js';
import { findDataset } from '../data/datasets-catalogue.js';
import { HttpError } from '../router.js';
import { EmulatorStateError } from '../state-file.js';
import { compileFilter } from './filter-compile.js';
import { validateFilter } from './filter-validate.js';
import type { SnapshotJob, SnapshotJobs } from './jobs.js';

const savedJobSchema = z.object({
  id: z.string().min(1),
  dataset_id: z.string().min(1),
  /** Emulated epoch ms. */
  created_at: z.number(),
  filter: z.unknown(),
  files: z.array(z.object({ name: z.string(), text: z.string() })),
  records_limit: z.number().int().positive().optional(),
});

const savedSnapshotsSchema = z.object({
  serial: z.number().int().nonnegative(),
  jobs: z.array(savedJobSchema),
});

type SavedJob = z.infer<typeof savedJobSchema>;

/** Registers the jobs' section and resumes the jobs an earlier instance saved. */
export function persistSnapshotJobs(jobs: SnapshotJobs, ctx: EmulatorContext): void {
  const saved = ctx.state.section('snapshots', savedSnapshotsSchema, () => ({
    serial: jobs.serial,
    jobs: jobs.all().map(savedJob),
  }));
  if (!saved) return;
  for (const j of saved.jobs) resumeJob(jobs, j, ctx.state.file);
  jobs.serial = saved.serial;
}

function savedJob(job: SnapshotJob): SavedJob {
  const { filter, files, recordsLimit } = job.recipe;
  return {
    id: job.id,
    dataset_id: job.dataset.id,
    created_at: job.createdAt,
    filter,
    files,
    ...(recordsLimit !== undefined && { records_limit: recordsLimit }),
  };
}

function resumeJob(jobs: SnapshotJobs, j: SavedJob, file: string | undefined): void {
  const fail = (why: string): EmulatorStateError =>
    new EmulatorStateError(`the emulator state ${file} is unusable: snapshot ${j.id} ${why}`, {
      hint:
        'it was written by another version of the emulator or changed by hand, and is left untouched: use that ' +
        'version, or delete the file to start empty (clients that saved its snapshot ids must then start over)',
    });
  const dataset = findDataset(j.dataset_id);
  if (!dataset) throw fail(`is of dataset ${j.dataset_id}, which this emulator does not serve`);
  const checked = validateFilter(j.filter);
  if (!checked.filter) throw fail(`has a filter this emulator rejects: ${checked.errors.join('; ')}`);
  let predicate;
  try {
    predicate = compileFilter(checked.filter, dataset, new Map(j.files.map((f) => [f.name, f])));
  } catch (err) {
    if (!(err instanceof HttpError)) throw err;
    throw fail(`has a filter this emulator rejects: ${err.message}`);
  }
  jobs.resume(j.id, dataset, j.created_at, predicate, {
    filter: j.filter,
    files: j.files,
    ...(j.records_limit !== undefined && { recordsLimit: j.records_limit }),
  });
}
