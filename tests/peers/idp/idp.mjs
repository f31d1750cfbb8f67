// A real identity provider for mcpstorm's OAuth tests (issue 43): panva's oidc-provider, a certified OpenID
// provider, on plain http on loopback, with client credentials, resource indicators (RFC 8707), JWT access tokens
// (RFC 9068), introspection (RFC 7662), revocation (RFC 7009) and a token-exchange grant (RFC 8693).
//
// Usage: node tests/peers/idp/idp.mjs [--port N] [--kid NAME] [--alg RS256|ES256] [--ttl SECONDS]
//                                     [--format jwt|opaque] [--clients FILE]
//   --port N        port on 127.0.0.1 (default 0: a free one); the issuer is http://127.0.0.1:PORT (no trailing /)
//   --kid NAME      id of the signing key generated at startup (default k1); restart with another kid, or
//                   POST /__test/rotate, to rotate keys
//   --alg ALG       RS256 (RSA-2048, default) or ES256 (P-256) for that key; it signs every JWT access token
//   --ttl SECONDS   access token lifetime (default 300)
//   --format F      jwt (default) or opaque: the format of resource-bound access tokens (those requested with
//                   `resource`, token exchange included); a token requested without `resource` is always opaque
//   --clients FILE  a JSON list of clients replacing the defaults below
//
// Once ready it prints exactly one line to stdout, `listening http://127.0.0.1:PORT`, and nothing else ever
// (oidc-provider's notices and this program's log go to stderr). It exits 0 on SIGTERM/SIGINT, and when its stdin
// is a pipe or socket, when that closes (a test holding the write end dies → the IdP goes too). A stdin that is a
// TTY or /dev/null is not watched.
//
// Endpoints (oidc-provider's): GET /.well-known/openid-configuration (also /.well-known/oauth-authorization-server),
// GET /jwks, POST /token, POST /token/introspection, POST /token/revocation. Clients authenticate with HTTP Basic
// (client_secret_basic) or client_id/client_secret in the form body (client_secret_post), at every endpoint.
// JWT access tokens are RFC 9068's: header {alg, typ: "at+jwt", kid}, claims jti, sub (the client_id for
// client_credentials), iat, exp, scope, client_id, iss, aud.
// Introspection (RFC 7662) answers for opaque tokens only (run with --format opaque): oidc-provider refuses a JWT
// there with 400 unsupported_token_type. A client may introspect its own tokens; others' only with `introspect`
// (gateway by default), else {"active": false}. The answer: active, sub, client_id, exp, iat, iss, aud, scope,
// token_type (and act for an exchanged token). Revocation likewise takes opaque tokens only.
// oidc-provider 9 prints "Unsupported runtime. Use Node.js v22.x LTS" on Node 20 (stderr) and works.
//
// Default clients (all confidential, client_secret_basic; client_secret_post is accepted as well):
//   agent        / agent-secret    client_credentials; scopes mcp tools:echo tools:add
//   agent-narrow / narrow-secret   client_credentials; scopes mcp tools:echo (to test 403 insufficient_scope on add)
//   gateway      / gateway-secret  client_credentials and token exchange; scopes mcp tools:echo tools:add; may
//                                  introspect any client's token
// A client file is a JSON list of oidc-provider client metadata, e.g.
//   [{"client_id": "x", "client_secret": "s", "scope": "mcp tools:echo",
//     "grant_types": ["client_credentials"], "introspect": false}]
// grant_types defaults to ["client_credentials"], token_endpoint_auth_method to client_secret_basic; `introspect:
// true` (this program's own key) lets that client introspect other clients' tokens (any client may introspect its
// own). redirect_uris and response_types default to none (no browser flows).
//
// Scopes: mcp, tools:echo, tools:add, tools:admin (and openid, offline_access). A client may request only scopes in
// its `scope` (asking for more is `invalid_scope`, oidc-provider's rule); a request without `scope` yields a token
// without scope. Resource indicators: any http(s)://127.0.0.1:PORT/... or http(s)://localhost:PORT/... URL; the
// token's `aud` is exactly the requested `resource` string; anything else is `invalid_target`. One resource per
// request.
//
// Token exchange (RFC 8693), grant_type=urn:ietf:params:oauth:grant-type:token-exchange, for clients whose
// grant_types list it (gateway by default): subject_token (an unexpired access token this IdP issued: a JWT verified
// against the current keys, or an opaque one looked up), subject_token_type=
// urn:ietf:params:oauth:token-type:access_token, resource (required), scope (optional). The scopes granted are those
// requested (default: the subject token's), kept only where the subject token, the calling client and the resource
// all allow them. The new token's aud is the resource, sub the subject token's sub, client_id the caller, and it has
// act = {"sub": <caller client_id>}; it expires at the earlier of now + ttl and the subject token's exp. Answer:
// {access_token, issued_token_type: "urn:ietf:params:oauth:token-type:access_token", token_type: "Bearer",
//  expires_in, scope}.
//
// Test-only control endpoints (under /__test/, no authentication; loopback only):
//   POST /__test/slow?ms=N          the token endpoint answers after N ms (0 = off)
//   POST /__test/fail?status=S[&count=K]  the token endpoint answers S ({"error": "temporarily_unavailable"})
//                                   for the next K requests (default: until reset); status=0 turns it off
//   POST /__test/ttl?seconds=N      access token lifetime from now on (as --ttl)
//   POST /__test/rotate?kid=NAME[&keep_old=1]  a fresh key of the same alg signs from now on; the old key leaves
//                                   the JWKS unless keep_old=1 (then it stays published, for verification only)
//   POST /__test/reset              slow, fail and the counters back to zero, ttl back to --ttl
//   GET  /__test/stats              {"token_requests": N, "token_ok": N, "token_errors": N, "token_injected_failures":
//                                    N, "grants": {"client_credentials": N, "<token exchange urn>": N},
//                                    "jwks_requests": N, "discovery_requests": N, "introspection_requests": N,
//                                    "kids": [...], "ttl": N}
// token_requests counts every POST /token (injected failures included) since start or the last reset.

