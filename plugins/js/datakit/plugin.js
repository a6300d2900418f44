// datakit: the example JavaScript plugin. JSON in (json_select, md_table), a rest parameter
// (word_freq), errors as tool errors (all of them, on bad input), and an HTTP call with a
// secret bearer token the plugin never sees (json_api).
import { definePlugin, defineTool, http, log, progress } from 'toolhost-sdk';
import { select, markdownTable, wordFrequencies } from './lib/data.js';

definePlugin({
  // What the operator still has to grant: `--allow-net datakit=HOST` and `[secrets]`.
  capabilities: { net: ['*'], secrets: ['api_token'] },
});

export const jsonSelect = defineTool({
  name: 'json_select',
  description:
    'Return the part of a JSON document at a JSON pointer (RFC 6901), pretty-printed; the whole document without a pointer.',
  params: [
    { name: 'document', type: 'json', description: 'any JSON value' },
    { name: 'pointer', type: 'string', description: 'a JSON pointer such as /items/0/name', optional: true },
  ],
  readOnly: true,
  category: 'data',
  run(document, pointer = '') {
    return JSON.stringify(select(document, pointer), null, 2);
  },
});

export const mdTable = defineTool({
  name: 'md_table',
  description: 'Render a JSON array of objects as a Markdown table (one row per object).',
  params: [
    {
      name: 'rows',
      schema: { type: 'array', minItems: 1, items: { type: 'object' } },
      description: 'JSON array of objects, e.g. [{"name": "a", "size": 1}]',
    },
    {
      name: 'columns',
      type: 'array',
      description: 'JSON array of column names, in order (default: every key, in first-seen order)',
      optional: true,
    },
  ],
  readOnly: true,
  category: 'data',
  outputLimit: 20000,
  run(rows, columns) {
    const table = markdownTable(rows, columns);
    // One report for the whole table (a real long tool reports as it goes).
    progress(rows.length, rows.length, `${rows.length} rows`);
    return table;
  },
});

export const wordFreq = defineTool({
  name: 'word_freq',
  description: 'The most frequent words of a text with their counts (case-insensitive, at most 20).',
  params: [{ name: 'text', type: 'string', description: 'the text; commas are part of it' }],
  rest: true,
  readOnly: true,
  category: 'text',
  run(text) {
    const top = wordFrequencies(text, 20);
    if (top.length === 0) throw new Error('the text has no words');
    return top.map(([word, n]) => `${n}\t${word}`).join('\n');
  },
});

export const jsonApi = defineTool({
  name: 'json_api',
  description:
    "GET a JSON API with the operator's `api_token` secret as a bearer token (added by the host; the plugin never sees it), optionally only the part at a JSON pointer.",
  params: [
    { name: 'url', type: 'string', description: 'an http or https URL the operator allows' },
    { name: 'pointer', type: 'string', description: 'a JSON pointer into the answer', optional: true },
  ],
  readOnly: true,
  category: 'web',
  outputLimit: 20000,
  run(url, pointer = '') {
    const response = http
      .get(url, { headers: { accept: 'application/json' }, secretHeaders: [http.bearer('api_token')] })
      .errorForStatus();
    if (response.truncated) throw new Error(`${response.url} is larger than the host's response size limit`);
    log.info(`${response.url}: HTTP ${response.status}, ${response.body.length} bytes`);
    return JSON.stringify(select(response.json(), pointer), null, 2);
  },
});
