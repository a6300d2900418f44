// A real OAuth 2.1 / OpenID authorization server for the OAuth resource-server tests (#60):
// panva's certified `oidc-provider` from npm, configured for toolhost's tests. Nothing here mints
// a token by hand; every token comes out of oidc-provider's own endpoints.
//
//   node tests/oauth/server.mjs PORT      (0: any free port)
//
// Prints exactly one line on stdout once it serves, `listening http://127.0.0.1:PORT`; that URL
// is the issuer. It exits when its stdin closes (so a test that dies leaves no server behind:
// keep stdin an open pipe, or a terminal) and on SIGTERM or SIGINT.
//
// Where oidc-provider comes from: `cargo xtask test` installs the pinned version into
// target/oauth-server/node_modules and names that folder in TOOLHOST_TEST_OIDC_PROVIDER. ESM
// `import` ignores NODE_PATH and resolves bare names only from node_modules folders above the
// importing file (here tests/oauth/, which has none), so the package is imported by its absolute
// path, resolved from that folder; without the variable the same folder is found relative to
// this file.
//
// Keys: a fresh RS256 key and a pool of ES256 keys, generated at each start (so a restart is a
// rotation too). Access tokens for loopback resources are JWTs signed ES256 with the current
// key. `POST /test/rotate` makes the next key of the pool the signing key and publishes it in
// the JWKS in place of the old one (`POST /test/rotate?keep=1` keeps the old one published too,
// as a real issuer does for a while after a rotation). oidc-provider reads its key set once, at
// construction, so the whole pool is in its key store from the start and this server serves the
// JWKS itself, with only the keys that are published: a resource server sees a kid it has never
// seen only after a rotation, as it would in production.
//
// Clients (secrets are constants shared with tests/all/support/oauth.rs):
//   toolhost-test          client_credentials, client_secret_post: ES256 JWTs, 10 minutes
//   toolhost-short         as toolhost-test, its tokens live 2 seconds (the expired-token tests)
//   toolhost-rs256         as toolhost-test, its JWTs signed RS256
//   toolhost-opaque        as toolhost-test, its tokens opaque (introspection), aud = resource
//   toolhost-introspector  what a resource server introspects with, client_secret_basic
//   toolhost-introspector-post  the same with client_secret_post
//   toolhost-console       public (PKCE), authorization code, redirects to 127.0.0.1/localhost:8765
// and any client registered dynamically (RFC 7591, open registration at /reg).
//
// Resources: any http://127.0.0.1… or http://localhost… URI, scopes `mcp:tools mcp:admin`,
// audience the resource itself; and `urn:toolhost:opaque`, whose tokens are opaque whoever asks.
// Any other resource is refused (invalid_target).
//
// Checked by hand, outside the suite: tests/oauth/selfcheck.py (tokens, introspection, rotation,
// registration, a code flow) and tests/oauth/flowcheck.py (tests/mcp/oauth_flow.py, the MCP SDK's
// OAuth flow, against a stand-in resource server).
//
// Users (authorization code flow, through the development login and consent pages): any login
// name is an account whose `sub` is that name; `alice` is in group `ops`, everyone else in
// `users`; the JWT access tokens of users carry that `groups` claim.

import * as crypto from 'node:crypto';
import * as http from 'node:http';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const SCOPES = 'mcp:tools mcp:admin';
const OPAQUE_RESOURCE = 'urn:toolhost:opaque';
/// How many rotations one run of the server allows (each one a key generated at start).
const ES256_POOL = 8;

/// Each confidential client's secret, auth method and what its access tokens look like.
const SECRET = {
  'toolhost-test': 'toolhost-test-secret-0123456789',
  'toolhost-short': 'toolhost-short-secret-0123456789',
  'toolhost-rs256': 'toolhost-rs256-secret-0123456789',
  'toolhost-opaque': 'toolhost-opaque-secret-0123456789',
  'toolhost-introspector': 'toolhost-introspector-secret-0123456789',
  'toolhost-introspector-post': 'toolhost-introspector-secret-0123456789',
};
const TOKENS = {
  'toolhost-short': { ttl: 2 },
  'toolhost-rs256': { alg: 'RS256' },
  'toolhost-opaque': { format: 'opaque' },
};
const DEFAULT_TOKENS = { ttl: 600, alg: 'ES256', format: 'jwt' };
const INTROSPECTORS = new Set(['toolhost-introspector', 'toolhost-introspector-post']);

function fail(message) {
  process.stderr.write(`tests/oauth/server.mjs: ${message}\n`);
  process.exit(2);
}

/// The folder holding oidc-provider's node_modules (see the top of this file).
function modulesFolder() {
  const here = path.dirname(fileURLToPath(import.meta.url));
  return process.env.TOOLHOST_TEST_OIDC_PROVIDER
    ?? path.join(here, '..', '..', 'target', 'oauth-server', 'node_modules');
}

