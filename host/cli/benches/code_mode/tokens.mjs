// Code mode's savings on a scripted agent task: model round trips and o200k_base tokens.
//
//   node tokens.mjs --toolhost BIN --plugins DIR --tokenizer NODE_MODULES [--json OUT]
//
// DIR holds files.wasm and text.wasm; NODE_MODULES is a node_modules folder holding
// js-tiktoken. The same task runs twice through `toolhost chat --once`, against a scripted
// OpenAI-compatible server on 127.0.0.1 that answers with fixed replies and records every
// request body:
//   direct     code mode off (the baseline: what a host without the feature offers); the model
//              batches its calls as a parallel-calling model would: `ls notes`, then the 20
//              `read`s in one turn, then the 20 `count_words` in one turn, then the answer;
//   code mode  `[code_mode] enabled = true`; one `run_script` that does the whole job, then the
//              answer.
// Tokens: per request, tokens(JSON.stringify(messages)) + tokens(JSON.stringify(tools)) is what
// the model is sent; what it wrote is its reply's content plus, per tool call, the function name
// and the arguments string (ids and the JSON envelope are the server's, not the model's).
// `chat` sends the whole `tools` array with every request, and each tool message carries the
// outcome's timing figures (`usage.busy_us` …): the totals move by a few tokens between runs.
import { spawn } from "node:child_process";
import { createServer } from "node:http";
import { createRequire } from "node:module";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { isDeepStrictEqual, parseArgs } from "node:util";

// A failure is thrown (so that a run's `finally` stops its server and removes its temp dir),
// then printed without a stack trace; the exit code is 1.
class Failure extends Error {}
const fail = (msg) => { throw new Failure(msg); };
process.on("uncaughtException", (e) => {
  console.error(`tokens.mjs: ${e instanceof Failure ? e.message : e.stack}`);
  process.exit(1);
});

// ---- arguments and the tokenizer -------------------------------------------------------
const USAGE = "usage: node tokens.mjs --toolhost BIN --plugins DIR --tokenizer NODE_MODULES [--json OUT]";
let args;
try {
  args = parseArgs({ options: {
    toolhost: { type: "string" }, plugins: { type: "string" },
    tokenizer: { type: "string" }, json: { type: "string" },
  } }).values;
} catch (e) { fail(`${e.message}\n${USAGE}`); }
for (const k of ["toolhost", "plugins", "tokenizer"]) if (!args[k]) fail(`--${k} is missing\n${USAGE}`);
for (const p of ["files.wasm", "text.wasm"]) {
  if (!existsSync(join(args.plugins, p))) fail(`no ${p} in ${args.plugins}`);
}
// Resolve js-tiktoken from the given node_modules folder only (as if from a file inside it).
const requireTok = createRequire(join(resolve(args.tokenizer), "_resolve_from_here.js"));
let enc;
try {
  const { Tiktoken } = requireTok("js-tiktoken/lite");
  const ranks = requireTok("js-tiktoken/ranks/o200k_base");
  enc = new Tiktoken(ranks.default ?? ranks);
} catch (e) { fail(`cannot load js-tiktoken from ${args.tokenizer}: ${e.message}`); }
const tokens = (text) => enc.encode(text).length;

// ---- the workspace: 20 notes, deterministic -------------------------------------------
const VOCAB = ("lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor " +
  "incididunt ut labore et dolore magna aliqua enim ad minim veniam quis nostrud exercitation " +
  "ullamco laboris nisi aliquip ex ea commodo consequat duis aute irure in reprehenderit " +
  "voluptate velit esse cillum fugiat nulla pariatur excepteur sint occaecat cupidatat non " +
  "proident sunt culpa qui officia deserunt mollit anim id est laborum harbour lantern meadow " +
  "granite orchard compass ledger willow ember quarry falcon thistle beacon saffron tundra").split(" ");
const TOPICS = ["Budget review", "Garden plan", "Reading list", "Trip to Lisbon", "Kitchen repairs",
  "Quarterly goals", "Recipe ideas", "Bike maintenance", "Conference notes", "Moving checklist",
  "Podcast outline", "Tax documents", "Birthday party", "Language lessons", "Server migration",
  "Photo archive", "Running schedule", "Book club", "Home network", "Winter clothes"];
