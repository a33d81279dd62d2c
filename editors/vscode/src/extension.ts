/**
 * The VS Code client: starts `dtypelint lsp` (from the project's Python environment) and
 * connects it with vscode-languageclient. Diagnostics, quick fixes, hover and notebook
 * cells are the server's work; this file only chooses the command and adds
 * "dtypelint: Fix all dtype hazards".
 */

import { PythonExtension } from "@vscode/python-extension";
import * as os from "os";
import * as vscode from "vscode";
import { LanguageClient, LanguageClientOptions, ServerOptions } from "vscode-languageclient/node";

import { DOCUMENT_SELECTOR, FIX_ALL_KIND, RESTART_SETTINGS, readSettings, serverCommand, startFailureHint } from "./server";

let client: LanguageClient | undefined;
let output: vscode.OutputChannel;

async function selectedInterpreter(resource: vscode.Uri | undefined): Promise<string | undefined> {
  if (!vscode.extensions.getExtension("ms-python.python")) {
    return undefined;
  }
  try {
    const api = await PythonExtension.api();
    const env = await api.environments.resolveEnvironment(api.environments.getActiveEnvironmentPath(resource));
    return env?.executable.uri?.fsPath;
  } catch (err) {
    output.appendLine(`could not ask the Python extension for the interpreter: ${err}`);
    return undefined;
  }
}

async function start(): Promise<void> {
  const folder = vscode.workspace.workspaceFolders?.[0];
  const settings = readSettings((key) => vscode.workspace.getConfiguration("dtypelint").get(key));
  const command = serverCommand(settings, await selectedInterpreter(folder?.uri), {
    workspaceFolder: folder?.uri.fsPath,
    home: os.homedir(),
  });
  output.appendLine(`starting (${command.source}): ${[command.command, ...command.args].join(" ")}`);
  const serverOptions: ServerOptions = {
    command: command.command,
    args: command.args,
    options: { cwd: folder?.uri.fsPath },
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: DOCUMENT_SELECTOR,
    outputChannel: output,
  };
  client = new LanguageClient("dtypelint", "dtypelint", serverOptions, clientOptions);
  try {
    await client.start();
  } catch (err) {
    client = undefined;
    void vscode.window.showErrorMessage(startFailureHint(command));
    output.appendLine(String(err));
  }
}

async function restart(): Promise<void> {
  const old = client;
  client = undefined;
  if (old) {
    await old.stop().catch(() => undefined);
  }
  await start();
}

/** Apply the server's `source.fixAll.dtypelint` action to a document; true if it changed anything. */
async function fixDocument(uri: vscode.Uri, document: vscode.TextDocument): Promise<boolean> {
  const whole = new vscode.Range(0, 0, document.lineCount, 0);
  const actions =
    (await vscode.commands.executeCommand<vscode.CodeAction[]>(
      "vscode.executeCodeActionProvider",
      uri,
      whole,
      FIX_ALL_KIND,
    )) ?? [];
  const action = actions.find((a) => a.kind?.value === FIX_ALL_KIND && a.edit);
  return action?.edit ? vscode.workspace.applyEdit(action.edit) : false;
}

async function fixAll(): Promise<void> {
  const notebook = vscode.window.activeNotebookEditor?.notebook;
  const documents = notebook
    ? notebook
        .getCells()
        .filter((c) => c.kind === vscode.NotebookCellKind.Code && c.document.languageId === "python")
        .map((c) => c.document)
    : vscode.window.activeTextEditor
      ? [vscode.window.activeTextEditor.document]
      : [];
  if (documents.length === 0) {
    void vscode.window.showInformationMessage("dtypelint: open a Python file or notebook to fix.");
    return;
  }
  let changed = 0;
  for (const document of documents) {
    if (await fixDocument(document.uri, document)) {
      changed += 1;
    }
  }
  vscode.window.setStatusBarMessage(
    changed ? `dtypelint: fixed ${changed} ${notebook ? "cell(s)" : "file"}` : "dtypelint: nothing to fix",
    4000,
  );
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  output = vscode.window.createOutputChannel("dtypelint");
  context.subscriptions.push(
    output,
    vscode.commands.registerCommand("dtypelint.fixAll", fixAll),
    vscode.commands.registerCommand("dtypelint.restart", restart),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (RESTART_SETTINGS.some((key) => event.affectsConfiguration(key))) {
        void restart();
      }
    }),
  );
  if (vscode.extensions.getExtension("ms-python.python")) {
    try {
      const api = await PythonExtension.api();
      context.subscriptions.push(api.environments.onDidChangeActiveEnvironmentPath(() => void restart()));
    } catch {
      // the Python extension is optional
    }
  }
  await start();
}

export async function deactivate(): Promise<void> {
  await client?.stop();
}
