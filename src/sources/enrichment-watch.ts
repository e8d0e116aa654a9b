/**
 * When a deep-lookup enrichment is done. The service documents no status for it (docs/service.md §4.2): its column
 * is listed at once and its values fill in on later reads of `GET /request/{id}`, and a value the lookup found nothing
 * for stays null. A column that is merely listed, or whose values are still arriving, is not done: downloading it
 * then loads a paid column of nulls. So an enrichment is done when
 *
 * - the request says so (an `enrichments` entry or the column itself with a `status`, should the service send one),
 * - or every row has a value,
 * - or some rows have values and their number has not changed for `settleMs` of the service's time (the rest are
 *   the lookup's "nothing found").
 *
 * Until then the source waits (its poll timeout bounds it), and on time out names the column and how far it got.
 */
import { SluiceError } from '../core/errors.js';

type Obj = Record<string, unknown>;

export class EnrichmentWatch {
  private filled = -1;
  private changedAt = 0;
  private rows = 0;
  private settledOn: string | undefined;

  constructor(
    private readonly column: string,
    private readonly settleMs: number,
    /** The service's time (its answers' Date header), so an emulator's fast clock settles as fast. */
    private readonly now: () => number,
  ) {}

  /** Whether the enrichment is done, given the request as `GET /request/{id}` answered now. */
  done(request: Obj): boolean {
    const status = this.statusOf(request);
    if (status === 'failed')
      throw new SluiceError(`the enrichment of column ${this.column} failed`, {
        hint: 'look at the request in the service; the column was paid only for the values it found',
      });
    if (status === 'completed') return true;
    if (status === 'processing' || status === 'running') return false;
    const columns = Array.isArray(request.columns) ? (request.columns as Obj[]) : [];
    if (!columns.some((c) => c.name === this.column)) return false;
    const data = Array.isArray(request.data) ? (request.data as Obj[]) : [];
    const filled = data.filter((row) => hasValue(row[this.column])).length;
    this.rows = data.length;
    if (filled === data.length) return true;
    const now = this.now();
    if (filled !== this.filled) {
      this.filled = filled;
      this.changedAt = now;
      return false;
    }
    if (filled === 0 || now - this.changedAt < this.settleMs) return false;
    this.settledOn = `${filled} of ${data.length} rows have a value, unchanged for ${Math.round((now - this.changedAt) / 1000)} s`;
    return true;
  }

  /** Why the enrichment was taken as done without every row filled, for the log (undefined otherwise). */
  get settled(): string | undefined {
    return this.settledOn;
  }

  /** How far it got, for the time-out message. */
  progress(): string {
    if (this.filled < 0) return 'the request does not list the column yet, or none of its rows has a value';
    return `${this.filled} of ${this.rows} rows have a value`;
  }

  private statusOf(request: Obj): string | undefined {
    const named = (list: unknown, key: string): Obj | undefined =>
      Array.isArray(list) ? (list as Obj[]).find((x) => x?.[key] === this.column) : undefined;
    const entry = named(request.enrichments, 'column_name') ?? named(request.columns, 'name');
    return typeof entry?.status === 'string' ? entry.status : undefined;
  }
}

function hasValue(v: unknown): boolean {
  return v !== null && v !== undefined && v !== '';
}