import { createServer } from 'node:http';
import { readFileSync, fstatSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

import Provider, { errors } from 'oidc-provider';
import {
  createLocalJWKSet, decodeProtectedHeader, exportJWK, generateKeyPair, jwtVerify,
} from 'jose';

// Nothing but the listening line may reach stdout: oidc-provider prints its notices with console.info.
console.log = console.error;
console.info = console.error;
console.warn = console.error;

const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';
const SCOPES = ['openid', 'offline_access', 'mcp', 'tools:echo', 'tools:add', 'tools:admin'];
const RESOURCE_SCOPE = 'mcp tools:echo tools:add tools:admin';

function parseArgs(argv) {
  const opts = {
    port: 0, kid: 'k1', alg: 'RS256', ttl: 300, format: 'jwt', clients: undefined,
  };
  for (let i = 0; i < argv.length; i += 1) {
    const flag = argv[i];
    const value = argv[i + 1];
    if (value === undefined) throw new Error(`${flag} needs a value`);
    i += 1;
    switch (flag) {
      case '--port': opts.port = Number(value); break;
      case '--kid': opts.kid = value; break;
      case '--alg': opts.alg = value; break;
      case '--ttl': opts.ttl = Number(value); break;
      case '--format': opts.format = value; break;
      case '--clients': opts.clients = value; break;
      default: throw new Error(`unknown option ${flag}`);
    }
  }
  if (!Number.isInteger(opts.port) || opts.port < 0 || opts.port > 65535) throw new Error('--port: 0..65535');
  if (!['RS256', 'ES256'].includes(opts.alg)) throw new Error('--alg: RS256 or ES256');
  if (!Number.isInteger(opts.ttl) || opts.ttl < 1) throw new Error('--ttl: a positive number of seconds');
  if (!['jwt', 'opaque'].includes(opts.format)) throw new Error('--format: jwt or opaque');
  return opts;
}

const DEFAULT_CLIENTS = [
  { client_id: 'agent', client_secret: 'agent-secret', scope: 'mcp tools:echo tools:add' },
  { client_id: 'agent-narrow', client_secret: 'narrow-secret', scope: 'mcp tools:echo' },
  {
    client_id: 'gateway',
    client_secret: 'gateway-secret',
    scope: 'mcp tools:echo tools:add',
    grant_types: ['client_credentials', TOKEN_EXCHANGE],
    introspect: true,
  },
];

function loadClients(file) {
  const list = file ? JSON.parse(readFileSync(file, 'utf8')) : DEFAULT_CLIENTS;
  if (!Array.isArray(list)) throw new Error('--clients: the file must hold a JSON list');
  const introspectors = new Set();
  const clients = list.map(({ introspect, ...client }) => {
    if (introspect) introspectors.add(client.client_id);
    return {
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
      token_endpoint_auth_method: 'client_secret_basic',
      ...client,
    };
  });
  return { clients, introspectors };
}

async function newKey(kid, alg) {
  const { privateKey } = await generateKeyPair(alg, { modulusLength: 2048, extractable: true });
  return { ...(await exportJWK(privateKey)), kid, alg, use: 'sig' };
}

function publicJwk({ d, p, q, dp, dq, qi, ...pub }) {
  return pub;
}

function loopbackResource(resource) {
  let url;
  try {
    url = new URL(resource);
  } catch {
    return false;
  }
  return ['http:', 'https:'].includes(url.protocol) && ['127.0.0.1', 'localhost'].includes(url.hostname)
    && !url.hash;
}

const opts = parseArgs(process.argv.slice(2));
const { clients, introspectors } = loadClients(opts.clients);

const state = {
  ttl: opts.ttl,
  slowMs: 0,
  failStatus: 0,
  failLeft: Infinity,
  keys: [await newKey(opts.kid, opts.alg)], // keys[0] signs; the rest are published only
};
let stats;
function resetStats() {
  stats = {
    token_requests: 0,
    token_ok: 0,
    token_errors: 0,
    token_injected_failures: 0,
    grants: {},
    jwks_requests: 0,
    discovery_requests: 0,
    introspection_requests: 0,
  };
}
resetStats();

// The port comes first: the issuer names it.
let handle = (req, res) => { res.statusCode = 503; res.end(); };
const server = createServer((req, res) => handle(req, res));
await new Promise((resolve, reject) => {
  server.once('error', reject);
  server.listen(opts.port, '127.0.0.1', resolve);
});
const { port } = server.address();
const issuer = `http://127.0.0.1:${port}`;

// Token exchange's new tokens: the subject's sub and the actor, set on the token model before it is saved.
const exchanged = new WeakMap();

function resourceServerInfo(resource) {
  return {
    scope: RESOURCE_SCOPE,
    audience: resource,
    accessTokenTTL: state.ttl,
    accessTokenFormat: opts.format,
    jwt: { sign: { alg: opts.alg } },
  };
}

function buildProvider() {
  // Node's own server; oidc-provider's memory adapter (module-level, so tokens survive a /__test/rotate).
  const provider = new Provider(issuer, {
    clients,
    jwks: { keys: state.keys },
    scopes: SCOPES,
    clientDefaults: {
      grant_types: ['client_credentials'],
      response_types: [],
      id_token_signed_response_alg: opts.alg,
      token_endpoint_auth_method: 'client_secret_basic',
    },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      introspection: {
        enabled: true,
        allowedPolicy: (ctx, client, token) => token.clientId === client.clientId
          || introspectors.has(client.clientId),
      },
      revocation: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: (ctx, client, oneOf) => (oneOf ? oneOf[0] : undefined),
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx, resource) => {
          if (!loopbackResource(resource)) {
            throw new errors.InvalidTarget('only http(s)://127.0.0.1:* and http(s)://localhost:* resources are served');
          }
          return resourceServerInfo(resource);
        },
      },
    },
    ttl: {
      ClientCredentials: (ctx, token) => exchanged.get(token)?.ttl ?? token.resourceServer?.accessTokenTTL ?? state.ttl,
      AccessToken: (ctx, token) => token.resourceServer?.accessTokenTTL ?? state.ttl,
    },
    // `sub` here reaches introspection answers for opaque tokens (a JWT's sub is set by oidc-provider, and by the
    // customizer below for exchanged tokens).
    extraTokenClaims: (ctx, token) => {
      const ex = exchanged.get(token);
      return ex ? { sub: ex.sub, act: { sub: ex.actor } } : { sub: token.accountId ?? token.clientId };
    },
    formats: {
      customizers: {
        jwt: (ctx, token, jwt) => {
          const ex = exchanged.get(token);
          if (ex) jwt.payload.sub = ex.sub;
        },
      },
    },
    enabledJWA: {
      clientAuthSigningAlgValues: ['RS256', 'ES256', 'PS256', 'EdDSA', 'HS256'],
    },
  });

  provider.registerGrantType(TOKEN_EXCHANGE, (ctx) => tokenExchange(provider, ctx), [
    'subject_token', 'subject_token_type', 'resource', 'scope', 'audience', 'requested_token_type',
    'actor_token', 'actor_token_type',
  ]);

  // Token requests per grant_type, from the parameters oidc-provider parsed.
  provider.use(async (ctx, next) => {
    await next();
    if (ctx.path === '/token' && ctx.method === 'POST') {
      const grant = ctx.oidc?.params?.grant_type ?? 'none';
      stats.grants[grant] = (stats.grants[grant] ?? 0) + 1;
    }
  });
  provider.on('grant.success', () => { stats.token_ok += 1; });
  provider.on('grant.error', (ctx, err) => {
    console.error(`idp: token error ${err.error ?? err.name}: ${err.error_description ?? err.message}`
      + `${err.error_detail ? ` (${err.error_detail})` : ''}`);
  });
  provider.on('server_error', (ctx, err) => console.error('idp: server error', err));
  return provider;
}

