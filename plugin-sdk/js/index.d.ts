// Types for toolhost-sdk (index.mjs): write toolhost tool plugins as ES modules.

/** A param's type: `'string'` is plain text handed over as is; every other type is JSON. */
export type ParamType = 'string' | 'number' | 'integer' | 'boolean' | 'object' | 'array' | 'null' | 'json';

/** The JavaScript value a param of this type arrives as. */
export type ParamValue<T extends ParamType> = T extends 'string'
  ? string
  : T extends 'number' | 'integer'
    ? number
    : T extends 'boolean'
      ? boolean
      : T extends 'array'
        ? unknown[]
        : T extends 'object'
          ? Record<string, unknown>
          : T extends 'null'
            ? null
            : unknown;

/** A JSON Schema object, for a JSON param whose shape matters. */
export type JsonSchema = { [key: string]: unknown };

export interface ParamOptions {
  /** Must be the name of run's parameter at the same position. */
  name: string;
  /** Default `'string'`; `'json'` (or a `schema`) is any JSON value. */
  type?: ParamType;
  /** What the model should put here. */
  description?: string;
  /** May be left off by the caller (only trailing params); run gets `undefined`. */
  optional?: boolean;
  /** A JSON Schema for a JSON param (then `type` defaults to `'json'`). */
  schema?: JsonSchema;
}

/** What `run` may return: a string as is, `undefined` as "ok", anything else as JSON text. */
export type ToolResult = string | number | boolean | null | undefined | object;

export interface ToolOptions<Run extends (...args: any[]) => ToolResult = (...args: any[]) => ToolResult> {
  /** The name the model calls: `[A-Za-z_][A-Za-z0-9_]*`, at most 64 characters. */
  name: string;
  /** What the tool does; the model reads it to choose the tool. */
  description: string;
  /**
   * One entry per parameter of `run`, in order and by the same names. Leave it out and every
   * parameter of run is a required string param (optional if it has a default value).
   * A string entry `'text'` is short for `{ name: 'text' }`.
   */
  params?: Array<ParamOptions | string>;
  /** The tool itself: synchronous; a thrown error becomes the tool's error message. */
  run: Run;
  /** The host asks before running it (per the operator's danger policy). */
  danger?: boolean;
  /** The tool only reads (MCP `readOnlyHint`). */
  readOnly?: boolean;
  /** The last param (a required string) receives all remaining arguments joined with ",". */
  rest?: boolean;
  /** At most this many characters of output are handed back. */
  outputLimit?: number;
  /** A grouping shown in listings. */
  category?: string;
  /** The JSON Schema of the result (an object schema): `run` then returns a matching object,
   * the host checks it, and MCP clients get it as `structuredContent`. */
  outputSchema?: JsonSchema;
  /** The time limit the tool asks for (ms, 1 to a day); the host grants at most its
   * `[limits] max_timeout_ms` (five minutes by default). */
  timeoutMs?: number;
  /** Whether an MCP client that takes tasks gets a task id at once (default `'forbidden'`). */
  taskSupport?: 'forbidden' | 'optional' | 'required';
  /** A name for people (MCP `title`; at most 128 characters, one line). */
  title?: string;
  /** Calling it again with the same arguments changes nothing more (MCP `idempotentHint`). */
  idempotent?: boolean;
  /** Icons as `data:` URIs (PNG, JPEG, WebP or GIF, base64, at most 8 KiB each; at most 4). */
  icons?: string[];
}

/** One manifest entry, as the host reads it. */
export interface ToolSpec {
  name: string;
  description: string;
  params: Array<{ name: string; type: string | JsonSchema; description: string; optional: boolean }>;
  argCount: number;
  parseJson: boolean[];
  rest: boolean;
  outputLimit?: number;
  danger: boolean;
  readOnly: boolean;
  category?: string;
  outputSchema?: JsonSchema;
  timeoutMs?: number;
  taskSupport?: 'forbidden' | 'optional' | 'required';
  title?: string;
  idempotent?: boolean;
  icons?: Array<{ src: string }>;
}

