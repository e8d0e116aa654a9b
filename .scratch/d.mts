import { decode } from '../src/decode/index.js';
async function* src() { for (let i = 0; i < 64; i++) yield Buffer.alloc(65536, 'x'); }
const t = Date.now();
try {
  for await (const b of decode(src(), { format: 'jsonl', unit: 'u', deadLetter: () => {}, bounds: { limits: { maxRecordBytes: 4096, maxUnitBytes: 1 << 20 } } })) void b;
} catch (e) { console.log((e as Error).message); }
console.log('ms', Date.now() - t);
