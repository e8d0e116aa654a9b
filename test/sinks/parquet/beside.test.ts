import { describe, expect, it } from 'vitest';
import { PublishesBeside } from '../../../sinks/parquet/beside.js';
import { settled } from '../../support/settled.js';

/** A publish that runs until the test ends it. */
function heldPublish(): { publish: () => Promise<void>; started: () => number; end: (err?: Error) => void } {
  let starts = 0;
  let end!: (err?: Error) => void;
  return {
    publish: () => {
      starts++;
      return new Promise<void>((resolve, reject) => (end = (err) => (err ? reject(err) : resolve())));
    },
    started: () => starts,
    end: (err) => end(err),
  };
}

describe('publishes beside the next units', () => {
  it('starts a publish without making the commit wait for it, and one at a time', async () => {
    const beside = new PublishesBeside(() => undefined);
    const p = heldPublish();
    expect(await settled(beside.start(p.publish, () => false))).toBe(true);
    expect(await settled(beside.start(p.publish, () => false))).toBe(true);
    expect(p.started()).toBe(1);
    expect(await settled(beside.ended())).toBe(false);
    p.end();
    expect(await settled(beside.ended())).toBe(true);
    await beside.start(p.publish, () => false);
    expect(p.started()).toBe(2);
    p.end();
    await beside.ended();
  });

  it('makes a commit wait for the running publish while the backlog beside it is full, then start the next', async () => {
    const beside = new PublishesBeside(() => undefined);
    const p = heldPublish();
    await beside.start(p.publish, () => true);
    const waiting = beside.start(p.publish, () => true);
    expect(await settled(waiting)).toBe(false);
    p.end();
    expect(await settled(waiting)).toBe(true);
    expect(p.started()).toBe(2);
    p.end();
    await beside.ended();
  });

  it('tells a failed publish once, and fails no commit for it', async () => {
    const failures: unknown[] = [];
    const beside = new PublishesBeside((err) => failures.push(err));
    const p = heldPublish();
    await beside.start(p.publish, () => false);
    const waiting = beside.start(p.publish, () => true);
    p.end(new Error('disk full'));
    // The commit that waited is not failed by the publish: its unit is committed; it starts the next publish.
    await expect(waiting).resolves.toBeUndefined();
    expect(failures.map((e) => (e as Error).message)).toEqual(['disk full']);
    expect(p.started()).toBe(2);
    p.end();
    await beside.ended();
    expect(failures).toHaveLength(1);
  });
});
