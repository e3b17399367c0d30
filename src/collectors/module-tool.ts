// What the module collectors of both scopes share: mstlink (Debian's mstflint) or NVIDIA's mlxlink,
// its path flag, its tool group, and finding it. The host's `module` collector reads this host's
// adapters with it, fabric mode's `fabric_module` the switch ports in-band (-d lid-<LID>).
import { STRING, optionalFlag, type Settings } from '../config/flags.js';
import { locateTools } from '../sources/command-runner.js';
import type { ModuleTool } from '../sources/module/module-tools.js';
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
