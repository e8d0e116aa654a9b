/**
 * The tests' S3 server keeps S3's own guarantees that the sinks rely on: a PUT replaces an object whole, however
 * many PUTs of the key run at once (s3rver alone tore 8 of 20 such pairs: the short body over the long one's head),
 * and a GET after a PUT reads what that PUT wrote.
 */
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { startS3Server } from './s3-server.js';

describe('the S3 test server', () => {
  it('two PUTs of one key at once leave one of them whole; a GET after a PUT reads it', async () => {
    const s3 = await startS3Server();
    try {
      await s3.createBucket('atomic');
      const long = Buffer.from(JSON.stringify({ v: 'a'.repeat(8_000_000) }));
      const short = Buffer.from(JSON.stringify({ v: 'b' }));
      const put = (key: string, body: Buffer): Promise<unknown> =>
        s3.client.send(new PutObjectCommand({ Bucket: 'atomic', Key: key, Body: body }));
      for (let i = 0; i < 20; i++) {
        await Promise.all([put('raced', long), put('raced', short)]);
        const got = await s3.get('atomic', 'raced');
        expect(got.equals(long) || got.equals(short), `round ${i}: ${got.length} bytes, torn`).toBe(true);
        await put('then-read', i % 2 ? long : short);
        expect((await s3.get('atomic', 'then-read')).equals(i % 2 ? long : short)).toBe(true);
      }
      expect(await s3.keys('atomic')).toEqual(['raced', 'then-read']);
    } finally {
      await s3.stop();
    }
  }, 120_000);
});
