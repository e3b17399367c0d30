// What the module collectors of both scopes share: mstlink (Debian's mstflint) or NVIDIA's mlxlink,
// its path flag, its tool group, and finding it. The host's `module` collector reads this host's
// adapters with it, fabric mode's `fabric_module` the switch ports in-band (-d lid-<LID>).
import type { Logger } from 'pino';
import { STRING, optionalFlag, type Settings } from '../config/flags.js';
import { locateTools, type CommandRunner } from '../sources/command-runner.js';
import { fecHistogramSupport, type ModuleQuery, type ModuleTool } from '../sources/module/module-tools.js';
import type { ToolGroup } from '../collection/collector.js';

export const MSTLINK_PATH = optionalFlag(STRING, {
  name: 'mstlink.path',
  key: 'module.mstlink_path',
  help: 'mstlink (or mlxlink) executable (default: mstlink, else mlxlink, found on PATH).',
  check: true,
});

export const MODULE_TOOLS: ToolGroup<ModuleTool> = { key: 'module', tools: ['mstlink', 'mlxlink'] };

/** The tool and its path, or why there is none (for the collector's one log line). */
export function findModuleTool(settings: Settings): { tool: ModuleTool; path: string } | { why: string } {
  const given = settings.get(MSTLINK_PATH);
  const { found } = locateTools(MODULE_TOOLS.tools, { mstlink: given });
  const tool: ModuleTool | undefined =
    found.mstlink !== undefined ? 'mstlink' : given === undefined && found.mlxlink !== undefined ? 'mlxlink' : undefined;
  if (tool === undefined)
    return {
      why:
        given === undefined
          ? 'neither mstlink (package mstflint) nor mlxlink (NVIDIA MFT) is installed'
          : `--mstlink.path ${given} is not an executable file`,
    };
  return { tool, path: found[tool]! };
}

/**
 * What a module collector asks the tool for: the FEC histogram where the tool has its options,
 * found from its --help at the first read and kept (asked again only after a --help that did not
 * finish); where it has none, one log line and the histogram is not asked for, the rest read as
 * before.
 */
export class ModuleQueryOfTool {
  private query: ModuleQuery | undefined;

  constructor(
    private readonly runner: CommandRunner<ModuleTool>,
    private readonly tool: ModuleTool,
    private readonly logger: Logger,
    private readonly collector: string,
    private readonly metric: string,
  ) {}

  async of(signal: AbortSignal): Promise<ModuleQuery> {
    if (this.query) return this.query;
    const support = await fecHistogramSupport(this.runner, this.tool, signal);
    if (support.supported) return (this.query = { fecHistogram: true });
    if (!support.final) return { fecHistogram: false };
    this.logger.info(
      { tool: this.tool, why: support.why },
      `${this.collector} collector: ${this.tool} cannot read the FEC histogram; ${this.metric} is not served`,
    );
    return (this.query = { fecHistogram: false });
  }
}