export interface Tool<Run extends (...args: any[]) => ToolResult = (...args: any[]) => ToolResult> {
  readonly name: string;
  /** This tool's manifest entry. */
  readonly spec: ToolSpec;
  /** The declared params after defaults were applied. */
  readonly params: ReadonlyArray<Required<Omit<ParamOptions, 'schema'>> & { type: ParamType; schema?: JsonSchema }>;
  /** The function given as `run`, to call directly in tests. */
  readonly run: Run;
  /** Where defineTool was called. */
  readonly site: { file: string; line: number } | null;
  /**
   * Call the tool as the host does: string arguments (JSON params as JSON text) in, output text
   * out. Throws a ToolError with the message the model would see.
   */
  call(...args: string[]): string;
}

/** Declare a tool. Checked against `run` at once; misuse throws a DefinitionError. */
export function defineTool<Run extends (...args: any[]) => ToolResult>(options: ToolOptions<Run>): Tool<Run>;

/** What a resource's `read` returns: a string is text, bytes (a Uint8Array, a Buffer, an
 * ArrayBuffer) are a blob. */
export type ResourceContents = string | Uint8Array | ArrayBuffer | ArrayBufferView;

interface ResourceTexts {
  /** A short name clients list it by (MCP `name`): one line, at most 128 characters; unique
   * among the plugin's resources and templates. */
  name: string;
  /** A name for people (MCP `title`; one line, at most 128 characters). */
  title?: string;
  /** What it holds (at most 1024 characters); left out of the manifest when empty. */
  description?: string;
  /** `type/subtype`, e.g. `'text/markdown'` or `'image/png'`. A textual type (text/*, JSON,
   * XML, YAML, ...) promises text: the host refuses bytes for it. */
  mimeType?: string;
}

export interface ResourceOptions<Read extends () => ResourceContents = () => ResourceContents> extends ResourceTexts {
  /** An absolute URI (`docs://style-guide`), without `{`/`}`; not `skill:` (the host's own). */
  uri: string;
  /** Its size in bytes, when known before reading. */
  size?: number;
  /** The contents, read each time a client reads the URI: synchronous; a thrown error is the
   * read's error. */
  read: Read;
}

export interface ResourceTemplateOptions<Read extends (...variables: string[]) => ResourceContents = (...variables: string[]) => ResourceContents>
  extends ResourceTexts {
  /** An RFC 6570 template (`file:///{+path}`): `{name}` matches one path segment, `{+name}` any
   * text; 1 to 8 expressions, never two in a row, starting with its scheme. */
  uriTemplate: string;
  /** The contents of one matching URI: its parameters are the template's variables, by name
   * (any order), each the matched text, percent-decoded. */
  read: Read;
}

/** A resource's manifest entry, as the host reads it. */
export interface ResourceSpec {
  uri: string;
  name: string;
  title?: string;
  description?: string;
  mimeType?: string;
  size?: number;
}

/** A resource template's manifest entry, as the host reads it. */
export interface ResourceTemplateSpec {
  uriTemplate: string;
  name: string;
  title?: string;
  description?: string;
  mimeType?: string;
  /** The variables a completion completes (defineCompletion), in definition order. */
  complete?: string[];
}

export interface Resource<Read extends () => ResourceContents = () => ResourceContents> {
  readonly uri: string;
  readonly name: string;
  /** Its manifest entry. */
  readonly spec: ResourceSpec;
  /** The function given as `read`, to call directly in tests. */
  readonly read: Read;
  /** Where defineResource was called. */
  readonly site: { file: string; line: number } | null;
  /** Read it as the host does: a string or a Uint8Array; throws a ToolError with the message the
   * reader would see. */
  call(): string | Uint8Array;
}

export interface ResourceTemplate<Read extends (...variables: string[]) => ResourceContents = (...variables: string[]) => ResourceContents> {
  readonly uriTemplate: string;
  readonly name: string;
  /** Its manifest entry. */
  readonly spec: ResourceTemplateSpec;
  /** The function given as `read`, to call directly in tests. */
  readonly read: Read;
  /** Where defineResourceTemplate was called. */
  readonly site: { file: string; line: number } | null;
  /** Read one URI as the host does, given the template's variables (`{ path: 'a.txt' }`): a
   * string or a Uint8Array; throws a ToolError with the message the reader would see. */
  call(variables: Record<string, string>): string | Uint8Array;
}