async function subjectOf(provider, subjectToken) {
  let isJwt = false;
  try {
    isJwt = !!decodeProtectedHeader(subjectToken);
  } catch { /* opaque */ }
  if (isJwt) {
    try {
      const { payload } = await jwtVerify(subjectToken, createLocalJWKSet({ keys: state.keys.map(publicJwk) }), {
        issuer,
        algorithms: [opts.alg],
      });
      if (!payload.sub) throw new Error('no sub');
      return { sub: payload.sub, scope: payload.scope ?? '', exp: payload.exp };
    } catch (err) {
      throw new errors.InvalidGrant(`subject_token is invalid: ${err.message}`);
    }
  }
  const token = (await provider.AccessToken.find(subjectToken)) ?? (await provider.ClientCredentials.find(subjectToken));
  if (!token?.isValid) throw new errors.InvalidGrant('subject_token is invalid, expired or unknown');
  return { sub: token.accountId ?? token.clientId, scope: token.scope ?? '', exp: token.exp };
}

async function tokenExchange(provider, ctx) {
  const { params, client } = ctx.oidc;
  if (!params.subject_token) throw new errors.InvalidRequest('missing required parameter \'subject_token\'');
  if (params.subject_token_type !== ACCESS_TOKEN_TYPE) {
    throw new errors.InvalidRequest(`subject_token_type must be ${ACCESS_TOKEN_TYPE}`);
  }
  if (params.requested_token_type && params.requested_token_type !== ACCESS_TOKEN_TYPE) {
    throw new errors.InvalidRequest(`only ${ACCESS_TOKEN_TYPE} can be requested`);
  }
  if (params.actor_token) throw new errors.InvalidRequest('actor_token is not supported');
  const resource = params.resource;
  if (!resource || Array.isArray(resource)) {
    throw new errors.InvalidTarget('exactly one resource must be requested');
  }
  if (!loopbackResource(resource)) {
    throw new errors.InvalidTarget('only http(s)://127.0.0.1:* and http(s)://localhost:* resources are served');
  }

  const subject = await subjectOf(provider, params.subject_token);
  const now = Math.floor(Date.now() / 1000);
  const subjectScopes = new Set(subject.scope.split(' ').filter(Boolean));
  const clientScopes = new Set((client.scope ?? '').split(' ').filter(Boolean));
  const resourceScopes = new Set(RESOURCE_SCOPE.split(' '));
  const requested = params.scope ? params.scope.split(' ').filter(Boolean) : [...subjectScopes];
  const scope = requested.filter((s) => subjectScopes.has(s) && resourceScopes.has(s)
    && (!client.scope || clientScopes.has(s))).join(' ') || undefined;

  const token = new provider.ClientCredentials({ client, scope });
  token.resourceServer = new provider.ResourceServer(resource, resourceServerInfo(resource));
  const ttl = Math.max(1, Math.min(state.ttl, (subject.exp ?? Infinity) - now));
  exchanged.set(token, { sub: subject.sub, actor: client.clientId, ttl });
  ctx.oidc.entity('ClientCredentials', token);
  const value = await token.save();

  ctx.body = {
    access_token: value,
    issued_token_type: ACCESS_TOKEN_TYPE,
    token_type: 'Bearer',
    expires_in: token.expiration,
    scope,
  };
}

