// "InfiniBand / Jobs": pick a running job (the jobs collector of fabric mode, from squeue or
// --jobs.file) and see its hosts, the links of its footprint and which of them are impaired, and
// the errors and transmit wait of its hosts' own ports (the host exporters' infiniband_host_job_info
// names the hosts a job runs on). The fabric's shards each serve part of a job's links and redundant
// instances serve them again: the counts divide by the shard-1 instances serving the job, as the
// recording rule infiniband:job_links_impaired:sum does. Congestion comes from the recording rules
// infiniband:job_congestion:max and :mean (shards and redundant sets joined), kept to the jobs the
// selected exporters serve.
import type * as dashboard from '@grafana/grafana-foundation-sdk/dashboard';
import {
  EMPTY_WHEN_HEALTHY,
  PHYSICAL_ERRORS,
  alertAbove,
  buildDashboard,
  datasourceVariable,
  instant,
  jobVariable,
  labelVariable,
  mergedTable,
  series,
  tableRow,
  type PanelSpec,
} from './panels.js';

export const JOBS_UID = 'infiniband-jobs';

export function jobs(): dashboard.Dashboard {
  const sel = 'job=~"$job", instance=~"$instance", job_id="$job_id"';
  const exporters = 'job=~"$job", instance=~"$instance"';
  /** Shard-1 instances serving the job: each redundant set counts the job's links once. */
  const sets = `count by (job_id) (infiniband_job_info{${sel}})`;
  const once = (expr: string, by: string) => `sum by (${by}) (${expr}) / on (job_id) group_left ${sets}`;
  const links = (scope: string) => `sum(${once(`infiniband_job_links{${sel}, scope="${scope}"}`, 'job_id')}) or vector(0)`;
  /** A job congestion recording rule (no job or instance label) for the selected job, as the selected exporters serve it. */
  const congestion = (rule: string) => `${rule} and on (job_id) max by (job_id) (infiniband_job_info{${sel}})`;
  const hostsOfJob = `max by (instance) (infiniband_host_job_info{${sel}})`;
  const hostRate = (counter: string) =>
    `sum by (instance) (rate(infiniband_port_${counter}_total{${exporters}}[$__rate_interval])) * on (instance) group_left ${hostsOfJob}`;

  const job: PanelSpec[] = [
    {
      type: 'table',
      title: 'Job',
      unit: 'none',
      w: 12,
      h: 4,
      description: 'The job as the workload manager lists it: id, user, partition and name.',
      targets: [tableRow(`max by (job_id, user, partition, name) (infiniband_job_info{${sel}})`)],
      transformations: mergedTable(['Time', '__name__', 'Value']),
    },
    {
      type: 'stat',
      title: 'Hosts on the fabric',
      unit: 'short',
      w: 3,
      h: 4,
      description: "The job's hosts matched to an adapter of the fabric (node-name-map name, NodeDescription, fabric.host_pattern).",
      targets: [instant(`max(infiniband_job_hosts{${sel}, state="on_fabric"})`)],
    },
    {
      type: 'stat',
      title: 'Hosts not found',
      unit: 'short',
      w: 3,
      h: 4,
      description: "The job's hosts no adapter of the fabric matches: their links are not watched. The exporter's log names them.",
      targets: [instant(`max(infiniband_job_hosts{${sel}, state="not_found"})`)],
      defaults: { thresholds: alertAbove(1, 'orange') },
    },
    {
      type: 'stat',
      title: 'Adapter links',
      unit: 'short',
      w: 3,
      h: 4,
      description: "Links of the job's adapters to their switches.",
      targets: [instant(links('host'))],
    },
    {
      type: 'stat',
      title: 'Inter-switch links',
      unit: 'short',
      w: 3,
      h: 4,
      description: "Inter-switch links on the minimal-hop paths between the leaves the job's hosts hang off.",
      targets: [instant(links('switch'))],
    },
  ];

  const impaired: PanelSpec[] = [
    {
      type: 'table',
      title: 'Impaired links of the job',
      unit: 'short',
      w: 12,
      h: 7,
      description: `Links of the job's footprint that are down, degraded, miswired, over the BER threshold or with rising errors, by scope (host: adapter links; switch: inter-switch links) and reason. \`infiniband-exporter check --collector.fabric\` names each link. ${EMPTY_WHEN_HEALTHY}`,
      targets: [tableRow(`${once(`infiniband_job_links_impaired{${sel}}`, 'job_id, scope, reason')} > 0`)],
      transformations: mergedTable(['Time', '__name__']),
    },
    {
      type: 'timeseries',
      title: 'Impaired links over time',
      unit: 'short',
      w: 12,
      h: 7,
      description: `Impaired links of the job's footprint by reason, over time: when a link went bad under the job. ${EMPTY_WHEN_HEALTHY}`,
      targets: [series(`${once(`infiniband_job_links_impaired{${sel}}`, 'job_id, reason')} > 0`, '{{reason}}')],
    },
    {
      type: 'timeseries',
      title: 'Worst congested link of the job',
      unit: 'percentunit',
      w: 12,
      h: 7,
      description:
        "The most congested link of the job's footprint, by scope (host: adapter links; switch: inter-switch links): the fraction of the last ports cycle it had data to send and could not (PortXmitWait), the worse direction. From 0.3 the link is congested and every collective of the job waits on it; the fabric dashboard's congestion row says whether a whole tier is.",
      targets: [series(congestion('infiniband:job_congestion:max'), '{{scope}}')],
      defaults: { min: 0, max: 1, thresholds: alertAbove(0.3, 'orange') },
    },
    {
      type: 'timeseries',
      title: 'Mean congestion of the job',
      unit: 'percentunit',
      w: 12,
      h: 7,
      description:
        "The mean stalled fraction over the links of the job's footprint, by scope: high with a low worst link is congestion spread over the job's paths (oversubscription, a neighbour job's traffic); low with a high worst link is one hot link (routing, placement).",
      targets: [series(congestion('infiniband:job_congestion:mean'), '{{scope}}')],
      defaults: { min: 0, max: 1 },
    },
  ];

  const hosts: PanelSpec[] = [
    {
      type: 'timeseries',
      title: "Physical errors on the job's hosts",
      unit: 'short',
      w: 12,
      h: 7,
      description: `Physical error counters of the ports of the hosts running the job (host exporters with infiniband_host_job_info), per second. ${EMPTY_WHEN_HEALTHY}`,
      targets: PHYSICAL_ERRORS.map(([name, text]) => series(`${hostRate(name)} > 0`, `{{instance}} ${text}`)),
    },
    {
      type: 'timeseries',
      title: "Transmit wait on the job's hosts",
      unit: 'short',
      w: 12,
      h: 7,
      description: `Ticks per second the ports of the job's hosts had data to send and could not (PortXmitWait): congestion the job meets at its own adapters. ${EMPTY_WHEN_HEALTHY}`,
      targets: [series(`${hostRate('transmit_wait')} > 0`, '{{instance}}')],
    },
  ];

  return buildDashboard({
    uid: JOBS_UID,
    title: 'InfiniBand / Jobs',
    description:
      "One running job of the workload manager (fabric mode with --squeue.path or --jobs.file): its hosts, the links of its footprint, which of them are impaired or congested, and the errors and congestion at its hosts' ports. See dashboards/README.md.",
    variables: [
      datasourceVariable(),
      jobVariable(),
      // Fabric and host exporters alike: the job's links come from the first, its hosts' ports from the second.
      labelVariable({
        name: 'instance',
        label: 'Exporter',
        metric: 'infiniband_exporter_build_info{job=~"$job"}',
        labelName: 'instance',
        multi: true,
        allValue: '.*',
      }),
      labelVariable({
        name: 'job_id',
        label: 'Running job',
        metric: 'infiniband_job_info{job=~"$job", instance=~"$instance"}',
        labelName: 'job_id',
        multi: false,
      }),
    ],
    rows: [
      { title: 'The job', panels: job },
      { title: 'Its links', panels: impaired },
      { title: 'Its hosts', panels: hosts },
    ],
  });
}