/** Declare a resource the plugin serves by URI. Checked at once; misuse throws a DefinitionError. */
export function defineResource<Read extends () => ResourceContents>(options: ResourceOptions<Read>): Resource<Read>;

/** Declare a resource template: every URI it matches is read by `read`. Checked against `read`'s
 * parameters at once; misuse throws a DefinitionError. */
export function defineResourceTemplate<Read extends (...variables: string[]) => ResourceContents>(
  options: ResourceTemplateOptions<Read>,
): ResourceTemplate<Read>;

/** One message of a prompt (MCP's shape): text, or a link to a resource for the client to read. */
export type PromptMessage =
  | { role: 'user' | 'assistant'; content: { type: 'text'; text: string } }
  | {
      role: 'user' | 'assistant';
      content: { type: 'resource_link'; uri: string; name: string; description?: string; mimeType?: string };
    };

/** A message the user says. */
export function user(text: string): PromptMessage;

/** A message the assistant says (a reply the conversation starts from). */
export function assistant(text: string): PromptMessage;

/** A link to the resource `uri` (named `name`) for the client to read, said by the user unless
 * `role` says otherwise. */
export function resourceLink(
  uri: string,
  name: string,
  options?: { description?: string; mimeType?: string; role?: 'user' | 'assistant' },
): PromptMessage;

/** What a prompt's `get` returns: a string is one user message; messages; or a description
 * of this instance with its messages. */
export type PromptResult = string | PromptMessage | PromptMessage[] | { description?: string; messages: PromptMessage[] };

export interface PromptArgumentOptions {
  /** `[A-Za-z_][A-Za-z0-9_]*`: the name of get's parameter that takes it. */
  name: string;
  /** What to type here (at most 1024 characters); left out of the manifest when empty. */
  description?: string;
  /** The host refuses to get the prompt without it. Default false: get's parameter is
   * `undefined` when it is left out (so a default value applies). */
  required?: boolean;
}

export interface PromptOptions<Get extends (...args: any[]) => PromptResult = (...args: any[]) => PromptResult> {
  /** `[A-Za-z0-9_-]`, 1 to 64 characters, not starting with `-`: what a client offers as `/NAME`. */
  name: string;
  /** A name for people (one line, at most 128 characters). */
  title?: string;
  /** What it does (at most 1024 characters); left out of the manifest when empty. */
  description?: string;
  /** At most 16, each named once. */
  arguments?: PromptArgumentOptions[];
  /** The messages, synchronous: its parameters are the arguments, by name (any order); a
   * thrown error is the prompt's error. */
  get: Get;
}

/** An argument's manifest entry. */
export interface PromptArgumentSpec {
  name: string;
  description?: string;
  required?: true;
  /** A completion completes it (defineCompletion). */
  complete?: true;
}

/** A prompt's manifest entry, as the host reads it. */
export interface PromptSpec {
  name: string;
  title?: string;
  description?: string;
  arguments?: PromptArgumentSpec[];
}

export interface Prompt<Get extends (...args: any[]) => PromptResult = (...args: any[]) => PromptResult> {
  readonly name: string;
  /** Its manifest entry. */
  readonly spec: PromptSpec;
  /** The function given as `get`, to call directly in tests. */
  readonly get: Get;
  /** Where definePrompt was called. */
  readonly site: { file: string; line: number } | null;
  /** Get it as the host does, given its arguments (`{ path: 'a.txt' }`): the messages (and
   * the description, when `get` gave one); throws a ToolError with the message whoever asked
   * would see. */
  call(args?: Record<string, string>): { description?: string; messages: PromptMessage[] };
}

/** Declare a prompt. Checked against `get`'s parameters at once; misuse throws a DefinitionError. */
export function definePrompt<Get extends (...args: any[]) => PromptResult>(options: PromptOptions<Get>): Prompt<Get>;

/** The candidate values for what has been typed (`value`), best first; `context` holds the
 * other arguments (or variables) already given. The host keeps the first 100. */
export type Complete = (value: string, context: Record<string, string>) => string[];

interface CompletionTarget {
  /** The argument (or template variable) it completes. */
  argument: string;
  complete: Complete;
}

