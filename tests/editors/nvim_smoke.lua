-- Drives `dtypelint lsp` from Neovim's built-in LSP client (0.7+), headless; used by tests/test_lsp.py.
-- Environment: DTYPELINT_CMD (the server command), NVIM_OUT (where the results are written).
local out = {}
local function say(s) table.insert(out, s) end
local cmd = vim.split(os.getenv("DTYPELINT_CMD"), " ")
local client_id = vim.lsp.start_client({ name = "dtypelint", cmd = cmd, root_dir = vim.fn.getcwd() })
local buf = vim.api.nvim_get_current_buf()
vim.lsp.buf_attach_client(buf, client_id)

if vim.wait(30000, function() return #vim.diagnostic.get(buf) > 0 end, 100) then
  local d = vim.diagnostic.get(buf)[1]
  say(string.format("diagnostics: %s %d:%d", d.code or (d.user_data.lsp or {}).code, d.lnum, d.col))
  say("related: " .. #(((d.user_data or {}).lsp or {}).relatedInformation or {}))

  local params = vim.lsp.util.make_range_params()
  params.range = { start = { line = d.lnum, character = d.col }, ["end"] = { line = d.end_lnum, character = d.end_col } }
  params.context = { diagnostics = { d.user_data.lsp } }  -- what Neovim 0.7 echoes back (no range, no message)
  for _, r in pairs(vim.lsp.buf_request_sync(buf, "textDocument/codeAction", params, 10000) or {}) do
    for _, a in ipairs(r.result or {}) do say("action: " .. a.title) end
  end

  params.context = { diagnostics = {}, only = { "source.fixAll.dtypelint" } }
  for _, r in pairs(vim.lsp.buf_request_sync(buf, "textDocument/codeAction", params, 10000) or {}) do
    for _, a in ipairs(r.result or {}) do vim.lsp.util.apply_workspace_edit(a.edit, "utf-16") end
  end
  say("fixed line: " .. vim.trim(vim.api.nvim_buf_get_lines(buf, d.lnum, d.lnum + 1, false)[1]))

  local hp = vim.lsp.util.make_position_params()
  hp.position = { line = d.lnum, character = d.col }
  for _, r in pairs(vim.lsp.buf_request_sync(buf, "textDocument/hover", hp, 10000) or {}) do
    if r.result then say("hover: " .. vim.split(r.result.contents.value, "\n")[1]) end
  end

  -- an unsaved edit brings the hazard back: the debounced re-lint must report it again
  vim.wait(1000, function() return #vim.diagnostic.get(buf) == 0 end, 50)
  vim.api.nvim_buf_set_lines(buf, d.lnum, d.lnum + 1, false, { "        x = attn @ v" })
  vim.wait(15000, function() return #vim.diagnostic.get(buf) == 1 end, 100)
  say("relinted: " .. #vim.diagnostic.get(buf))
else
  say("no diagnostics")
end
vim.fn.writefile(out, os.getenv("NVIM_OUT"))
vim.lsp.stop_client(client_id)
vim.cmd("qa!")
