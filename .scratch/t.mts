import { startHostileService, endless, gzipBomb, text } from '../bench/lib/hostile-service.js';
import { runCli } from '../src/cli/cli.js';
import { memoryIo } from '../test/cli/memory-io.js';
import { writeFileSync, mkdtempSync } from 'node:fs';
const s = await startHostileService({ download: () => (process.argv[2] === 'bomb' ? gzipBomb() : process.argv[2] === 'ok' ? text('{"a":1}\n') : endless('', 'x'.repeat(65536))) });
const dir = mkdtempSync('/tmp/h1/ws-');
writeFileSync(`${dir}/p.yaml`, `version: 1
name: hostile
service: { base_url: ${s.url}, api_key: k }
source: { type: snapshot, snapshot_id: snap_hostile1, download: { format: jsonl, compress: false, batch_size: 1000 } }
limits: { max_record_bytes: 4096, max_unit_bytes: 1MiB, max_inflate_ratio: 50, unit_timeout_s: 30 }
fast_path: false
sink: { type: jsonl, path: out }
`);
const io = memoryIo({}); const t0 = Date.now(); const e0 = io.err; io.err = (x) => { console.log(Date.now() - t0, x); e0(x); };
const t = Date.now();
const code = await runCli(['run', `${dir}/p.yaml`, '--no-progress'], io);
console.log(code, Date.now() - t, io.stderr.slice(-2));
await s.close();
