import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import {
  DEFAULT_SETTINGS,
  DOCUMENT_SELECTOR,
  FIX_ALL_KIND,
  RESTART_SETTINGS,
  expandPath,
  joinSelectors,
  readSettings,
  ruleArgs,
  serverCommand,
  startFailureHint,
} from "../server";

// out/test/ -> the extension folder
const manifest = JSON.parse(readFileSync(join(__dirname, "..", "..", "package.json"), "utf8"));

test("the selected interpreter runs `-m dtypelint lsp`", () => {
  const cmd = serverCommand(DEFAULT_SETTINGS, "/proj/.venv/bin/python");
  assert.deepEqual([cmd.command, ...cmd.args], ["/proj/.venv/bin/python", "-m", "dtypelint", "lsp"]);
  assert.equal(cmd.source, "Python extension");
});

test("a configured executable wins over every interpreter", () => {
  const settings = { ...DEFAULT_SETTINGS, executable: "${workspaceFolder}/bin/dtypelint", interpreter: "/usr/bin/python3" };
  const cmd = serverCommand(settings, "/proj/.venv/bin/python", { workspaceFolder: "/proj" });
  assert.deepEqual([cmd.command, ...cmd.args], ["/proj/bin/dtypelint", "lsp"]);
  assert.equal(cmd.source, "executable");
});

test("the interpreter setting wins over the Python extension's selection", () => {
  const settings = { ...DEFAULT_SETTINGS, interpreter: "~/envs/ml/bin/python" };
  const cmd = serverCommand(settings, "/proj/.venv/bin/python", { home: "/home/u" });
  assert.deepEqual([cmd.command, ...cmd.args], ["/home/u/envs/ml/bin/python", "-m", "dtypelint", "lsp"]);
});

test("without any interpreter, `dtypelint` from PATH", () => {
  const cmd = serverCommand({ ...DEFAULT_SETTINGS, executable: "   " }, undefined);
  assert.deepEqual([cmd.command, ...cmd.args], ["dtypelint", "lsp"]);
  assert.equal(cmd.source, "PATH");
});

test("select and ignore become the CLI's --select / --ignore", () => {
  const settings = { ...DEFAULT_SETTINGS, select: ["dtl1", " DTL006 ", ""], ignore: ["DTL105,DTL106", "DTL105"] };
  assert.deepEqual(ruleArgs(settings), ["--select", "DTL1,DTL006", "--ignore", "DTL105,DTL106"]);
  const cmd = serverCommand(settings, "/py");
  assert.deepEqual(cmd.args, ["-m", "dtypelint", "lsp", "--select", "DTL1,DTL006", "--ignore", "DTL105,DTL106"]);
  assert.deepEqual(ruleArgs(DEFAULT_SETTINGS), []);
  assert.equal(joinSelectors([" , "]), "");
});

test("paths: ~ and ${workspaceFolder} only where they stand for a folder", () => {
  assert.equal(expandPath("~", { home: "/h" }), "/h");
  assert.equal(expandPath("a~/b", { home: "/h" }), "a~/b");
  assert.equal(expandPath("${workspaceFolder}/x/${workspaceFolder}", { workspaceFolder: "/w" }), "/w/x//w");
  assert.equal(expandPath("${workspaceFolder}/x", {}), "${workspaceFolder}/x");
});

test("settings of the wrong type fall back to the defaults", () => {
  const values: Record<string, unknown> = { executable: 3, interpreter: "/py", select: "DTL1", ignore: ["DTL105", 7] };
  assert.deepEqual(readSettings((k) => values[k]), { executable: "", interpreter: "/py", select: [], ignore: ["DTL105"] });
});

test("start failures say what to install or which setting to check", () => {
  assert.match(startFailureHint(serverCommand(DEFAULT_SETTINGS, "/py")), /pip install 'dtypelint\[lsp\]'/);
  assert.match(startFailureHint(serverCommand({ ...DEFAULT_SETTINGS, executable: "/x" })), /dtypelint\.executable/);
});

test("python files, unsaved buffers and notebook cells are sent to the server", () => {
  const schemes = DOCUMENT_SELECTOR.map((s) => s.scheme).sort();
  assert.deepEqual(schemes, ["file", "untitled", "vscode-notebook-cell"]);
  assert.ok(DOCUMENT_SELECTOR.every((s) => s.language === "python"));
  assert.equal(FIX_ALL_KIND, "source.fixAll.dtypelint");
});

test("the manifest declares every setting the code reads, and the commands it registers", () => {
  const properties = Object.keys(manifest.contributes.configuration.properties);
  for (const key of RESTART_SETTINGS) {
    assert.ok(properties.includes(key), key);
  }
  for (const key of Object.keys(DEFAULT_SETTINGS)) {
    assert.ok(properties.includes(`dtypelint.${key}`), key);
  }
  const commands = manifest.contributes.commands.map((c: { command: string; title: string }) => [c.command, c.title]);
  assert.deepEqual(commands, [
    ["dtypelint.fixAll", "Fix all dtype hazards"],
    ["dtypelint.restart", "Restart the server"],
  ]);
  assert.ok(manifest.activationEvents.includes("onLanguage:python"));
  assert.ok(manifest.activationEvents.includes("onNotebook:jupyter-notebook"));
  assert.equal(manifest.main, "./dist/extension.js");
});