export type CompletionOptions =
  | (CompletionTarget & {
      /** The prompt (its name, or what definePrompt returned), defined before. */
      prompt: string | Prompt<any>;
      template?: never;
    })
  | (CompletionTarget & {
      /** The resource template (its `uriTemplate`, or what defineResourceTemplate returned),
       * defined before. */
      template: string | ResourceTemplate<any>;
      prompt?: never;
    });

export interface Completion {
  readonly prompt?: string;
  readonly template?: string;
  readonly argument: string;
  /** The function given as `complete`, to call directly in tests. */
  readonly complete: Complete;
  /** Where defineCompletion was called. */
  readonly site: { file: string; line: number } | null;
  /** Complete as the host does: the values; throws a ToolError with the message whoever asked
   * would see. */
  call(value: string, context?: Record<string, string>): string[];
}

/** Complete a prompt's argument or a resource template's variable as a person types it. Checked
 * at once (the prompt or template must exist, with that argument or variable, completed once);
 * misuse throws a DefinitionError. */
export function defineCompletion(options: CompletionOptions): Completion;

export interface FsRequest {
  /** A logical directory: `workspace` or a name the operator maps to a path. */
  path: string;
  mode?: 'ro' | 'rw';
}

export interface Capabilities {
  /** Directories: `"workspace:ro"`, `"workspace:rw"` or `{ path, mode }`. */
  fs?: Array<string | FsRequest>;
  /** Environment variable names. */
  env?: string[];
  /** Hosts for `http`: `"api.example.com"`, `"*.example.com"` or `"*"`. */
  net?: string[];
  /** Secret names `http` may put into headers (the plugin never sees their values). */
  secrets?: string[];
  /**
   * Programs `process.run` may run, by name (`"git"`: a file name, never a path), or `"*"` for
   * any program the operator grants. The operator maps each name to an executable.
   */
  exec?: string[];
  /**
   * Buckets of the plugin's key-value store (`kv.open(name)`), e.g. `["default"]`: 1–64 letters,
   * digits, `_`, `-` or `.`, starting with a letter or digit. The operator grants each.
   */
  kv?: string[];
}

export interface PluginOptions {
  /** Default: package.json `name` (without a scope). `[A-Za-z_][A-Za-z0-9_-]*`. */
  name?: string;
  /** Default: package.json `version`. */
  version?: string;
  /** Default: package.json `description`. */
  description?: string;
  /** What the plugin asks the operator for. Only a request: the operator grants. */
  capabilities?: Capabilities;
}

export interface Plugin {
  readonly name?: string;
  readonly version?: string;
  readonly description?: string;
  readonly capabilities: { fs: FsRequest[]; env: string[]; net: string[]; secrets: string[]; exec?: string[]; kv?: string[] };
}

/** Declare the plugin (at most once). Misuse throws a DefinitionError. */
export function definePlugin(options: PluginOptions): Plugin;

/** A misuse of definePlugin, defineTool, defineResource, defineResourceTemplate, definePrompt or
 * defineCompletion, at the file and line of that call. */
export class DefinitionError extends Error {
  readonly file?: string;
  readonly line?: number;
}

/** A tool's (or a read's, a prompt's, a completion's) failure as the model sees it (thrown by
 * `Tool.call`, `Resource.call`, `Prompt.call`, `Completion.call`). */
export class ToolError extends Error {}

/** The message of anything thrown (what the model sees for a thrown value). */
export function errorMessage(e: unknown): string;

/** The parameters of a function as written in its source (null for native or bound ones). */
export function functionParams(
  fn: Function,
): Array<{ name: string | null; hasDefault: boolean; isRest: boolean; isPattern: boolean; text: string }> | null;

/**
 * Report how far the running call has come: `done` out of `total` (when known), with a short
 * message. The host forwards at most about ten reports a second (always the last).
 */
export function progress(done: number, total?: number, message?: string): void;

type LogFn = (...parts: unknown[]) => void;

/** Write to the host's log (info); the host attributes the line to this plugin and tool. */
export const log: LogFn & { trace: LogFn; debug: LogFn; info: LogFn; warn: LogFn; error: LogFn };

/** A header whose value the host fills in from a granted secret. */
export interface SecretHeader {
  /** Header name, e.g. `authorization`. */
  name: string;
  /** The secret's name, as in `capabilities.secrets` and the operator's `[secrets]`. */
  secret: string;
  /** Text put before the value, e.g. `"Bearer "`. */
  prefix?: string;
}

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'HEAD';

