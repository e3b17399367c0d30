// The runbooks served by the exporter (GET /runbooks, docs/runbooks.md carried in the bundle), the
// anchors every alert's runbook_url and every finding use, the same auth as /metrics, and
// --web.runbook-url: the pages' links, and the alerts' runbook_url rewritten as docs/runbooks.md
// says (the rules are static files Prometheus loads: they are rewritten once, then promtool checks
// and tests them with the site's URL).
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import bcrypt from 'bcryptjs';
import { execa } from 'execa';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { RUNBOOKS_MODULE, runbooksFiles } from '../../../scripts/generate/runbooks.js';
import type { Exporter } from '../../../src/commands/serve/exporter.js';
import { headingAnchor, renderRunbooks } from '../../../src/commands/serve/runbooks-page.js';
import { RUNBOOK_BASE } from '../../../src/model/finding.js';
import { exporterFromFlags } from '../../support/exporter.js';
import { requireSystemTools } from '../../support/system.js';
import { PROJECT_ROOT } from '../../support/trees.js';

const RULE_FILES = ['rules/infiniband-alerts.yml', 'rules/infiniband-fabric-alerts.yml'];
const SITE = 'https://wiki.example.com/infiniband-runbooks';

function runbookUrls(): string[] {
  return RULE_FILES.flatMap((file) => {
    const rules = parse(readFileSync(path.join(PROJECT_ROOT, file), 'utf8')) as {
      groups: { rules: { annotations?: { runbook_url?: string } }[] }[];
    };
    return rules.groups.flatMap((group) => group.rules.flatMap((rule) => rule.annotations?.runbook_url ?? []));
  });
}

const promtool = requireSystemTools('rules with a site runbook URL', { promtool: 'prometheus' });

describe('/runbooks', () => {
  const exporters: Exporter[] = [];
  afterAll(async () => {
    await Promise.all(exporters.map((exporter) => exporter.stop()));
  });
  async function demo(flags: string[] = []): Promise<Exporter> {
    const exporter = exporterFromFlags(['--demo', ...flags]);
    exporters.push(exporter);
    await exporter.collectOnce();
    return exporter;
  }

  it('carries docs/runbooks.md as npm run generate writes it', () => {
    expect(readFileSync(path.join(PROJECT_ROOT, RUNBOOKS_MODULE), 'utf8'), `${RUNBOOKS_MODULE}: run npm run generate`).toBe(
      runbooksFiles()[0]!.content,
    );
  });

  it("serves the runbooks with an anchor for every rule's runbook_url and every finding on the landing page", async () => {
    const exporter = await demo();
    const response = await exporter.app.inject({ url: '/runbooks' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^text\/html/);
    const ids = new Set([...response.body.matchAll(/ id="([^"]+)"/g)].map((match) => match[1]));
    const urls = runbookUrls();
    expect(urls.length).toBeGreaterThan(20);
    for (const url of urls) {
      expect(url.startsWith(`${RUNBOOK_BASE}#`), url).toBe(true);
      expect(ids, url).toContain(url.split('#')[1]);
    }
    const landing = (await exporter.app.inject({ url: '/' })).body;
    const links = [...landing.matchAll(/href="\/runbooks#([^"]+)"/g)].map((match) => match[1]);
    expect(links.length).toBeGreaterThan(0);
    for (const anchor of links) expect(ids, anchor).toContain(anchor);
  });

  it('shows raw HTML of the Markdown as text, and numbers repeated anchors as GitHub does', () => {
    const page = renderRunbooks('# A\n\n<script>alert(1)</script>\n\n## InfiniBandPortLinkDown\n\n## InfiniBandPortLinkDown\n');
    expect(page).not.toContain('<script>alert(1)');
    expect(page).toContain('&#60;script&#62;');
    expect(page).toContain('<h2 id="infinibandportlinkdown">');
    expect(page).toContain('<h2 id="infinibandportlinkdown-1">');
    expect(headingAnchor('ConnectX revision A0: IPoIB TSO', new Map())).toBe('connectx-revision-a0-ipoib-tso');
  });

  it('asks for the same basic auth as /metrics', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'runbooks-auth-'));
    try {
      const web = path.join(dir, 'web.yml');
      writeFileSync(web, `basic_auth_users:\n  alice: ${bcrypt.hashSync('secret', 4)}\n`);
      const exporter = await demo(['--web.config.file', web]);
      expect((await exporter.app.inject({ url: '/runbooks' })).statusCode).toBe(401);
      expect((await exporter.app.inject({ url: '/metrics' })).statusCode).toBe(401);
      const authorization = `Basic ${Buffer.from('alice:secret').toString('base64')}`;
      expect((await exporter.app.inject({ url: '/runbooks', headers: { authorization } })).statusCode).toBe(200);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("--web.runbook-url points the landing page's links at the site's copy", async () => {
    const exporter = await demo(['--web.runbook-url', SITE]);
    const landing = (await exporter.app.inject({ url: '/' })).body;
    expect(landing).toContain(`<a href="${SITE}#infinibandportstuckinitializing">runbook</a>`);
    expect(landing).not.toContain('href="/runbooks#');
  });

  it.skipIf(promtool.skipReason !== undefined)(
    "rules rewritten with the site's URL as docs/runbooks.md says: promtool checks and tests them",
    async () => {
      const runbooks = readFileSync(path.join(PROJECT_ROOT, 'docs/runbooks.md'), 'utf8');
      const sed = /^sed -i 's\|([^|]+)\|([^|]+)\|' (.+)$/m.exec(runbooks);
      expect(sed?.[1]).toBe(RUNBOOK_BASE);
      const dir = mkdtempSync(path.join(tmpdir(), 'site-rules-'));
      try {
        cpSync(path.join(PROJECT_ROOT, 'rules'), path.join(dir, 'rules'), { recursive: true });
        const tests = readdirSync(path.join(dir, 'rules/tests')).map((name) => path.join('rules/tests', name));
        // The documented command, with the site's URL, over the rules and (for promtool's expectations) their tests.
        await execa('sed', ['-i', `s|${RUNBOOK_BASE}|${SITE}|`, ...RULE_FILES, ...tests], { cwd: dir });
        for (const file of RULE_FILES) {
          const urls = [...readFileSync(path.join(dir, file), 'utf8').matchAll(/runbook_url: (\S+)/g)].map((match) => match[1]!);
          expect(urls.length).toBeGreaterThan(0);
          for (const url of urls) expect(url.startsWith(`${SITE}#`), url).toBe(true);
        }
        const check = await execa(promtool.paths.promtool!, ['check', 'rules', ...RULE_FILES], { cwd: dir, reject: false, all: true });
        expect(check.exitCode, String(check.all)).toBe(0);
        const test = await execa(promtool.paths.promtool!, ['test', 'rules', 'rules/tests/links.yml'], {
          cwd: dir,
          reject: false,
          all: true,
        });
        expect(test.exitCode, String(test.all)).toBe(0);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
    60_000,
  );
});
