/** The `sluice` executable's entry: bin/sluice.js runs the compiled copy of this file (dist/src/cli/main.js). */
import { runCli } from './cli.js';
import { processIo } from './io.js';

const code = await runCli(process.argv.slice(2), processIo());
// Exit explicitly once output is flushed: a stray handle (a keep-alive socket, a timer) must not keep a cron job alive.
process.stdout.write('', () => process.exit(code));