let provider = buildProvider();
let providerHandler = provider.callback();

function json(res, status, body) {
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  res.end(JSON.stringify(body));
}

async function control(req, res, url) {
  const q = url.searchParams;
  const route = `${req.method} ${url.pathname}`;
  switch (route) {
    case 'GET /__test/stats':
      return json(res, 200, { ...stats, kids: state.keys.map((k) => k.kid), ttl: state.ttl });
    case 'POST /__test/slow':
      state.slowMs = Number(q.get('ms') ?? 0);
      return json(res, 200, { slow_ms: state.slowMs });
    case 'POST /__test/fail':
      state.failStatus = Number(q.get('status') ?? 503);
      state.failLeft = q.has('count') ? Number(q.get('count')) : Infinity;
      return json(res, 200, { fail_status: state.failStatus, count: q.get('count') });
    case 'POST /__test/ttl':
      state.ttl = Number(q.get('seconds'));
      if (!Number.isInteger(state.ttl) || state.ttl < 1) {
        state.ttl = opts.ttl;
        return json(res, 400, { error: 'seconds must be a positive integer' });
      }
      return json(res, 200, { ttl: state.ttl });
    case 'POST /__test/rotate': {
      const kid = q.get('kid');
      if (!kid || state.keys.some((k) => k.kid === kid)) return json(res, 400, { error: 'a new kid is needed' });
      const key = await newKey(kid, opts.alg);
      state.keys = q.get('keep_old') === '1' ? [key, ...state.keys] : [key];
      provider = buildProvider();
      providerHandler = provider.callback();
      console.error(`idp: rotated to kid ${kid}; published ${state.keys.map((k) => k.kid).join(', ')}`);
      return json(res, 200, { kids: state.keys.map((k) => k.kid) });
    }
    case 'POST /__test/reset':
      state.slowMs = 0;
      state.failStatus = 0;
      state.failLeft = Infinity;
      state.ttl = opts.ttl;
      resetStats();
      return json(res, 200, { reset: true });
    default:
      return json(res, 404, { error: 'unknown test endpoint' });
  }
}