function mulberry32(seed) {               // a tiny seeded PRNG: the same files on every run
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const rand = mulberry32(20240601);
const pick = (xs) => xs[Math.floor(rand() * xs.length)];
const FILES = TOPICS.map((topic, i) => {
  const path = `notes/f${String(i + 1).padStart(2, "0")}.txt`;
  const first = `Note ${i + 1}: ${topic}`;
  const total = 150 + Math.floor(rand() * 251);           // 150..400 words, the title's included
  const body = [];
  for (let n = first.split(" ").length; n < total; n++) {
    let w = pick(VOCAB);
    if (rand() < 0.08) w += pick([",", ".", ";"]);
    body.push(w);
  }
  const lines = [first];                                  // ~12 words a line, a blank line now and then
  for (let j = 0; j < body.length; j += 12) {
    lines.push(body.slice(j, j + 12).join(" "));
    if (rand() < 0.15) lines.push("");
  }
  const text = lines.join("\n") + "\n";
  return { path, first, text, words: text.split(/\s+/).filter(Boolean).length };
});
const TOP3 = [...FILES].sort((a, b) => b.words - a.words).slice(0, 3)
  .map(({ path, words, first }) => ({ path, words, first }));
if (new Set(FILES.map((f) => f.words)).size !== FILES.length) fail("generated files tie on word count");
const ANSWER = "The three longest files in notes/ are:\n" + TOP3.map((f, i) =>
  `${i + 1}. ${f.path}: ${f.words} words, first line "${f.first}"`).join("\n");
const QUESTION = "Read the 20 files in notes/, count their words, and tell me the three longest with their first lines.";

// ---- the scripted model replies --------------------------------------------------------
let callNo = 0;
const call = (name, a) => ({ id: `call_${++callNo}`, type: "function",
  function: { name, arguments: JSON.stringify(a) } });
const toolTurn = (calls) => ({ role: "assistant", content: null, tool_calls: calls });
const answerTurn = { role: "assistant", content: ANSWER };
const DIRECT = [
  toolTurn([call("ls", { path: "notes" })]),
  toolTurn(FILES.map((f) => call("read", { path: f.path }))),
  // The model copies each text it read into count_words: that is what a direct call costs.
  toolTurn(FILES.map((f) => call("count_words", { text: f.text }))),
  answerTurn,
];
const SCRIPT = `const names = (await tools.ls({path: "notes"})).split("\\n").filter((n) => n.endsWith(".txt"));
const found = [];
for (const name of names) {
  const path = "notes/" + name;
  const text = await tools.read({path});
  const {words} = await tools.count_words({text});
  found.push({path, words, first: text.split("\\n")[0]});
}
return found.sort((a, b) => b.words - a.words).slice(0, 3);`;
const CODE = [toolTurn([call("run_script", { code: SCRIPT })]), answerTurn];

// What the model wrote in one reply: its text, and each call's name and arguments.
const replyTokens = (m) => tokens(m.content ?? "") +
  (m.tool_calls ?? []).reduce((s, c) => s + tokens(c.function.name) + tokens(c.function.arguments), 0);

// ---- the scripted server: fixed replies in order, every request body recorded -----------
function scriptedServer(replies) {
  const requests = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      const send = (status, obj) => {
        res.writeHead(status, { "content-type": "application/json" });
        res.end(JSON.stringify(obj));
      };
      if (req.method !== "POST" || !req.url.endsWith("/chat/completions")) {
        return send(404, { error: { message: `scripted server: no ${req.method} ${req.url}` } });
      }
      const i = requests.length;
      requests.push(JSON.parse(body));
      const message = replies[i];
      if (!message) return send(500, { error: { message: `scripted server: no reply #${i + 1}` } });
      // One JSON completion (chat accepts it in place of a stream, as from a server that ignores
      // `stream: true`); the same reply whatever the request says.
      send(200, { id: `chatcmpl-${i + 1}`, object: "chat.completion", created: 0, model: "scripted",
        choices: [{ index: 0, message, finish_reason: message.tool_calls ? "tool_calls" : "stop" }] });
    });
  });
  return new Promise((ok) => server.listen(0, "127.0.0.1", () => ok({ server, requests })));
}

