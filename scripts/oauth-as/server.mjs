// A real OAuth 2.1 authorization server for verbgate's resource-server
// tests: oauth2-mock-server (RS256 keys it makes, its JWKS, its metadata,
// its token endpoint), shaped the way a production server answers a
// client_credentials grant — `sub` is the client, `aud` the RFC 8707
// `resource` the client asked for — plus knobs a test uses to ask for a
// token that must be refused (all signed by this server's real key):
//   test_aud=<aud>        another audience
//   test_exp=<seconds>    exp this many seconds from now (negative: expired)
//   test_kid=<kid>        a key id the server does not publish
//   test_typ=<typ>        another header typ (an ID token's `JWT`)
// A real server grants a client only the scopes it was registered for: the
// optional second argument says which, `{"client": ["scope", …]}` (a client
// not named gets what it asks for).
// Usage: node server.mjs PORT [GRANTS]  — prints {"issuer": …} on stdout once up.
import { OAuth2Server } from 'oauth2-mock-server';

const port = Number(process.argv[2] ?? 0);
const grants = JSON.parse(process.argv[3] ?? '{}');
const server = new OAuth2Server();
await server.issuer.keys.generate('RS256');

server.service.on('beforeTokenSigning', (token, req) => {
  const body = req.body ?? {};
  let client = body.client_id;
  const basic = (req.headers.authorization ?? '').match(/^Basic (.+)$/i);
  if (basic) client = decodeURIComponent(Buffer.from(basic[1], 'base64').toString().split(':')[0]);
  if (client && token.payload.sub === undefined) token.payload.sub = client;
  if (client && grants[client] && typeof token.payload.scope === 'string') {
    token.payload.scope = token.payload.scope.split(' ').filter((s) => grants[client].includes(s)).join(' ');
  }
  // RFC 9068: an access token's header says it is one.
  token.header.typ = 'at+jwt';
  if (body.test_typ) token.header.typ = body.test_typ;
  if (body.resource) token.payload.aud = body.resource;
  if (body.test_aud) token.payload.aud = body.test_aud;
  if (body.test_exp) token.payload.exp = Math.floor(Date.now() / 1000) + Number(body.test_exp);
  if (body.test_kid) token.header.kid = body.test_kid;
});

await server.start(port, '127.0.0.1');
process.stdout.write(JSON.stringify({ issuer: server.issuer.url }) + '\n');
process.on('SIGTERM', async () => { await server.stop(); process.exit(0); });
