/** `sluice zones …`: the zone endpoints of the service, JSON on stdout. Account-changing ones need `--yes`. */
import type { CommandModule } from 'yargs';
import { jsonArg, listArg } from '../args.js';
import type { CliContext } from '../context.js';
import { requireYes, serviceCommandGroup, subcommand, withClient, type ServiceArgs } from '../service-client.js';

type Args = ServiceArgs & Record<string, any>;

const DAY = /^\d{4}-\d{2}-\d{2}$/;

export function zonesCommand(ctx: CliContext): CommandModule<object, Args> {
  const print = (value: unknown): void => ctx.io.out(JSON.stringify(value, null, 2));
  const call = (args: Args, fn: Parameters<typeof withClient>[2]) => withClient(ctx.io, args, fn).then(print);

  const sub = subcommand<Args>;

  const commands: CommandModule<Args, Args>[] = [
    sub(
      'active',
      'List the active zones (name, type)',
      (y) => y.example('$0 zones active', 'Zones of the account'),
      (a) => call(a, (c) => c.zones.active()),
    ),
    sub(
      'countries',
      'Countries available per zone type',
      (y) => y.example('$0 zones countries', 'DC_shared, ISP_shared, … → country codes'),
      (a) => call(a, (c) => c.zones.countries()),
    ),
    sub(
      'cost <zone>',
      'Cost and bandwidth of a zone (month and day buckets, or one custom period)',
      (y) =>
        y
          .positional('zone', { type: 'string', demandOption: true, describe: 'Zone name' })
          .option('from', { type: 'string', describe: 'Start of a custom period, YYYY-MM-DD (inclusive)' })
          .option('to', { type: 'string', describe: 'End of a custom period, YYYY-MM-DD (exclusive)' })
          .check((a) => {
            if ((a.from === undefined) !== (a.to === undefined))
              throw new Error('give both --from and --to, or neither');
            for (const d of [a.from, a.to])
              if (d !== undefined && !DAY.test(String(d))) throw new Error(`"${d}" is not YYYY-MM-DD`);
            return true;
          })
          .example('$0 zones cost serp_zone', 'The six month/day buckets')
          .example('$0 zones cost serp_zone --from 2026-08-01 --to 2026-09-01', 'One custom period'),
      (a) =>
        call(a, (c) => c.zones.cost(String(a.zone), a.from !== undefined ? { from: a.from, to: a.to } : undefined)),
    ),
    sub(
      'create <name>',
      'Create a zone (changes the account; needs --yes)',
      (y) =>
        y
          .positional('name', { type: 'string', demandOption: true, describe: 'Zone name (letters, digits, _)' })
          .option('type', { type: 'string', default: 'serp', describe: 'Zone type' })
          .option('plan', {
            coerce: jsonArg('plan'),
            describe: 'Plan fields as a JSON object (default {"type": <zone type>})',
          })
          .option('yes', { type: 'boolean', default: false, describe: 'Confirm: this changes the account' })
          .check((a) => {
            if (a.plan !== undefined && (typeof a.plan !== 'object' || a.plan === null || Array.isArray(a.plan)))
              throw new Error('--plan must be a JSON object, e.g. \'{"type":"serp"}\'');
            return true;
          })
          .example('$0 zones create serp_live --yes', 'A SERP zone with plan {"type":"serp"}')
          .example(
            `$0 zones create dc1 --type static --plan '{"type":"static","ips_type":"shared","ips":1}' --yes`,
            'A zone with explicit plan fields',
          ),
      async (a) => {
        requireYes(a, `zones create ${a.name}`);
        const plan = (a.plan as Record<string, unknown> | undefined) ?? { type: a.type };
        await call(a, (c) => c.zones.create({ zone: { name: String(a.name), type: String(a.type) }, plan }));
      },
    ),
    sub(
      'refresh-ips <zone>',
      'Replace IPs of a zone with new ones (changes the account, may cost; needs --yes)',
      (y) =>
        y
          .positional('zone', { type: 'string', demandOption: true, describe: 'Zone name' })
          .option('ips', { type: 'string', array: true, describe: 'Only these static IPs (default: all of the zone)' })
          .option('vips', { type: 'string', array: true, describe: 'Only these dedicated residential IPs' })
          .option('country', { type: 'string', describe: 'Country of the new IPs, lowercase code (e.g. us)' })
          .option('country-city', { type: 'string', describe: 'City of the new IPs, <country>-<city>' })
          .option('yes', { type: 'boolean', default: false, describe: 'Confirm: this changes the account' })
          .example('$0 zones refresh-ips dc1 --yes', 'Refresh every IP of the zone')
          .example('$0 zones refresh-ips dc1 --ips 1.2.3.4 --country us --yes', 'Replace one IP by a US one'),
      async (a) => {
        requireYes(a, `zones refresh-ips ${a.zone}`);
        await call(a, (c) =>
          c.zones.refreshIps({
            zone: String(a.zone),
            ...(a.ips !== undefined && { ips: listArg(a.ips) }),
            ...(a.vips !== undefined && { vips: listArg(a.vips) }),
            ...(a.country !== undefined && { country: String(a.country) }),
            ...(a['country-city'] !== undefined && { country_city: String(a['country-city']) }),
          }),
        );
      },
    ),
    sub(
      'remove-domain <zone>',
      'Remove domains from a zone’s allow list or deny list (changes the account; needs --yes)',
      (y) =>
        y
          .positional('zone', { type: 'string', demandOption: true, describe: 'Zone name' })
          .option('type', {
            choices: ['whitelist', 'blacklist'],
            demandOption: true,
            describe: 'Which list: whitelist (allow) or blacklist (deny)',
          })
          .option('domain', { type: 'string', array: true, demandOption: true, describe: 'Domains to remove' })
          .option('yes', { type: 'boolean', default: false, describe: 'Confirm: this changes the account' })
          .example('$0 zones remove-domain dc1 --type whitelist --domain example.com --yes', 'Remove one domain'),
      async (a) => {
        requireYes(a, `zones remove-domain ${a.zone}`);
        await call(a, (c) =>
          c.zones.removeDomain({
            zone: String(a.zone),
            type: a.type as 'whitelist' | 'blacklist',
            domain: listArg(a.domain).join(' '),
          }),
        );
      },
    ),
  ];

  return serviceCommandGroup('zones', commands, [
    ['$0 zones active', 'Zones of the account (SLUICE_BASE_URL, SLUICE_API_KEY)'],
    ['$0 zones countries --base-url emulator', 'Try it offline against the embedded emulator'],
  ]);
}