export interface HttpRequest {
  /** Default `GET`. */
  method?: HttpMethod;
  url: string;
  headers?: Record<string, string> | Array<[string, string]>;
  secretHeaders?: SecretHeader[];
  body?: string | Uint8Array | ArrayBuffer | number[];
  /** A JSON body (sets `content-type: application/json` unless given). */
  json?: unknown;
}

export interface HttpResponse {
  readonly status: number;
  /** The URL that answered, after redirects. */
  readonly url: string;
  readonly headers: Array<[string, string]>;
  readonly body: Uint8Array;
  /** The body was cut at the host's response size cap. */
  readonly truncated: boolean;
  /** 2xx. */
  readonly ok: boolean;
  text(): string;
  /** Throws an error naming the URL if the body is not JSON. */
  json(): any;
  header(name: string): string | undefined;
  /** This response if 2xx, else throws an error naming the status and URL. */
  errorForStatus(): HttpResponse;
}

type HttpOptions = Omit<HttpRequest, 'method' | 'url'>;

/**
 * Outbound HTTP through the host: only hosts the operator grants this plugin (and that
 * `capabilities.net` requests). Throws an Error saying why the host refused or failed a request;
 * an HTTP error status is still a response.
 */
export const http: ((request: HttpRequest) => HttpResponse) & {
  send(request: HttpRequest): HttpResponse;
  get(url: string, options?: HttpOptions): HttpResponse;
  post(url: string, body?: HttpRequest['body'], options?: Omit<HttpOptions, 'body'>): HttpResponse;
  /** `{ name: 'authorization', secret, prefix: 'Bearer ' }`. */
  bearer(secret: string): SecretHeader;
};

/** What a program did. A non-zero exit is still an output: check `code` or `success()`. */
export interface ProcessOutput {
  /** The exit code; `null` if it ended by a signal or the host stopped it. */
  readonly code: number | null;
  readonly stdout: Uint8Array;
  readonly stderr: Uint8Array;
  /** The output passed the host's cap: the program was stopped there. */
  readonly truncated: boolean;
  /** Exit code 0. */
  success(): boolean;
  /** stdout as text (invalid UTF-8 replaced). */
  stdoutText(): string;
  /** stderr as text (invalid UTF-8 replaced). */
  stderrText(): string;
}

/**
 * Running programs through the host: only programs `capabilities.exec` requests and the operator
 * grants, with exactly these arguments (no shell), an empty environment plus what the operator
 * grants, stdin closed, in the workspace, the output capped and everything killed at the call's
 * deadline.
 */
export const process: {
  /**
   * Run `program` (a requested name such as `"git"`, or its granted absolute path) with `args`
   * and wait for it. Throws an Error with the host's reason if it refuses or cannot start it.
   */
  run(program: string, args?: string[]): ProcessOutput;
};

/** What `kv` takes as a value: text (stored as UTF-8) or bytes. */
export type KvValue = string | Uint8Array | ArrayBuffer | ArrayBufferView;

/**
 * The host refused or failed a store operation: `kind` is `'no-such-store'` (the manifest does
 * not request the bucket), `'access-denied'` (the operator has not granted it; the message says
 * how to grant it) or `'other'` (a limit, a value that is not a counter or not JSON, a store that
 * is unavailable: `detail` holds the text).
 */
export class KvError extends Error {
  readonly kind: 'no-such-store' | 'access-denied' | 'other';
  readonly bucket: string | null;
  readonly detail: string | null;
}