handle = async (req, res) => {
  try {
    const url = new URL(req.url, issuer);
    if (url.pathname.startsWith('/__test/')) return await control(req, res, url);
    if (url.pathname === '/jwks') stats.jwks_requests += 1;
    if (url.pathname.startsWith('/.well-known/')) stats.discovery_requests += 1;
    if (url.pathname === '/token/introspection') stats.introspection_requests += 1;
    if (url.pathname === '/token' && req.method === 'POST') {
      stats.token_requests += 1;
      if (state.slowMs > 0) await sleep(state.slowMs);
      if (state.failStatus > 0 && state.failLeft > 0) {
        state.failLeft -= 1;
        stats.token_injected_failures += 1;
        req.resume();
        return json(res, state.failStatus, {
          error: 'temporarily_unavailable', error_description: 'failure injected by /__test/fail',
        });
      }
      res.on('finish', () => {
        if (res.statusCode >= 400) stats.token_errors += 1;
      });
    }
    return providerHandler(req, res);
  } catch (err) {
    console.error('idp: request failed', err);
    if (!res.headersSent) json(res, 500, { error: 'server_error' });
    else res.destroy();
  }
};

function shutdown(why) {
  console.error(`idp: exiting (${why})`);
  server.close();
  server.closeAllConnections?.();
  process.exit(0);
}
process.on('SIGTERM', () => shutdown('SIGTERM'));
process.on('SIGINT', () => shutdown('SIGINT'));
let watchStdin = false;
try {
  const st = fstatSync(0);
  watchStdin = st.isFIFO() || st.isSocket();
} catch { /* no stdin */ }
if (watchStdin) {
  process.stdin.on('end', () => shutdown('stdin closed'));
  process.stdin.on('close', () => shutdown('stdin closed'));
  process.stdin.on('error', () => shutdown('stdin error'));
  process.stdin.resume();
}

process.stdout.write(`listening ${issuer}\n`);
console.error(`idp: issuer ${issuer}, kid ${opts.kid} (${opts.alg}), ttl ${opts.ttl}s, format ${opts.format}, `
  + `clients ${clients.map((c) => c.client_id).join(', ')}`);
