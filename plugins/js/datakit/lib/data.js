// Plain data helpers, free of toolhost: each throws an Error whose message is meant for the model.

/** The value at JSON pointer `pointer` (RFC 6901) in `doc`; the whole of it for "". */
export function select(doc, pointer) {
  if (pointer === '' || pointer === undefined) return doc;
  if (!pointer.startsWith('/')) throw new Error(`${JSON.stringify(pointer)} is not a JSON pointer: it must start with "/"`);
  let here = doc;
  let path = '';
  for (const raw of pointer.slice(1).split('/')) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    path += '/' + raw;
    if (Array.isArray(here)) {
      if (!/^(0|[1-9][0-9]*)$/.test(key) || Number(key) >= here.length) {
        throw new Error(`nothing at ${path}: the array has ${here.length} item(s)`);
      }
      here = here[Number(key)];
    } else if (here !== null && typeof here === 'object') {
      if (!Object.prototype.hasOwnProperty.call(here, key)) {
        const keys = Object.keys(here);
        throw new Error(`nothing at ${path}: the object's keys are ${keys.length ? keys.join(', ') : '(none)'}`);
      }
      here = here[key];
    } else {
      throw new Error(`nothing at ${path}: ${path.slice(0, path.length - raw.length - 1) || 'the document'} is ${JSON.stringify(here)}`);
    }
  }
  return here;
}

function cell(value) {
  if (value === undefined || value === null) return '';
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text.replace(/\|/g, '\\|').replace(/\r?\n/g, ' ');
}

/** A Markdown table of `rows` (objects) with `columns` (default: all keys, first seen first). */
export function markdownTable(rows, columns) {
  if (rows.length === 0) throw new Error('`rows` is empty: give at least one object');
  rows.forEach((row, i) => {
    if (row === null || typeof row !== 'object' || Array.isArray(row)) {
      throw new Error(`row ${i + 1} is ${JSON.stringify(row)}, not an object`);
    }
  });
  let cols = columns;
  if (cols === undefined) {
    cols = [];
    for (const row of rows) for (const key of Object.keys(row)) if (!cols.includes(key)) cols.push(key);
  } else if (cols.length === 0 || cols.some((c) => typeof c !== 'string')) {
    throw new Error('`columns` must be a non-empty array of strings');
  }
  const lines = [
    `| ${cols.map(cell).join(' | ')} |`,
    `| ${cols.map(() => '---').join(' | ')} |`,
    ...rows.map((row) => `| ${cols.map((c) => cell(row[c])).join(' | ')} |`),
  ];
  return lines.join('\n');
}

/** The `limit` most frequent words, as [word, count], most frequent first, ties alphabetical. */
export function wordFrequencies(text, limit) {
  const counts = new Map();
  for (const word of text.toLowerCase().match(/[\p{L}\p{N}][\p{L}\p{N}'’-]*/gu) ?? []) {
    counts.set(word, (counts.get(word) ?? 0) + 1);
  }
  return [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, limit);
}
