// A toolhost plugin: each defineTool is a tool the model can call. Build it with
// `toolhost build`, test it with `node --test` (see plugin.test.js).
import { definePlugin, defineTool, log } from 'toolhost-sdk';

// Name, version and description come from package.json. Ask here for what the plugin needs,
// e.g. capabilities: { net: ['api.example.com'], secrets: ['api_token'] } for `http`.
definePlugin({ capabilities: {} });

export const wordCount = defineTool({
  name: 'word_count',
  description: 'Count the words, lines and characters of a text.',
  params: [{ name: 'text', type: 'string', description: 'the text; commas are part of it' }],
  // The last param takes every remaining argument, joined with ",".
  rest: true,
  readOnly: true,
  run(text) {
    if (text.trim() === '') throw new Error('the text is empty');
    log.debug(`counting ${text.length} characters`);
    // An object is returned to the model as JSON.
    return {
      words: text.split(/\s+/).filter(Boolean).length,
      lines: text.split('\n').length,
      chars: [...text].length,
    };
  },
});
