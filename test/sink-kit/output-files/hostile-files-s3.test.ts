/**
 * An `s3://` output whose own objects someone else changed (src/sink-kit/output-files/inside-output.ts), on a real
 * S3-compatible server: a commit marker or a manifest naming keys outside the prefix, a generation pointer climbing
 * out. Every command that opens the output — run, `state drop`, `compact`, a dead-letter replay, and `finalize` for a
 * sharded set — refuses with exit 2, naming the object, and touches nothing outside. Local: hostile-files.test.ts.
 */
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startS3Server, type S3TestServer } from '../../support/s3-server.js';
import { cli, COMMANDS, expectRefused, removeScenes, scene } from './hostile-scene.js';

let s3: S3TestServer;
beforeAll(async () => {
  s3 = await startS3Server();
});
afterAll(async () => {
  await s3?.stop();
  removeScenes();
});

describe('s3: a hostile commit marker: every command refuses it and touches nothing outside', () => {
  for (const [command, args] of Object.entries(COMMANDS))
    it(command, async () => {
      const s = await scene({ s3, sharded: command === 'finalize' });
      const tmp = `.sluice-tmp/${s.shard ? `${s.shard}/` : ''}`;
      // A commit recorded and not completed: its copies into place, then the objects it replaced deleted.
      await s.writeMarker('commit.evil.pending', {
        moves: [{ from: `${tmp}gone/0.tmp`, to: await s.committedFile() }],
        removes: ['../victim.txt', '../victim2.txt'],
      });
      await expectRefused(s, await cli(...args(s.file)), s.markerAt('commit.evil.pending'));
    });

  it('a marker copying an object from outside the temp area into the output', async () => {
    const s = await scene({ s3 });
    await s.writeMarker('commit.in.pending', { moves: [{ from: '../victim.txt', to: await s.committedFile() }] });
    const r = await cli(...COMMANDS.run!(s.file));
    await expectRefused(s, r, s.markerAt('commit.in.pending'));
    expect(r.err).toContain('a key outside .sluice-tmp/');
  });
});

describe('s3: a hostile upload journal', () => {
  it('naming an upload outside the temp and staging areas: the run refuses, aborting nothing', async () => {
    const s = await scene({ s3 });
    await s.writeMarker('c1/0.upload', { key: '../victim.txt', upload_id: 'abc123' });
    const r = await cli(...COMMANDS.run!(s.file));
    await expectRefused(s, r, s.markerAt('c1/0.upload'));
    expect(r.err).toContain('key names "../victim.txt", not a key of .sluice-tmp/ or .sluice-staged/');
  });
});

describe('s3: a hostile manifest: every command refuses it and touches nothing outside', () => {
  for (const [command, args] of Object.entries(COMMANDS))
    it(command, async () => {
      const s = await scene({ s3, sharded: command === 'finalize' });
      await s.editManifest((m) => Object.values(m.units)[0]!.files.push('../victim.txt', '../victim2.txt'));
      const r = await cli(...args(s.file));
      await expectRefused(s, r, s.manifestAt);
      expect(r.err).toMatch(/names "\.\.\/victim\.txt", a path that climbs out with `\.\.`/);
    });
});

describe('s3: write: replace with a generation pointer climbing out', () => {
  for (const [what, key, body] of [
    ['NEXT', '.sluice-generations/NEXT', '../../victim-gen\n'],
    ['the pointer _sluice_current.json', '_sluice_current.json', '{"version":1,"generation":"../..","manifest":"x"}'],
  ] as const)
    it(`${what}: the run refuses, writing nothing outside the prefix`, async () => {
      const s = await scene({ s3, write: 'replace' });
      const prefix = new URL(s.root).pathname.slice(1);
      await s3.client.send(new PutObjectCommand({ Bucket: 'hostile', Key: `${prefix}${key}`, Body: body }));
      const before = await s3.keys('hostile');
      const r = await cli(...COMMANDS.run!(s.file), '--fresh');
      await expectRefused(s, r, `${s.root}${key}`);
      expect((await s3.keys('hostile')).filter((k) => !k.startsWith(prefix))).toEqual(
        before.filter((k) => !k.startsWith(prefix)),
      );
    });
});
