// The server's own flags (node_exporter's names): where and how it serves.
import { DEFAULT_MAX_CONNECTIONS_PER_CLIENT } from './connection-cap.js';
import { ADDRESS, BOOLEAN, COUNT, HTTP_PATH, STRING, flag, optionalFlag } from '../../config/flags.js';

export const LISTEN_ADDRESS = flag(ADDRESS, {
  name: 'web.listen-address',
  key: 'web.listen_address',
  default: ':10460',
  help: 'Address to serve on, host:port (":10460" = every interface).',
});
export const TELEMETRY_PATH = flag(HTTP_PATH, {
  name: 'web.telemetry-path',
  key: 'web.telemetry_path',
  default: '/metrics',
  help: 'Path under which metrics are served.',
});
export const WEB_CONFIG_FILE = optionalFlag(STRING, {
  name: 'web.config.file',
  key: 'web.config_file',
  help: 'exporter-toolkit web config (tls_server_config, basic_auth_users).',
});
export const MAX_CONNECTIONS = flag(COUNT, {
  name: 'web.max-connections',
  key: 'web.max_connections',
  default: '512',
  help: 'Connections open at once (idle, in TLS handshake or in a request); past it the one waiting longest for its request headers is closed (the newcomer when all are in requests), counted and logged.',
});
export const MAX_CONNECTIONS_PER_CLIENT = flag(COUNT, {
  name: 'web.max-connections-per-client',
  key: 'web.max_connections_per_client',
  default: String(DEFAULT_MAX_CONNECTIONS_PER_CLIENT),
  help: "Connections open at once from one remote address; past it that address's connection waiting longest for its request headers is closed, counted and logged.",
});
export const DISABLE_EXPORTER_METRICS = flag(BOOLEAN, {
  name: 'web.disable-exporter-metrics',
  key: 'web.disable_exporter_metrics',
  default: false,
  help: 'Leave out the process_* and nodejs_* metrics of the exporter itself.',
});

export const RUNBOOK_URL = optionalFlag(STRING, {
  name: 'web.runbook-url',
  key: 'web.runbook_url',
  help: "Where a site keeps its own copy of the runbooks (a URL the anchors #<alert name in lower case> are added to): the landing page's and /fabric's links point there instead of the exporter's own /runbooks; for the runbook_url of the alerts, rewrite rules/ with the same URL (docs/runbooks.md).",
});

export const SERVE_FLAGS = [
  LISTEN_ADDRESS,
  TELEMETRY_PATH,
  WEB_CONFIG_FILE,
  MAX_CONNECTIONS,
  MAX_CONNECTIONS_PER_CLIENT,
  DISABLE_EXPORTER_METRICS,
  RUNBOOK_URL,
];
