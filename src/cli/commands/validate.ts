/**
 * `sluice validate <file…>`: every problem of every file as `file:line:col: message`. Exit 2 if there is any: each is
 * a configuration error, the code `run` exits with on the same file (the exit-code table, docs/guides/nightly-cron.md).
 */
import type { Argv, CommandModule } from 'yargs';
import { EXIT_CODES } from '../../core/errors.js';
import type { CliContext } from '../context.js';

interface ValidateArgs {
  files: string[];
}

export function validateCommand(ctx: CliContext): CommandModule<object, ValidateArgs> {
  return {
    command: 'validate <files..>',
    describe:
      'Check pipeline files: YAML, ${ENV} references, every option, the files they read, merge keys (nothing is run)',
    builder: (y) =>
      y
        .positional('files', { type: 'string', array: true, demandOption: true, describe: 'Pipeline YAML files' })
        .example('$0 validate pipelines/*.yaml', 'Check every example pipeline')
        .example('SLUICE_API_KEY=k $0 validate nightly.yaml', 'Check with the environment the run will have')
        .strict() as unknown as Argv<ValidateArgs>,
    handler: async (args) => {
      const { validatePipeline } = await import('../../pipeline/load.js');
      let problems = 0;
      for (const file of args.files) {
        const result = await validatePipeline(file, ctx.io.env);
        if (result.problems.length === 0) ctx.io.out(`${file}: ok`);
        for (const p of result.problems) {
          ctx.io.out(p.message);
          if (p.hint) ctx.io.out(`  fix: ${p.hint}`);
        }
        problems += result.problems.length;
      }
      if (problems > 0) {
        ctx.io.err(
          `${problems} problem${problems === 1 ? '' : 's'} in ${args.files.length} file${args.files.length === 1 ? '' : 's'}`,
        );
        ctx.exitCode = EXIT_CODES.config;
      }
    },
  };
}