async function loadProvider() {
  const modules = modulesFolder();
  let entry;
  try {
    // The package's own entry point (its package.json `main`), by absolute path.
    entry = createRequire(import.meta.url).resolve(path.join(modules, 'oidc-provider'));
  } catch {
    fail(`oidc-provider is not installed in ${modules}: run \`cargo xtask test\` (it installs the `
      + 'pinned version into target/oauth-server), or `npm install --prefix target/oauth-server '
      + 'oidc-provider@VERSION` with the version xtask pins, or set TOOLHOST_TEST_OIDC_PROVIDER '
      + 'to a node_modules folder holding it');
  }
  return import(pathToFileURL(entry).href);
}

/// A private signing JWK of `alg` named `kid`, freshly generated.
///
/// The key generation itself encodes it as a JWK: on Node 20, `generateKeyPairSync(...)` followed
/// by `privateKey.export({ format: 'jwk' })` deadlocks now and then (one start in twenty here),
/// when a garbage collection during the export finalizes the finished key generation job, whose
/// destructor waits for the lock the export holds.
function privateJwk(alg, kid) {
  const encoding = { privateKeyEncoding: { format: 'jwk' }, publicKeyEncoding: { format: 'jwk' } };
  const { privateKey } = alg === 'ES256'
    ? crypto.generateKeyPairSync('ec', { namedCurve: 'P-256', ...encoding })
    : crypto.generateKeyPairSync('rsa', { modulusLength: 2048, ...encoding });
  return { ...privateKey, kid, alg, use: 'sig' };
}

/// What a JWKS may show of a private JWK: its public members.
function publicJwk(jwk) {
  const { kty, crv, x, y, n, e, kid, alg, use } = jwk;
  return { kty, crv, x, y, n, e, kid, alg, use };
}

/// The keys of this run: kids carry a per-run tag so keys of two runs never share a kid.
function makeKeys() {
  const run = crypto.randomBytes(4).toString('hex');
  const rs256 = privateJwk('RS256', `rs256-${run}`);
  const es256 = Array.from({ length: ES256_POOL }, (_, i) => privateJwk('ES256', `es256-${run}-${i}`));
  return {
    rs256,
    es256,
    /// Index into es256 of the key that signs.
    current: 0,
    /// Indices into es256 of the keys the JWKS shows.
    published: new Set([0]),
  };
}

function jwksOf(keys) {
  const es256 = [...keys.published].sort((a, b) => a - b).map((i) => publicJwk(keys.es256[i]));
  return { keys: [...es256, publicJwk(keys.rs256)] };
}

/// The next key signs from now on; the old one stays in the JWKS only if `keep`.
function rotate(keys, keep) {
  if (keys.current + 1 >= keys.es256.length) {
    return null;
  }
  const previous = keys.current;
  keys.current += 1;
  if (!keep) {
    keys.published.delete(previous);
  }
  keys.published.add(keys.current);
  return { kid: keys.es256[keys.current].kid, previous: keys.es256[previous].kid };
}

function groupsOf(accountId) {
  return accountId === 'alice' ? ['ops'] : ['users'];
}

function isLoopbackResource(resource) {
  return resource.startsWith('http://127.0.0.1') || resource.startsWith('http://localhost');
}

function tokensOf(client) {
  return { ...DEFAULT_TOKENS, ...TOKENS[client?.clientId] };
}

function clients() {
  const machine = (id, method = 'client_secret_post') => ({
    client_id: id,
    client_secret: SECRET[id],
    grant_types: ['client_credentials'],
    response_types: [],
    redirect_uris: [],
    token_endpoint_auth_method: method,
  });
  return [
    machine('toolhost-test'),
    machine('toolhost-short'),
    machine('toolhost-rs256'),
    machine('toolhost-opaque'),
    machine('toolhost-introspector', 'client_secret_basic'),
    machine('toolhost-introspector-post'),
    {
      client_id: 'toolhost-console',
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      redirect_uris: ['http://127.0.0.1:8765/console/callback', 'http://localhost:8765/console/callback'],
    },
  ];
}