// ---- one run: a workspace, a config, the server, `toolhost chat --once` ------------------
function runChat(argv) {
  return new Promise((ok) => {
    const child = spawn(args.toolhost, argv, { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "", stderr = "";
    child.stdout.on("data", (c) => (stdout += c));
    child.stderr.on("data", (c) => (stderr += c));
    child.on("error", (e) => ok({ code: -1, stdout, stderr: String(e) }));
    child.on("close", (code) => ok({ code, stdout, stderr }));
  });
}

async function run(way, replies, codeMode) {
  const dir = mkdtempSync(join(tmpdir(), "toolhost-code-mode-"));
  const { server, requests } = await scriptedServer(replies);
  try {
    mkdirSync(join(dir, "plugins"));
    for (const p of ["files.wasm", "text.wasm"]) copyFileSync(join(args.plugins, p), join(dir, "plugins", p));
    mkdirSync(join(dir, "ws", "notes"), { recursive: true });
    for (const f of FILES) writeFileSync(join(dir, "ws", f.path), f.text);
    const config = (codeMode ? "[code_mode]\nenabled = true\n\n" : "") +
      '[plugin.files]\nfs = [{ path = "workspace", mode = "ro" }]\n';
    writeFileSync(join(dir, "toolhost.toml"), config);
    const { port } = server.address();
    const out = await runChat(["chat", "--config", join(dir, "toolhost.toml"),
      "--plugins", join(dir, "plugins"), "--workspace", join(dir, "ws"), "--no-cache",
      "--base-url", `http://127.0.0.1:${port}/v1`, "--model", "scripted", "--protocol", "native",
      "--once", QUESTION, "--json"]);
    if (out.code !== 0) fail(`${way}: toolhost chat exited ${out.code}:\n${out.stderr}${out.stdout}`);
    const answer = JSON.parse(out.stdout).answer;
    if (answer?.trim() !== ANSWER) fail(`${way}: chat's answer is not the scripted one:\n${answer}`);
    if (requests.length !== replies.length) fail(`${way}: ${requests.length} requests for ${replies.length} replies`);
    check(way, requests.at(-1).messages);
    const sent = requests.reduce((s, r) =>
      s + tokens(JSON.stringify(r.messages)) + (r.tools ? tokens(JSON.stringify(r.tools)) : 0), 0);
    const wrote = replies.reduce((s, m) => s + replyTokens(m), 0);
    return { way, round_trips: requests.length, sent, wrote, total: sent + wrote,
      tools_every_turn: requests.every((r) => Array.isArray(r.tools) && r.tools.length > 0) };
  } finally {
    server.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

// The final answer must be what the tools found: the word counts the direct calls returned,
// or the top 3 that run_script returned. A tool message's content is the outcome JSON:
// {"success": true, "data": "<the tool's output>", "usage": {…}}.
function check(way, messages) {
  const results = messages.filter((m) => m.role === "tool").map((m) => JSON.parse(m.content));
  const payload = (o) => {               // the tool's result inside the outcome, JSON-decoded
    if (o.success !== true) fail(`${way}: a tool call failed: ${JSON.stringify(o)}`);
    let v = o.data;
    if (typeof v === "string") try { v = JSON.parse(v); } catch {}
    return v;
  };
  if (way === "code mode") {
    const got = payload(results.at(-1));
    if (!isDeepStrictEqual(got.result, TOP3)) {
      fail(`run_script returned ${JSON.stringify(got)}, the answer says ${JSON.stringify(TOP3)}`);
    }
    if (got.calls !== 1 + 2 * FILES.length) fail(`run_script made ${got.calls} calls, not ${1 + 2 * FILES.length}`);
  } else {
    const reads = results.slice(1, 1 + FILES.length).map(payload);
    if (!isDeepStrictEqual(reads, FILES.map((f) => f.text))) fail("read did not return the files' texts");
    const counts = results.slice(-FILES.length).map((o) => payload(o).words);
    if (!isDeepStrictEqual(counts, FILES.map((f) => f.words))) {
      fail(`count_words returned ${JSON.stringify(counts)}, expected ${JSON.stringify(FILES.map((f) => f.words))}`);
    }
  }
}

// ---- both ways, the table, the JSON ----------------------------------------------------
const direct = await run("direct", DIRECT, false);
const code = await run("code mode", CODE, true);
const pct = (a, b) => Math.round(1000 * (1 - b / a)) / 10;
const figures = {
  task: QUESTION, files: FILES.length, tokenizer: "o200k_base (js-tiktoken)",
  method: "per request: tokens(JSON.stringify(messages)) + tokens(JSON.stringify(tools)); " +
    "written: reply content + each tool call's name and arguments",
  direct, code_mode: code,
  reduction_pct: { tokens: pct(direct.total, code.total), round_trips: pct(direct.round_trips, code.round_trips) },
};
const row = (r) => `| ${r.way} | ${r.round_trips} | ${r.sent} | ${r.wrote} | ${r.total} |`;
console.log([
  "| way | model round trips | tokens sent to the model | tokens the model wrote | total |",
  "|---|---:|---:|---:|---:|", row(direct), row(code), "",
  `Code mode: ${figures.reduction_pct.tokens}% fewer tokens, ` +
    `${figures.reduction_pct.round_trips}% fewer round trips (${direct.round_trips} → ${code.round_trips}).`,
].join("\n"));
if (args.json) writeFileSync(args.json, JSON.stringify(figures, null, 2) + "\n");
