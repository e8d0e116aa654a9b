#!/usr/bin/env node
// The `sluice` executable: the compiled CLI (`npm run build`, which `npm install` and `npm ci` run through `prepare`).
const entry = import.meta.resolve('../dist/src/cli/main.js');

try {
  await import(entry);
} catch (err) {
  // A clone installed with --ignore-scripts has no dist/: say how to build it rather than print a resolver trace.
  if (err?.code !== 'ERR_MODULE_NOT_FOUND' || err?.url !== entry) throw err;
  process.stderr.write(
    'error: sluice is not built (dist/ is missing)\n  fix: run `npm run build` in the sluice folder\n',
  );
  process.exitCode = 1;
}
