// Node module hooks: `import … from 'toolhost-sdk'` resolves to this SDK's index.mjs, whatever
// the project's node_modules hold, so a plugin project needs no `npm install`.

const SDK = new URL('../index.mjs', import.meta.url).href;

export async function resolve(specifier, context, nextResolve) {
  if (specifier === 'toolhost-sdk') return { url: SDK, shortCircuit: true };
  return nextResolve(specifier, context);
}
