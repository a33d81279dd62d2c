/**
 * How the extension starts `dtypelint lsp` and what it asks the server for.
 *
 * Everything here is plain TypeScript with no `vscode` import, so the unit tests run
 * under Node without a VS Code binary; `extension.ts` reads the settings and feeds them in.
 */

/** The extension's settings (`dtypelint.*` in settings.json). */
export interface Settings {
  /** Path of a `dtypelint` executable; empty: use a Python interpreter. */
  executable: string;
  /** A Python interpreter that overrides the Python extension's selection. */
  interpreter: string;
  /** Rule selectors that replace the configured set (empty: keep the configuration files'). */
  select: string[];
  /** Rule selectors to disable on top of the configuration files. */
  ignore: string[];
}

export interface ServerCommand {
  command: string;
  args: string[];
}

/** Where the command came from, for the log line the extension writes when it starts the server. */
export type CommandSource = "executable" | "interpreter setting" | "Python extension" | "PATH";

/** The code action kind the server offers for "apply every safe fix" (see the server's code actions). */
export const FIX_ALL_KIND = "source.fixAll.dtypelint";

/**
 * Documents the client sends to the server: Python files on disk and unsaved, and the
 * Python cells of notebooks (VS Code names them with the `vscode-notebook-cell` scheme;
 * the server announces notebook sync, so they arrive as notebookDocument/* messages).
 */
export const DOCUMENT_SELECTOR = [
  { scheme: "file", language: "python" },
  { scheme: "untitled", language: "python" },
  { scheme: "vscode-notebook-cell", language: "python" },
];

/** The settings that change how the server is started: a change to any of them restarts it. */
export const RESTART_SETTINGS = ["dtypelint.executable", "dtypelint.interpreter", "dtypelint.select", "dtypelint.ignore"];

export const DEFAULT_SETTINGS: Settings = { executable: "", interpreter: "", select: [], ignore: [] };

/** Rule selectors as one comma-separated command-line value; blanks and duplicates dropped. */
export function joinSelectors(values: readonly string[]): string {
  const seen = new Set<string>();
  for (const value of values) {
    for (const part of String(value).split(",")) {
      const code = part.trim().toUpperCase();
      if (code) {
        seen.add(code);
      }
    }
  }
  return [...seen].join(",");
}

/** `--select` / `--ignore` arguments for `dtypelint lsp` (the same flags as `dtypelint check`). */
export function ruleArgs(settings: Pick<Settings, "select" | "ignore">): string[] {
  const args: string[] = [];
  const select = joinSelectors(settings.select ?? []);
  const ignore = joinSelectors(settings.ignore ?? []);
  if (select) {
    args.push("--select", select);
  }
  if (ignore) {
    args.push("--ignore", ignore);
  }
  return args;
}

export interface PathContext {
  workspaceFolder?: string;
  home?: string;
}

/** `~` and `${workspaceFolder}` in a configured path, as VS Code users write them. */
export function expandPath(value: string, context: PathContext): string {
  let out = value.trim();
  if (context.workspaceFolder !== undefined) {
    out = out.split("${workspaceFolder}").join(context.workspaceFolder);
  }
  if (context.home && (out === "~" || out.startsWith("~/"))) {
    out = context.home + out.slice(1);
  }
  return out;
}

/**
 * The command that starts the server, in this order of preference: the configured
 * executable; the configured interpreter; the interpreter selected in the Python
 * extension (`python -m dtypelint lsp`, so the dtypelint of the project's environment
 * runs); `dtypelint` on PATH.
 */
export function serverCommand(
  settings: Settings,
  selectedInterpreter?: string,
  context: PathContext = {},
): ServerCommand & { source: CommandSource } {
  const rules = ruleArgs(settings);
  const executable = expandPath(settings.executable ?? "", context);
  if (executable) {
    return { command: executable, args: ["lsp", ...rules], source: "executable" };
  }
  const interpreter = expandPath(settings.interpreter ?? "", context);
  if (interpreter) {
    return { command: interpreter, args: ["-m", "dtypelint", "lsp", ...rules], source: "interpreter setting" };
  }
  if (selectedInterpreter && selectedInterpreter.trim()) {
    return { command: selectedInterpreter.trim(), args: ["-m", "dtypelint", "lsp", ...rules], source: "Python extension" };
  }
  return { command: "dtypelint", args: ["lsp", ...rules], source: "PATH" };
}

/** Settings read through a getter (VS Code's WorkspaceConfiguration.get), with wrong types replaced by defaults. */
export function readSettings(get: (key: string) => unknown): Settings {
  const text = (key: keyof Settings): string => {
    const value = get(key);
    return typeof value === "string" ? value : "";
  };
  const list = (key: keyof Settings): string[] => {
    const value = get(key);
    return Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : [];
  };
  return { executable: text("executable"), interpreter: text("interpreter"), select: list("select"), ignore: list("ignore") };
}

/** What the server reports when it cannot start, turned into advice for the user. */
export function startFailureHint(command: ServerCommand & { source: CommandSource }): string {
  const shown = [command.command, ...command.args].join(" ");
  if (command.source === "executable") {
    return `dtypelint: could not start \`${shown}\`. Check the setting dtypelint.executable.`;
  }
  return (
    `dtypelint: could not start \`${shown}\`. Install it in that environment with ` +
    "`pip install 'dtypelint[lsp]'`, or set dtypelint.executable."
  );
}
