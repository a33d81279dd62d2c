/**
 * The packaged bundle (dist/extension.js, built by `npm run compile`) loads outside VS Code
 * with a stand-in `vscode` module, exports activate/deactivate, and needs nothing at run
 * time but `vscode` and Node's own modules (the .vsix ships no node_modules).
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { builtinModules } from "node:module";
import { join } from "node:path";
import { test } from "node:test";

// eslint-disable-next-line @typescript-eslint/no-require-imports
const Module = require("node:module");

const BUNDLE = join(__dirname, "..", "..", "dist", "extension.js");

test("the bundle loads with only vscode and Node built-ins", () => {
  assert.ok(existsSync(BUNDLE), `${BUNDLE} is missing: run \`npm run compile\` first`);
  const requested: string[] = [];
  const original = Module._load;
  Module._load = function (request: string, ...rest: unknown[]) {
    requested.push(request);
    if (request === "vscode") {
      return new Proxy({}, { get: () => function stub() {} });
    }
    return original.call(this, request, ...rest);
  };
  try {
    const extension = require(BUNDLE);
    assert.equal(typeof extension.activate, "function");
    assert.equal(typeof extension.deactivate, "function");
  } finally {
    Module._load = original;
  }
  const builtins = new Set(builtinModules.flatMap((m: string) => [m, `node:${m}`]));
  const foreign = requested.filter((r) => r !== "vscode" && !builtins.has(r) && r !== BUNDLE);
  assert.deepEqual(foreign, []);
  assert.ok(requested.includes("vscode"));
});