function configuration(keys, errors) {
  return {
    clients: clients(),
    jwks: { keys: [...keys.es256, keys.rs256] },
    // The session and interaction cookies' signing key; any value will do for one run.
    cookies: { keys: [crypto.randomBytes(32).toString('hex')] },
    // The resource scopes are also the server's own: an MCP client registers dynamically with
    // the scope it read in the resource's metadata (`mcp:tools`), and oidc-provider accepts in a
    // registration only scopes of this list.
    scopes: ['openid', 'offline_access', ...SCOPES.split(' ')],
    pkce: { required: () => true },
    clientBasedCORS: () => true,
    async findAccount(ctx, sub) {
      return { accountId: sub, claims: async () => ({ sub, groups: groupsOf(sub) }) };
    },
    claims: { openid: ['sub'], groups: ['groups'] },
    async extraTokenClaims(ctx, token) {
      return token.accountId ? { groups: groupsOf(token.accountId) } : undefined;
    },
    ttl: {
      AccessToken: (ctx, token, client) => token.resourceServer?.accessTokenTTL ?? tokensOf(client).ttl,
      ClientCredentials: (ctx, token, client) => token.resourceServer?.accessTokenTTL ?? tokensOf(client).ttl,
      AuthorizationCode: () => 60,
      IdToken: () => 3600,
      Grant: () => 3600,
      Interaction: () => 600,
      Session: () => 3600,
      RefreshToken: () => 3600,
    },
    features: {
      devInteractions: { enabled: true },
      clientCredentials: { enabled: true },
      registration: { enabled: true },
      revocation: { enabled: true },
      introspection: {
        enabled: true,
        // A resource server introspects any token with its own client; other clients only
        // their own tokens.
        allowedPolicy: async (ctx, client, token) => INTROSPECTORS.has(client.clientId)
          || token.clientId === client.clientId,
      },
      resourceIndicators: {
        enabled: true,
        defaultResource: async (ctx, client, oneOf) => oneOf,
        useGrantedResource: async () => true,
        getResourceServerInfo: async (ctx, resource, client) => resourceServer(keys, errors, resource, client),
      },
    },
  };
}

/// What a token for `resource` looks like when `client` asks for it.
function resourceServer(keys, errors, resource, client) {
  const tokens = tokensOf(client);
  const opaque = resource === OPAQUE_RESOURCE || tokens.format === 'opaque';
  if (resource !== OPAQUE_RESOURCE && !isLoopbackResource(resource)) {
    throw new errors.InvalidTarget(`this test server serves only http://127.0.0.1…, http://localhost… and ${OPAQUE_RESOURCE}`);
  }
  const info = { scope: SCOPES, audience: resource, accessTokenTTL: tokens.ttl };
  if (opaque) {
    return { ...info, accessTokenFormat: 'opaque' };
  }
  const kid = tokens.alg === 'RS256' ? keys.rs256.kid : keys.es256[keys.current].kid;
  return { ...info, accessTokenFormat: 'jwt', jwt: { sign: { alg: tokens.alg, kid } } };
}

/// The test server's own routes in front of oidc-provider's.
function router(keys, provider) {
  const oidc = provider.callback();
  return (req, res) => {
    const url = new URL(req.url, 'http://127.0.0.1');
    if (req.method === 'GET' && url.pathname === '/jwks') {
      return json(res, 200, jwksOf(keys), 'application/jwk-set+json');
    }
    if (req.method === 'POST' && url.pathname === '/test/rotate') {
      const rotated = rotate(keys, url.searchParams.get('keep') === '1');
      return rotated
        ? json(res, 200, { ...rotated, jwks: jwksOf(keys) })
        : json(res, 409, { error: `no key left to rotate to (${ES256_POOL} per run): restart the server` });
    }
    if (url.pathname === '/.well-known/oauth-authorization-server') {
      // RFC 8414's name for the metadata oidc-provider serves under OpenID's; MCP clients and
      // resource servers may ask for either.
      req.url = '/.well-known/openid-configuration';
    }
    return oidc(req, res);
  };
}

function json(res, status, body, type = 'application/json') {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': `${type}; charset=utf-8`, 'cache-control': 'no-store' });
  res.end(text);
}

function listen(server, port) {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve(server.address().port));
  });
}

/// Exit when stdin closes (the test that started us is gone) or on SIGTERM/SIGINT.
function exitWithParent() {
  process.stdin.on('end', () => process.exit(0));
  process.stdin.on('error', () => process.exit(0));
  process.stdin.resume();
  process.on('SIGTERM', () => process.exit(0));
  process.on('SIGINT', () => process.exit(0));
}

async function main() {
  const arg = process.argv[2];
  const port = Number(arg);
  if (arg === undefined || !Number.isInteger(port) || port < 0 || port > 65535) {
    fail('usage: node tests/oauth/server.mjs PORT (0 for any free port)');
  }
  exitWithParent();
  const { default: Provider, errors } = await loadProvider();
  const keys = makeKeys();
  // The issuer names the port, so the port is bound before the provider is made.
  let handler = (req, res) => json(res, 503, { error: 'starting' });
  const server = http.createServer((req, res) => handler(req, res));
  let bound;
  try {
    bound = await listen(server, port);
  } catch (e) {
    fail(`cannot listen on 127.0.0.1:${port}: ${e.message}`);
  }
  const issuer = `http://127.0.0.1:${bound}`;
  const provider = new Provider(issuer, configuration(keys, errors));
  provider.on('server_error', (ctx, err) => process.stderr.write(`server_error: ${err.stack}\n`));
  handler = router(keys, provider);
  process.stdout.write(`listening ${issuer}\n`);
}

main().catch((e) => fail(e.stack));
