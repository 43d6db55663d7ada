// Runnable example of two authentication mechanisms against a running Ratecard (README
// "Authentication"): an external system's RS256 JWT, and two-factor (TOTP) for a user.
//   PW=<admin password> npm exec -- node docs/examples/external-jwt-and-tfa.ts
// Settings: BASE (default http://127.0.0.1:8080/service/demo), ADMIN (default admin), PW.

import { SignJWT, exportSPKI, generateKeyPair } from 'jose';
import { generate } from 'otplib';

const base = process.env.BASE ?? 'http://127.0.0.1:8080/service/demo';
const partition = base.split('/').at(-1)!;
const admin = process.env.ADMIN ?? 'admin';
const password = process.env.PW ?? '';
const basic = (user: string, pw: string) =>
  `Basic ${Buffer.from(`${partition}/${user}:${pw}`).toString('base64')}`;

async function call(path: string, headers: Record<string, string>, body?: unknown): Promise<unknown> {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const json = await res.json();
  console.log(res.status, path, JSON.stringify(json).slice(0, 160));
  return json;
}

// 1. External JWT: register the system "ERP" with its public key, then call as admin with its token.
const { publicKey, privateKey } = await generateKeyPair('RS256', { extractable: true });
const value = JSON.stringify({
  entries: { ERP: { publicKey: await exportSPKI(publicKey), permissions: null } },
});
await call('/integrate/ACO', { authorization: basic(admin, password) }, [
  { data: { uniqueName: 'externalJWTConfiguration', value } },
]);
const jwt = await new SignJWT({ partition })
  .setProtectedHeader({ alg: 'RS256' })
  .setSubject(admin)
  .setIssuer('ERP')
  .setAudience(process.env.CLUSTER_NAME ?? 'ratecard')
  .setExpirationTime('5m')
  .sign(privateKey);
await call('/fetch/P', { authorization: `BEARER ERP;${jwt}` }, { endRow: 1 });

// 2. TFA for a new user: enrol, confirm with a code, then log in with the next code.
const login = `tfa-${Date.now()}`;
const userPassword = 'a-long-password-1';
await call(
  '/add/U',
  { authorization: basic(admin, password) },
  { data: { loginName: login, password: userPassword } },
);
const enrolled = (await call('/accountmanager.tfa.enroll', {
  authorization: basic(login, userPassword),
})) as {
  response: { data: [{ secret: string; uri: string }] };
};
const { secret } = enrolled.response.data[0];
const now = Math.floor(Date.now() / 1000);
await call(
  '/accountmanager.tfa.confirm',
  { authorization: basic(login, userPassword) },
  { data: { code: await generate({ secret, epoch: now }) } },
);
await call('/login/extended', { authorization: basic(login, userPassword) }); // 401: the code is missing
await call('/login/extended', {
  authorization: basic(login, userPassword),
  'Ratecard-TFA': await generate({ secret, epoch: now + 30 }), // each code works once
});