/** An open bucket of the plugin's key-value store. */
export interface Bucket {
  readonly name: string;
  /** The value of `key`, or `null` when the key is not there. */
  get(key: string): Uint8Array | null;
  /** The value of `key` as text (UTF-8), or `fallback` (`null`). */
  getText(key: string, fallback?: string | null): string | null;
  /** The value of `key` parsed as JSON, or `fallback` (`null`) when the key is not there. */
  getJson<T = unknown>(key: string, fallback?: T | null): T | null;
  /** Store `value` under `key` (a string as UTF-8). */
  set(key: string, value: KvValue): void;
  /** Store `value` as JSON text under `key`. */
  setJson(key: string, value: unknown): void;
  /** Remove `key` (nothing happens when it is not there). */
  delete(key: string): void;
  exists(key: string): boolean;
  /** Every key, following the host's `list-keys` pages to the end. */
  keys(): string[];
  /** Add `delta` (default 1) to the counter `key` atomically; the new value. Counters are decimal text. */
  increment(key: string, delta?: number): number;
  /** The values of the keys that are there (one host call). */
  getMany(keys: Iterable<string>): Map<string, Uint8Array>;
  /** Store every entry in one host call (not atomic). */
  setMany(entries: Map<string, KvValue> | Record<string, KvValue> | Array<[string, KvValue]>): void;
  /** Remove every key in one host call (those not there are skipped). */
  deleteMany(keys: Iterable<string>): void;
  /** Store `value` only if the value of `key` is still `expected` (`null`: not there); whether it was stored. */
  compareAndSwap(key: string, expected: KvValue | null, value: KvValue): boolean;
  /**
   * Replace the value of `key` with `fn(current)` atomically (`fn` runs again when another call
   * changed the key in between; `undefined` or `null` from it leaves the value); what was stored.
   */
  update(key: string, fn: (current: Uint8Array | null) => KvValue | null | undefined, options?: { attempts?: number }): Uint8Array | null;
  /** `update` on JSON: `fn` gets the parsed value (`fallback` when not there); `undefined` leaves it. */
  updateJson<T = unknown>(key: string, fn: (current: T) => T | undefined, fallback?: T | null, options?: { attempts?: number }): T | null;
  /** Release the handle now (it is released at the end of the call anyway). */
  close(): void;
}

/**
 * The plugin's key-value store, kept by the host between calls: `kv.open(name)` is a bucket the
 * manifest requests (`capabilities: { kv: [name] }`) and the operator grants; the other functions
 * act on the bucket `'default'`.
 */
export const kv: Omit<Bucket, 'name' | 'close'> & {
  /** The bucket `name` (default `'default'`); a KvError if the host refuses it. */
  open(name?: string): Bucket;
  KvError: typeof KvError;
  readonly DEFAULT: 'default';
};

/** The in-memory store `testing.memoryKv()` installs. */
export interface MemoryKv {
  /** bucket → key → value */
  readonly data: Map<string, Map<string, Uint8Array>>;
  /** `[operation, bucket, detail]` of every host call, in order. */
  readonly calls: Array<[string, string, unknown]>;
  /** The values of `bucket` (default `'default'`) as text. */
  texts(bucket?: string): Record<string, string>;
  /** Every later operation fails with the host error `other(text)`; `null` stops it. */
  fail(text: string | null): void;
}

/** Helpers for tests under node, where there is no host. */
export const testing: {
  /**
   * Install an in-memory key-value store for `kv`: `buckets` that exist (default: any),
   * `denied` ones (access-denied), `pageSize` keys per `list-keys` page.
   */
  memoryKv(options?: { buckets?: string[] | null; denied?: string[]; pageSize?: number }): MemoryKv;
  /** Answer `http` calls with `handler(request)`; `null` removes it. */
  onHttp(
    handler:
      | ((request: {
          method: HttpMethod;
          url: string;
          headers: Array<[string, string]>;
          secretHeaders: Array<Required<SecretHeader>>;
          body: Uint8Array | null;
        }) => { status?: number; body?: string | Uint8Array; headers?: Array<[string, string]>; url?: string; truncated?: boolean })
      | null,
  ): void;
  /**
   * Answer `process.run` calls with `handler(program, args)` (code 0 and empty output by
   * default); throw from it to refuse; `null` removes it.
   */
  onProcess(
    handler:
      | ((program: string, args: string[]) => {
          code?: number | null;
          stdout?: string | Uint8Array;
          stderr?: string | Uint8Array;
          truncated?: boolean;
        })
      | null,
  ): void;
  /** Lines logged so far under node. */
  readonly logs: Array<{ level: 'trace' | 'debug' | 'info' | 'warn' | 'error'; message: string }>;
  /** Progress reports so far under node. */
  readonly progress: Array<{ done: number; total?: number; message: string }>;
  /** Forget logged lines, progress reports and the http, process and kv stand-ins. */
  reset(): void;
};
