/**
 * Text that cannot forge lines: control characters from data or from the service (a newline, CR, ESC, C1 controls,
 * bidirectional overrides) reach neither the terminal nor a line-based log as themselves — not through a log line,
 * an error line, the summary or `sluice runs`.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/cli.js';
import { printed } from '../../src/cli/io.js';
import { reportError } from '../../src/cli/report.js';
import { SluiceError } from '../../src/core/errors.js';
import { printableLine, printableLines } from '../../src/core/printable.js';
import { createLogger } from '../../src/runtime/logger.js';
import { memoryIo } from '../cli/memory-io.js';

/** A value that would clear the screen, return to the line's start and print a line of its own. */
const HOSTILE = 'x\u001b[2J\r\nerror: forged\u009b31m\u202e';
// eslint-disable-next-line no-control-regex -- what must not be printed
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

describe('printable text', () => {
  it('escapes every control character; a JSON text stays the same JSON', () => {
    expect(printableLine(HOSTILE)).toBe('x\\u001b[2J\\r\\nerror: forged\\u009b31m\\u202e');
    expect(printableLines('a\nb\u001b')).toBe('a\nb\\u001b');
    const json = JSON.stringify({ v: HOSTILE });
    expect(JSON.parse(printableLine(json))).toEqual({ v: HOSTILE });
    expect(printableLine('tab\tkept, ünïcödé kept')).toBe('tab\tkept, ünïcödé kept');
  });

  it('a log line stays one line, in text and in JSON', () => {
    for (const format of ['text', 'json'] as const) {
      const lines: string[] = [];
      const log = createLogger({ format, level: 'info', write: (l) => lines.push(l) });
      log.warn(`unit ${HOSTILE} failed`, { id: HOSTILE });
      expect(lines).toHaveLength(1);
      expect(lines[0]).not.toMatch(CONTROL);
      expect(lines[0]).not.toContain('\n');
      if (format === 'json')
        expect(JSON.parse(lines[0]!)).toMatchObject({ msg: `unit ${HOSTILE} failed`, id: HOSTILE });
    }
  });

  it('an error line and its fix cannot forge another error line', () => {
    const io = memoryIo();
    reportError(io, new SluiceError(`the service said: ${HOSTILE}`, { hint: `retry ${HOSTILE}` }), {
      debug: true,
      format: 'text',
    });
    const text = io.stderr.map(printed).join('\n');
    expect(text).not.toMatch(CONTROL);
    expect(text.split('\n').filter((l) => l.startsWith('error: '))).toHaveLength(1);
    expect(text.split('\n').filter((l) => l.startsWith('error: forged'))).toEqual([]);
  });

  it('a run whose file names and records carry them: logs, summary and history print them escaped', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'sluice-printable-'));
    mkdirSync(path.join(dir, 'in'));
    // A file name with a newline and ESC, and a line that is not JSON (a raw ESC and CR in a string) quoted by its
    // dead letter's reason.
    writeFileSync(
      path.join(dir, 'in', `a\nerror: forged\u001b[2J.jsonl`),
      `{"id": 1}\n{"id": "\u001b[2J\r${HOSTILE.replace('\n', ' ')}"}\n`,
    );
    writeFileSync(
      path.join(dir, 'p.yaml'),
      'version: 1\nname: printable\nsource: { type: file, paths: [in], format: jsonl }\nsink: { type: jsonl, path: out }\n',
    );
    const commands = [
      ['run', path.join(dir, 'p.yaml'), '--no-progress'],
      ['runs', path.join(dir, 'p.yaml')],
      ['dead-letters', path.join(dir, 'p.yaml')],
    ];
    for (const args of commands) {
      const io = memoryIo({});
      expect(await runCli(args, io), io.stderr.join('\n')).toBe(0);
      const out = [...io.stdout, ...io.stderr].map(printed).join('\n');
      expect(out, args[0]).not.toMatch(CONTROL);
      expect(
        out.split('\n').filter((l) => /^(error|warn): forged/.test(l)),
        args[0],
      ).toEqual([]);
      if (args[0] === 'run') expect(out).toMatch(/^ {2}dead letters 1 \(line is not valid JSON: .*\)$/m);
    }
  });
});
