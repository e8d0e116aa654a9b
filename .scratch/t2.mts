import { startHostileService, endless } from '../bench/lib/hostile-service.js';
import { runCli } from '../src/cli/cli.js';
import { memoryIo } from '../test/cli/memory-io.js';
import { writeFileSync, mkdtempSync } from 'node:fs';
const s = await startHostileService({ download: () => endless('', 'x'.repeat(65536)) });
const dir = mkdtempSync('/tmp/ws-');
writeFileSync(`${dir}/p.yaml`, `version: 1
name: hostile
service: { base_url: ${s.url}, api_key: k }
source: { type: snapshot, snapshot_id: snap_hostile1, download: { format: jsonl, compress: false, batch_size: 1000 } }
limits: { max_record_bytes: 4096, max_unit_bytes: 1MiB }
fast_path: false
sink: { type: jsonl, path: out }
`);
const io = memoryIo({}); const t0 = Date.now(); const e0 = io.err; io.err = (x) => { console.log(Date.now() - t0, x); e0(x); };
const timer = setTimeout(() => { console.log('HUNG; requests', s.requests); process.exit(9); }, 40000);
const code = await runCli(['run', `${dir}/p.yaml`, '--no-progress'], io);
console.log('code', code);
clearTimeout(timer);
await s.close();
