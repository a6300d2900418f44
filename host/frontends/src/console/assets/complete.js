// Completion as a person types: an input whose argument the plugin completes gets a datalist
// filled from /console/api/complete (what it asks: a prompt's argument or a template's
// variable, the value so far, the other arguments given).

import { get } from './api.js';
import { h } from './dom.js';

let next = 0;

// `input` completes `argument` of `target` ({ prompt } or { template }); `context()` gives the
// other arguments' values.
export function completes(input, target, argument, context = () => ({})) {
  const list = h('datalist', { id: `complete-${next++}` });
  input.setAttribute('list', list.id);
  input.setAttribute('autocomplete', 'off');
  let asked = 0;
  const ask = async () => {
    const q = new URLSearchParams({ ...target, argument, value: input.value });
    for (const [k, v] of Object.entries(context())) if (k !== argument && v) q.append(`with.${k}`, v);
    const mine = ++asked;
    try {
      const r = await get(`/console/api/complete?${q}`);
      if (mine !== asked) return;
      list.replaceChildren(...r.values.map((v) => h('option', { value: v })));
    } catch { /* completion is a help, never an error in the form */ }
  };
  input.addEventListener('input', ask);
  input.addEventListener('focus', ask);
  return list;
}
