// The program: parse the command line, log, listen, and shut down cleanly on SIGTERM/SIGINT.
// main.ts runs it, from the build's one-file bundle when there is one (startup/bundle-loader.ts).
// First of all, the V8 flags (before fastify and the rest are loaded): see startup/set-v8-flags.ts.
import './startup/set-v8-flags.js';
import type { Settings } from './config/flags.js';
import { UsageError } from './config/errors.js';
import { DEMO, DEMO_FABRIC, LOG_FORMAT, LOG_LEVEL, verifySettings } from './commands/command-line.js';
import { COLLECTORS } from './collectors/registry.js';
import { parseServeCommandLine, serveHelpText } from './commands/serve/command-line.js';
import { LISTEN_ADDRESS, TELEMETRY_PATH } from './commands/serve/flags.js';
import { SYSFS_PATH } from './collectors/host/host-reading.js';
import type { Exporter } from './commands/serve/exporter.js';
import { createLogger } from './log/logger.js';
import { buildInfo } from './metrics/build-info.js';

const SHUTDOWN_GRACE_MS = 1500;

/** Says in one line why the process stops: stderr until the logger exists, then the logger. */
let reportCrash = (what: string, error: unknown): void => {
  process.stderr.write(`infiniband-exporter: ${what}: ${error instanceof Error ? error.message : String(error)}\n`);
};

/**
 * An error nothing caught, thrown or rejected anywhere, stops the process with one log line and
 * exit code 1, so that the service manager restarts it: Node.js's default for a rejection would
 * stop it without a word in the log, and one caught half-way would leave it serving stale data.
 */
function exitOnUncaughtErrors(): void {
  const stop =
    (what: string) =>
    (error: unknown): void => {
      try {
        reportCrash(what, error);
      } finally {
        process.exit(1);
      }
    };
  process.on('uncaughtException', stop('uncaught exception'));
  process.on('unhandledRejection', stop('unhandled promise rejection'));
}

function usageFailure(error: unknown): never {
  if (error instanceof UsageError) {
    process.stderr.write(`infiniband-exporter: ${error.message}\n`);
    process.exit(2);
  }
  throw error;
}

async function listen(exporter: Exporter, settings: Settings): Promise<string> {
  const { host, port } = settings.get(LISTEN_ADDRESS);
  if (host !== undefined) return exporter.app.listen({ host, port });
  try {
    // Every interface: IPv6 and IPv4 where the host has IPv6, else IPv4 only.
    return await exporter.app.listen({ host: '::', port });
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code !== 'EAFNOSUPPORT' && code !== 'EADDRNOTAVAIL') throw error;
    return exporter.app.listen({ host: '0.0.0.0', port });
  }
}

async function main(): Promise<void> {
  exitOnUncaughtErrors();
  if (process.argv[2] === 'topology') {
    const { runTopology } = await import('./commands/topology/command.js');
    process.exitCode = await runTopology(process.argv.slice(3), process);
    return;
  }
  if (process.argv[2] === 'check') {
    // Loaded on demand: the check path never loads the HTTP server.
    const { runCheck } = await import('./commands/check/command.js');
    process.exitCode = await runCheck(process.argv.slice(3), process);
    return;
  }
  let command;
  try {
    command = parseServeCommandLine(process.argv.slice(2));
    if (command.action === 'run') await verifySettings(command.settings, COLLECTORS);
  } catch (error) {
    usageFailure(error);
  }
  if (command.action === 'help') {
    process.stdout.write(serveHelpText());
    return;
  }
  if (command.action === 'version') {
    const info = buildInfo();
    process.stdout.write(`infiniband-exporter ${info.version} (revision ${info.revision}, Node.js ${info.nodejsVersion})\n`);
    return;
  }
  const { settings } = command;
  const logger = createLogger(settings.get(LOG_LEVEL), settings.get(LOG_FORMAT));
  reportCrash = (what, error) => logger.fatal({ err: error }, `stopping: ${what}`);
  const { Exporter } = await import('./commands/serve/exporter.js');
  const { demoRunners } = await import('./commands/demo.js');
  let exporter: Exporter;
  try {
    // A mistake only a reading finds (a cabling plan naming no node): as a bad flag, exit 2.
    exporter = new Exporter({ settings, logger, onFatal: (error) => fatal(error), runners: demoRunners(settings) });
  } catch (error) {
    usageFailure(error);
  }

  let stopping = false;
  const shutdown = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    const force = setTimeout(() => {
      logger.warn('shutdown took too long; exiting anyway');
      process.exit(1);
    }, SHUTDOWN_GRACE_MS);
    force.unref();
    exporter.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, 'error during shutdown');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGHUP', () => {
    logger.info('SIGHUP: reading the configuration files again');
    exporter.reload();
  });
  function fatal(error: UsageError): void {
    process.stderr.write(`infiniband-exporter: ${error.message}\n`);
    logger.error({ err: error.message }, 'stopping: a configuration mistake found while reading');
    process.exitCode = 2;
    void exporter.stop().finally(() => process.exit(2));
  }

  const demo = settings.get(DEMO);
  if (demo === 'host') logger.info({ sysfs: settings.get(SYSFS_PATH) }, 'demo mode: serving the bundled demo host');
  if (demo === 'fabric') logger.info({ fabric: DEMO_FABRIC }, 'demo mode: serving the bundled recorded fabric (see /fabric)');
  exporter.start();
  try {
    const address = await listen(exporter, settings);
    logger.info({ address, telemetryPath: settings.get(TELEMETRY_PATH), sysfs: settings.get(SYSFS_PATH) }, 'listening');
  } catch (error) {
    const { host, port } = settings.get(LISTEN_ADDRESS);
    logger.error({ err: error, address: host === undefined ? `:${port}` : `${host}:${port}` }, 'cannot listen');
    await exporter.stop().catch(() => undefined);
    process.exit(1);
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`infiniband-exporter: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
