// The account manager over HTTP: users (add/update/delete, fetchusers), passwords, roles, user
// groups and business roles (assign, read, copy, delete with cleanup, audit), advanced configuration
// options, and the permission catalogue against docs/permissions.md. Each operation: its happy path,
// bad input (-4 naming the field), a caller without the permission (403), no credentials (401) and
// partition isolation (a second partition on the same database, so ids of one exist in the other).

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ADMIN, ADMIN_PASSWORD, startHarness, uniqueName, type Harness, type Reply } from '../helpers/app.ts';
import { PERMISSIONS, PERMISSION_CATALOGUE, ROLE_CATALOGUE, ROLE_NAMES } from '../../src/access/catalogue.ts';
import { okData, expectError } from '../helpers/envelope.ts';

interface Who {
  readonly user: string;
  readonly password: string;
}

const admin: Who = { user: ADMIN, password: ADMIN_PASSWORD };

/** Every answer of this suite, to check at the end that no password hash ever left the server. */
const answers: string[] = [];

async function call(h: Harness, path: string, body?: unknown, who: Who | null = admin): Promise<Reply> {
  const r = await h.call(path, { ...(who ? { basic: who } : {}), ...(body === undefined ? {} : { body }) });
  answers.push(r.text);
  return r;
}

async function withToken(h: Harness, token: string, path: string, body?: unknown): Promise<Reply> {
  const r = await h.call(path, {
    headers: { 'X-Ratecard-jwt': token },
    ...(body === undefined ? {} : { body }),
  });
  answers.push(r.text);
  return r;
}

/** 401 without credentials, 403 for `who`. */
async function refused(h: Harness, path: string, body: unknown, who: Who): Promise<void> {
  expectError(await call(h, path, body, null), 401, -7);
  expectError(await call(h, path, body, who), 403, -3);
}

let counter = 0;
/** A user with a fresh login name, the given roles and a password that passes the policy. */
async function newUser(h: Harness, roles: readonly string[] = []): Promise<Who & { id: number }> {
  const user = `${uniqueName('u')}${counter++}`;
  const password = 'Correct-Horse-9';
  return { user, password, id: await h.newUser(user, password, roles) };
}

async function newNamed(h: Harness, code: 'UG' | 'BR', name = uniqueName(code.toLowerCase())): Promise<any> {
  return okData(await call(h, `/add/${code}`, { data: { uniqueName: name, label: `Label of ${name}` } }))[0];
}

describe('account manager', () => {
  let h: Harness;
  let other: Harness;
  let plain: Who & { id: number };
  let userAdmin: Who & { id: number };
  /** A user manager who also holds the roles he hands out (a non-ADMIN grants only what he holds). */
  let roleManager: Who & { id: number };
  let auditor: Who & { id: number };
  let adminId: number;

  before(async () => {
    h = await startHarness();
    other = await startHarness({ shareDbWith: h });
    plain = await newUser(h);
    userAdmin = await newUser(h, ['USERADMIN']);
    roleManager = await newUser(h, ['USERADMIN', 'PRICESHOP_EDIT', 'WF_ADMIN', 'RM_RAT']);
    auditor = await newUser(h, ['USERAUDIT']);
    adminId = okData(await call(h, '/login/extended'))[0].id;
  });
  after(async () => {
    await other.close();
    await h.close();
  });

  describe('types U, UG, BR, ACO in the registry', () => {
    test('listed by /fetch and described without any password field', async () => {
      const codes = okData(await call(h, '/fetch')).map((t: any) => t.typeCode);
      for (const code of ['U', 'UG', 'BR', 'ACO']) assert.ok(codes.includes(code), code);
      const [u] = okData(await call(h, '/metadata.describe/U'));
      const fields = u.fields.map((f: any) => f.name);
      for (const f of ['loginName', 'firstName', 'lastName', 'email', 'activated'])
        assert.ok(fields.includes(f), f);
      assert.ok(!fields.some((f: string) => /password|hash/i.test(f)), fields.join());
    });

    test('/fetch/U needs USER_FETCH; UG and BR are open to every user', async () => {
      const rows = okData(await call(h, '/fetch/U', { data: { loginName: ADMIN } }));
      assert.equal(rows.length, 1);
      assert.equal(rows[0].typedId, `${adminId}.U`);
      assert.deepEqual(okData(await call(h, `/fetch/U/${adminId}`))[0].loginName, ADMIN);
      okData(await call(h, '/fetch/U', {}, auditor));
      await refused(h, '/fetch/U', {}, plain);
      okData(await call(h, '/fetch/UG', {}, plain));
      okData(await call(h, '/fetch/BR', {}, plain));
      expectError(await call(h, '/fetch/UG', {}, null), 401, -7);
      await refused(h, '/add/UG', { data: { uniqueName: 'NOPE' } }, plain);
      okData(await call(h, '/add/UG', { data: { uniqueName: uniqueName('ug') } }, userAdmin));
    });
  });

  describe('/add/U', () => {
    test('creates a user whose password works and is never answered', async () => {
      const login = uniqueName('new');
      const r = await call(h, '/add/U', {
        data: {
          loginName: login,
          firstName: 'Ada',
          email: 'ada@example.com',
          password: 'Analytical-Engine-1',
        },
      });
      const [u] = okData(r);
      assert.match(u.typedId, /^\d+\.U$/);
      assert.equal(u.firstName, 'Ada');
      assert.equal(u.activated, true);
      assert.equal(u.password, undefined);
      assert.ok(!/scrypt|password/i.test(r.text), r.text);
      okData(await call(h, '/login/extended', undefined, { user: login, password: 'Analytical-Engine-1' }));
      expectError(
        await call(h, '/login/extended', undefined, { user: login, password: 'wrong-password-1' }),
        401,
        -5,
      );
    });

    test('password policy: 8 characters, not containing the login name', async () => {
      const login = uniqueName('Pol');
      for (const password of [
        'short1',
        `xx${login.toUpperCase()}yy`,
        login.toLowerCase(),
        'Long-enough-1\u0000',
        // Characters, not UTF-16 units: four emoji are 4 characters (8 units); 1,025 are too many.
        '\u{1F600}'.repeat(4),
        '\u{1F600}'.repeat(1025),
      ]) {
        const r = await call(h, '/add/U', { data: { loginName: login, password } });
        expectError(r, 400, -4, 'password');
      }
      // 600 emoji are 600 characters (1,200 units): within the 1,024 allowed.
      const emoji = uniqueName('Pol');
      okData(await call(h, '/add/U', { data: { loginName: emoji, password: '\u{1F600}'.repeat(600) } }));
      // In a batch the element is named, and nothing of the batch is written.
      const first = uniqueName('Pol');
      expectError(
        await call(h, '/add/U', [
          { data: { loginName: first, password: 'Long-enough-1' } },
          { data: { loginName: login, password: 'x' } },
        ]),
        400,
        -4,
        '1.password',
      );
      assert.equal(okData(await call(h, '/fetch/U', { data: { loginName: first } })).length, 0);
      expectError(
        await call(h, '/add/U', { data: { loginName: login, password: 12345678 } }),
        400,
        -4,
        'password',
      );
      assert.equal(okData(await call(h, '/fetch/U', { data: { loginName: login } })).length, 0);
    });

    test('bad records: -4 naming the field; duplicates (any case) 409; a failed batch writes nothing', async () => {
      expectError(await call(h, '/add/U', { data: { firstName: 'x' } }), 400, -4, 'loginName');
      expectError(await call(h, '/add/U', { data: { loginName: 'a:b' } }), 400, -4, 'loginName');
      expectError(await call(h, '/add/U', { data: { loginName: 'p/q' } }), 400, -4, 'loginName');
      const empty = await call(h, '/add/U', { data: { loginName: '' } });
      expectError(empty, 400, -4, 'loginName');
      assert.equal(empty.body.response.errors.loginName.errorMessage, 'is required');
      expectError(await call(h, '/add/U', { data: { loginName: 'x1', email: 'nope' } }), 400, -4, 'email');
      // A number or boolean is checked as the text it would be stored as.
      for (const email of [true, 12345])
        expectError(await call(h, '/add/U', { data: { loginName: 'x1', email } }), 400, -4, 'email');
      expectError(
        await call(h, '/add/U', { data: { loginName: 'x1', activated: null } }),
        400,
        -4,
        'activated',
      );
      expectError(await call(h, '/add/U', { data: { loginName: 'x1', colour: 'red' } }), 400, -4, 'colour');
      expectError(await call(h, '/add/U', { data: { loginName: 'x1', roles: ['ADMIN'] } }), 400, -4, 'roles');
      expectError(await call(h, '/add/U', { data: { loginName: 'x1', groups: [] } }), 400, -4, 'groups');
      expectError(await call(h, '/add/U'), 400, -4);
      expectError(await call(h, '/add/U', { data: { loginName: ADMIN.toUpperCase() } }), 409, -1);
      const first = uniqueName('batch');
      const batch = await call(h, '/add/U', [
        { data: { loginName: first, password: 'Batch-password-1' } },
        { data: { loginName: ADMIN } },
      ]);
      expectError(batch, 409, -1);
      assert.equal(
        okData(await call(h, '/fetch/U', { data: { loginName: first } })).length,
        0,
        'rolled back',
      );
    });

    test('a user is addressed by his login name in any case, as he logs in and as it is unique', async () => {
      const login = uniqueName('casey');
      okData(await call(h, '/add/U', { data: { loginName: login, firstName: 'a' } }));
      const upper = login.toUpperCase();
      const [u] = okData(await call(h, '/update/U', { data: { loginName: upper, firstName: 'b' } }));
      assert.deepEqual([u.loginName, u.firstName], [login, 'b']);
      const [gone] = okData(await call(h, '/delete/U', { data: { loginName: upper } }));
      assert.equal(gone.loginName, login);
      assert.equal(okData(await call(h, '/fetch/U', { data: { loginName: login } })).length, 0);
    });

    test('refused without USER_EDIT or credentials; partitions stay apart', async () => {
      await refused(h, '/add/U', { data: { loginName: 'nope' } }, auditor);
      const login = uniqueName('iso');
      okData(await call(h, '/add/U', { data: { loginName: login } }));
      assert.equal(okData(await call(other, '/fetch/U', { data: { loginName: login } })).length, 0);
      // The same login name is free in the other partition.
      okData(await call(other, '/add/U', { data: { loginName: login } }));
    });
  });

  describe('/update/U', () => {
    test('changes fields, version-checked; returnolddata answers the previous record', async () => {
      const u = await newUser(h);
      const [v1] = okData(
        await call(h, '/update/U', { data: { typedId: `${u.id}.U`, lastName: 'Lovelace' } }),
      );
      assert.equal(v1.lastName, 'Lovelace');
      expectError(
        await call(h, '/update/U', {
          data: { typedId: `${u.id}.U`, lastName: 'X' },
          oldValues: { version: 0 },
        }),
        409,
        -1,
      );
      const [v2] = okData(
        await call(h, '/update/U/returnolddata', {
          data: { loginName: u.user, email: 'al@example.com' },
          oldValues: { version: v1.version },
        }),
      );
      assert.equal(v2.email, 'al@example.com');
      assert.equal(v2.oldValues.email, null);
    });

    test('roles, groups and passwords go through the account manager, not /update/U', async () => {
      const u = await newUser(h);
      const typedId = `${u.id}.U`;
      for (const field of ['roles', 'groups', 'businessRoles', 'userGroups']) {
        const r = await call(h, '/update/U', { data: { typedId, [field]: ['X'] } });
        expectError(r, 400, -4, field);
        assert.match(r.body.response.data, /accountmanager\.assign/);
      }
      const r = await call(h, '/update/U', { data: { typedId, password: 'Another-password-1' } });
      expectError(r, 400, -4, 'password');
      assert.match(r.body.response.data, /changepassword/);
      expectError(await call(h, '/update/U', { data: { typedId, activated: '' } }), 400, -4, 'activated');
      expectError(
        await call(h, '/update/U', { data: { typedId, loginName: 'renamed' } }),
        400,
        -4,
        'loginName',
      );
    });

    test('nobody deactivates himself; a USERADMIN cannot change an ADMIN', async () => {
      expectError(
        await call(h, '/update/U', { data: { typedId: `${adminId}.U`, activated: false } }),
        400,
        -4,
        'activated',
      );
      expectError(
        await call(h, '/update/U', { data: { typedId: `${adminId}.U`, activated: false } }, userAdmin),
        403,
        -3,
      );
      const u = await newUser(h);
      // In a batch, the element is named, and nothing of the batch is written.
      const pair = (self: object) => [
        { data: { typedId: `${u.id}.U`, firstName: 'batched' } },
        { data: self },
      ];
      expectError(
        await call(h, '/update/U', pair({ typedId: `${adminId}.U`, activated: false })),
        400,
        -4,
        '1.activated',
      );
      expectError(await call(h, '/delete/U', pair({ typedId: `${adminId}.U` })), 400, -4, '1.typedId');
      expectError(
        await call(h, '/update/U', [
          { data: { typedId: `${u.id}.U` } },
          { data: { typedId: `${u.id}.U`, password: 'x' } },
        ]),
        400,
        -4,
        '1.password',
      );
      const [still] = okData(await call(h, `/fetch/U/${u.id}`));
      assert.notEqual(still.firstName, 'batched');
      okData(await call(h, '/update/U', { data: { typedId: `${u.id}.U`, activated: false } }, userAdmin));
      expectError(await call(h, '/login/extended', undefined, u), 401, -5);
    });

    test('refused without USER_EDIT or credentials; another partition’s user is a 404', async () => {
      await refused(h, '/update/U', { data: { typedId: `${plain.id}.U`, firstName: 'x' } }, auditor);
      expectError(
        await call(other, '/update/U', { data: { typedId: `${plain.id}.U`, firstName: 'x' } }),
        404,
        -1,
      );
      expectError(await call(h, '/update/U', { data: { typedId: '999999999.U', firstName: 'x' } }), 404, -1);
    });
  });

  describe('/delete/U', () => {
    test('deletes another user; never oneself; batch forms refused', async () => {
      const u = await newUser(h, ['PRICESHOP_RO']);
      const [gone] = okData(await call(h, '/delete/U', { data: { typedId: `${u.id}.U` } }));
      assert.equal(gone.loginName, u.user);
      expectError(await call(h, `/fetch/U/${u.id}`), 404, -1);
      expectError(await call(h, '/login/extended', undefined, u), 401, -5);
      const self = await call(h, '/delete/U', { data: { typedId: `${adminId}.U` } });
      expectError(self, 400, -4, 'typedId');
      const selfByName = await call(h, '/delete/U', { data: { loginName: userAdmin.user } }, userAdmin);
      expectError(selfByName, 400, -4, 'typedId');
      for (const path of [
        '/delete/U/batch',
        '/delete/U/batch/forcefilter',
        '/integrate/U',
        '/resetcolumn/U/email',
      ]) {
        expectError(await call(h, path, { data: {} }), 400, -4, 'typeCode');
      }
    });

    test('a USERADMIN cannot delete an ADMIN; 403, 401, 404 and isolation', async () => {
      const second = await newUser(h, ['ADMIN']);
      expectError(await call(h, '/delete/U', { data: { typedId: `${second.id}.U` } }, userAdmin), 403, -3);
      // Named by login beside a null typedId or id (the engine then goes by the login): the same guards.
      for (const none of [{ typedId: null }, { id: null }]) {
        const byLogin = { ...none, loginName: second.user };
        expectError(await call(h, '/delete/U', { data: byLogin }, userAdmin), 403, -3);
        expectError(await call(h, '/update/U', { data: { ...byLogin, firstName: 'x' } }, userAdmin), 403, -3);
        const self = { ...none, loginName: userAdmin.user };
        expectError(await call(h, '/delete/U', { data: self }, userAdmin), 400, -4, 'typedId');
        expectError(
          await call(h, '/update/U', { data: { ...self, activated: false } }, userAdmin),
          400,
          -4,
          'activated',
        );
      }
      const [intact] = okData(await call(h, `/fetch/U/${second.id}`));
      assert.notEqual(intact.firstName, 'x');
      await refused(h, '/delete/U', { data: { typedId: `${second.id}.U` } }, auditor);
      expectError(await call(h, '/delete/U', { data: { typedId: '999999999.U' } }), 404, -1);
      expectError(await call(other, '/delete/U', { data: { typedId: `${second.id}.U` } }), 404, -1);
      okData(await call(h, `/fetch/U/${second.id}`));
    });
  });

  describe('accountmanager.fetchusers', () => {
    test('all fields with USER_FETCH, a reduced set without; never a hash', async () => {
      const full = okData(
        await call(h, '/accountmanager.fetchusers', { data: { loginName: plain.user } }, auditor),
      );
      assert.equal(full.length, 1);
      assert.ok('email' in full[0] && 'activated' in full[0]);
      const reduced = await call(h, '/accountmanager.fetchusers', { data: { loginName: ADMIN } }, plain);
      const [row] = okData(reduced);
      assert.deepEqual(Object.keys(row).sort(), ['firstName', 'id', 'lastName', 'loginName', 'typedId']);
      assert.equal(row.typedId, `${adminId}.U`);
      assert.ok(!reduced.text.includes('scrypt'));
      const page = await call(
        h,
        '/accountmanager.fetchusers',
        { startRow: 0, endRow: 2, sortBy: 'loginName' },
        plain,
      );
      assert.equal(okData(page).length, 2);
      assert.ok(page.body.response.totalRows >= 4);
      const arrays = okData(
        await call(h, '/accountmanager.fetchusers', { valueFields: ['loginName'] }, plain),
      );
      assert.ok(arrays.every((r: unknown) => Array.isArray(r) && r.length === 1));
    });

    test('hidden fields cannot be filtered on or asked for; bad bodies are -4', async () => {
      const filter = {
        _constructor: 'AdvancedCriteria',
        operator: 'and',
        criteria: [{ fieldName: 'email', operator: 'contains', value: '@' }],
      };
      expectError(await call(h, '/accountmanager.fetchusers', { data: filter }, plain), 400, -4, 'email');
      expectError(
        await call(h, '/accountmanager.fetchusers', { resultFields: ['email'] }, plain),
        400,
        -4,
        'resultFields',
      );
      okData(await call(h, '/accountmanager.fetchusers', { data: filter }, auditor));
      expectError(await call(h, '/accountmanager.fetchusers', { startRow: -1 }), 400, -4, 'startRow');
      expectError(await call(h, '/accountmanager.fetchusers', { bogus: 1 }), 400, -4, 'bogus');
      expectError(await call(h, '/accountmanager.fetchusers', {}, null), 401, -7);
    });

    test('lists only the users of its partition', async () => {
      const logins = okData(await call(other, '/accountmanager.fetchusers', {})).map((u: any) => u.loginName);
      assert.ok(logins.includes(ADMIN));
      for (const login of [plain.user, userAdmin.user, auditor.user])
        assert.ok(!logins.includes(login), login);
    });
  });

  describe('passwords', () => {
    test('changepassword/{userId}: an administrator sets it; older tokens die at once', async () => {
      const u = await newUser(h);
      const { token } = await h.login(u.user, u.password);
      okData(await withToken(h, token, '/fetch/P', {}));
      const [done] = okData(
        await call(
          h,
          `/accountmanager.changepassword/${u.id}`,
          { data: { newPassword: 'Brand-new-pass-1' } },
          userAdmin,
        ),
      );
      assert.deepEqual(done, { id: u.id, typedId: `${u.id}.U`, loginName: u.user, passwordChanged: true });
      // History keeps the fact (never the secret) with the record's new version.
      const [record] = okData(await call(h, `/fetch/U/${u.id}`));
      const [last] = okData(await call(h, `/fetch/U/${u.id}/history`, { sortBy: '-id', endRow: 1 }));
      assert.deepEqual(last.changes, { password: { old: null, new: '(changed)' } });
      assert.equal(last.version, record.version);
      assert.equal(typeof last.version, 'number');
      expectError(await withToken(h, token, '/fetch/P', {}), 401, -7);
      expectError(await call(h, '/login/extended', undefined, u), 401, -5);
      okData(await call(h, '/login/extended', undefined, { user: u.user, password: 'Brand-new-pass-1' }));
    });

    test('changepassword/{userId}: policy, unknown user, permission, ADMIN accounts, isolation', async () => {
      const u = await newUser(h);
      const path = `/accountmanager.changepassword/${u.id}`;
      expectError(await call(h, path, { data: { newPassword: 'short' } }), 400, -4, 'data.newPassword');
      expectError(
        await call(h, path, { data: { newPassword: `my-${u.user}-pw` } }),
        400,
        -4,
        'data.newPassword',
      );
      expectError(await call(h, path, { data: {} }), 400, -4, 'data.newPassword');
      expectError(
        await call(h, '/accountmanager.changepassword/abc', { data: { newPassword: 'Long-enough-1' } }),
        400,
        -4,
        'userId',
      );
      expectError(
        await call(h, '/accountmanager.changepassword/999999999', { data: { newPassword: 'Long-enough-1' } }),
        404,
        -1,
      );
      await refused(h, path, { data: { newPassword: 'Long-enough-1' } }, auditor);
      expectError(
        await call(
          h,
          `/accountmanager.changepassword/${adminId}`,
          { data: { newPassword: 'Take-over-123' } },
          userAdmin,
        ),
        403,
        -3,
      );
      expectError(await call(other, path, { data: { newPassword: 'Long-enough-1' } }), 404, -1);
      okData(await call(h, '/login/extended', undefined, u));
      // A user manager's own password is not set by this path (a token alone would take the account
      // over): -4 pointing to changepassword, which asks for the current one.
      const { token } = await h.login(userAdmin.user, userAdmin.password);
      const own = await withToken(h, token, `/accountmanager.changepassword/${userAdmin.id}`, {
        data: { newPassword: 'Take-over-456' },
      });
      expectError(own, 400, -4, 'userId');
      assert.match(own.body.response.data, /\/accountmanager\.changepassword/);
      okData(await call(h, '/login/extended', undefined, userAdmin));
    });

    test('changepassword (own): with a token the old password is needed; afterwards the token is dead', async () => {
      const u = await newUser(h);
      const { token } = await h.login(u.user, u.password);
      const path = '/accountmanager.changepassword';
      expectError(
        await withToken(h, token, path, { data: { newPassword: 'Mine-only-123' } }),
        400,
        -4,
        'data.oldPassword',
      );
      expectError(
        await withToken(h, token, path, {
          data: { oldPassword: 'not-it-at-all', newPassword: 'Mine-only-123' },
        }),
        400,
        -4,
        'data.oldPassword',
      );
      expectError(
        await withToken(h, token, path, { data: { oldPassword: u.password, newPassword: 'short' } }),
        400,
        -4,
        'data.newPassword',
      );
      const [done] = okData(
        await withToken(h, token, path, { data: { oldPassword: u.password, newPassword: 'Mine-only-123' } }),
      );
      assert.equal(done.passwordChanged, true);
      expectError(await withToken(h, token, '/fetch/P', {}), 401, -7);
      okData(await call(h, '/login/extended', undefined, { user: u.user, password: 'Mine-only-123' }));
    });

    test('changepassword (own) with Basic needs no old password; nothing without credentials', async () => {
      const u = await newUser(h);
      const own = await call(
        h,
        '/accountmanager.changepassword',
        { data: { newPassword: 'Basic-changed-1' } },
        u,
      );
      okData(own);
      // No session from the old password, which the change ended: no token, no csrfToken, the
      // session cookie cleared.
      assert.equal(own.headers.get('x-ratecard-jwt'), null);
      assert.equal(own.body.response.csrfToken, undefined);
      const cookies = own.headers.getSetCookie().filter((c) => c.startsWith('X-Ratecard-jwt='));
      assert.ok(
        cookies.every((c) => /^X-Ratecard-jwt=;/.test(c) && /Expires=Thu, 01 Jan 1970/i.test(c)),
        cookies.join(),
      );
      okData(await call(h, '/login/extended', undefined, { user: u.user, password: 'Basic-changed-1' }));
      expectError(
        await call(h, '/accountmanager.changepassword', { data: { newPassword: 'x-y-z-1234' } }, null),
        401,
        -7,
      );
      const changed = { user: u.user, password: 'Basic-changed-1' };
      expectError(
        await call(h, '/accountmanager.changepassword', { newPassword: 'x-y-z-1234' }, changed),
        400,
        -4,
      );
    });
  });

  describe('roles', () => {
    test('assignrole/{userId} adds and unassigns; the next request of the user sees it', async () => {
      const u = await newUser(h);
      const { token } = await h.login(u.user, u.password);
      expectError(await withToken(h, token, '/add/P', { data: { sku: uniqueName('P') } }), 403, -3);
      const [a] = okData(
        await call(h, `/accountmanager.assignrole/${u.id}`, {
          data: { roles: ['PRICESHOP_EDIT', 'PRICESHOP_RO'] },
        }),
      );
      assert.deepEqual(a, {
        id: u.id,
        typedId: `${u.id}.U`,
        loginName: u.user,
        roles: ['PRICESHOP_EDIT', 'PRICESHOP_RO'],
      });
      okData(await withToken(h, token, '/add/P', { data: { sku: uniqueName('P') } }));
      const [b] = okData(
        await call(
          h,
          `/accountmanager.assignrole/${u.id}.U`,
          { data: { unassign: ['PRICESHOP_EDIT'] } },
          roleManager,
        ),
      );
      assert.deepEqual(b.roles, ['PRICESHOP_RO']);
      expectError(await withToken(h, token, '/add/P', { data: { sku: uniqueName('P') } }), 403, -3);
    });

    test('assignrole for several users; bad input, 403, 401, 404, isolation', async () => {
      const u1 = await newUser(h);
      const u2 = await newUser(h);
      const rows = okData(
        await call(h, '/accountmanager.assignrole', {
          data: { userIds: [u1.id, `${u2.id}.U`], roles: ['SUPPORT'] },
        }),
      );
      assert.deepEqual(
        rows.map((r: any) => [r.id, r.roles]),
        [
          [u1.id, ['SUPPORT']],
          [u2.id, ['SUPPORT']],
        ],
      );
      const one = `/accountmanager.assignrole/${u1.id}`;
      const unknown = await call(h, one, { data: { roles: ['SUPPORT', 'NO_SUCH_ROLE'] } });
      expectError(unknown, 400, -4, 'data.roles.1');
      assert.match(unknown.body.response.data, /NO_SUCH_ROLE/);
      expectError(await call(h, one, { data: {} }), 400, -4, 'data.roles');
      expectError(
        await call(h, one, { data: { roles: ['SUPPORT'], unassign: ['SUPPORT'] } }),
        400,
        -4,
        'data.unassign',
      );
      expectError(await call(h, one, { data: { rolez: ['SUPPORT'] } }), 400, -4, 'data.rolez');
      expectError(
        await call(h, '/accountmanager.assignrole', { data: { roles: ['SUPPORT'] } }),
        400,
        -4,
        'data.userIds',
      );
      expectError(
        await call(h, '/accountmanager.assignrole', { data: { userIds: ['x'], roles: ['SUPPORT'] } }),
        400,
        -4,
        'data.userIds.0',
      );
      expectError(
        await call(h, '/accountmanager.assignrole/999999999', { data: { roles: ['SUPPORT'] } }),
        404,
        -1,
      );
      // A bad user id in the path is named as the path parameter, not as a list entry.
      for (const [path, kind] of [
        ['assignrole', 'roles'],
        ['assigngroup', 'groups'],
        ['assignbusinessrole', 'businessRoles'],
      ]) {
        const bad = await call(h, `/accountmanager.${path}/ua`, { data: { [kind!]: ['SUPPORT'] } });
        expectError(bad, 400, -4);
        assert.deepEqual(Object.keys(bad.body.response.errors), ['userId'], bad.text);
      }
      await refused(h, one, { data: { roles: ['SUPPORT'] } }, auditor);
      await refused(
        h,
        '/accountmanager.assignrole',
        { data: { userIds: [u1.id], roles: ['SUPPORT'] } },
        plain,
      );
      expectError(await call(other, one, { data: { roles: ['ADMIN'] } }), 404, -1);
      const [check] = okData(await call(h, `/accountmanager.fetchroles/${u1.id}`));
      assert.deepEqual(check.role, 'SUPPORT');
    });

    test('only an ADMIN grants or revokes ADMIN', async () => {
      expectError(
        await call(
          h,
          `/accountmanager.assignrole/${userAdmin.id}`,
          { data: { roles: ['ADMIN'] } },
          userAdmin,
        ),
        403,
        -3,
      );
      expectError(
        await call(h, `/accountmanager.assignrole/${adminId}`, { data: { unassign: ['ADMIN'] } }, userAdmin),
        403,
        -3,
      );
      okData(
        await call(
          h,
          `/accountmanager.assignrole/${plain.id}`,
          { data: { roles: ['CONTRACTS_RO'] } },
          roleManager,
        ),
      );
      okData(
        await call(
          h,
          `/accountmanager.assignrole/${plain.id}`,
          { data: { unassign: ['CONTRACTS_RO'] } },
          roleManager,
        ),
      );
    });

    test('user management below administration: a non-ADMIN grants any role but ADMIN, never to himself', async () => {
      const ua = await newUser(h, ['USERADMIN']);
      const target = await newUser(h);
      const assign = (id: number, roles: string[], who: Who = ua) =>
        call(h, `/accountmanager.assignrole/${id}`, { data: { roles } }, who);
      // Handing out roles is a user manager's job (USERADMIN counts among the administrators of
      // users), ADMIN excepted.
      okData(await assign(target.id, ['ADMIN_WO_USER_MGMT', 'PRICESHOP_RO']));
      okData(
        await call(
          h,
          `/accountmanager.assignrole/${target.id}`,
          { data: { unassign: ['PRICESHOP_RO'] } },
          ua,
        ),
      );
      expectError(await assign(target.id, ['ADMIN']), 403, -3);
      // He changes nothing of his own: roles, groups, business roles, a business role he holds.
      expectError(await assign(ua.id, ['ADMIN_WO_USER_MGMT']), 403, -3);
      expectError(await assign(ua.id, ['USERAUDIT']), 403, -3);
      const g = await newNamed(h, 'UG');
      expectError(
        await call(h, `/accountmanager.assigngroup/${ua.id}`, { data: { groups: [g.id] } }, ua),
        403,
        -3,
      );
      const strong = await newNamed(h, 'BR');
      okData(
        await call(h, `/accountmanager.assignrole/BR/${strong.id}`, {
          data: { roles: ['ADMIN_WO_USER_MGMT'] },
        }),
      );
      expectError(
        await call(
          h,
          `/accountmanager.assignbusinessrole/${ua.id}`,
          { data: { businessRoles: [strong.id] } },
          ua,
        ),
        403,
        -3,
      );
      okData(
        await call(
          h,
          `/accountmanager.assignbusinessrole/${target.id}`,
          { data: { businessRoles: [strong.id] } },
          ua,
        ),
      );
      const mine = await newNamed(h, 'BR');
      okData(
        await call(h, `/accountmanager.assignbusinessrole/${ua.id}`, { data: { businessRoles: [mine.id] } }),
      );
      expectError(
        await call(
          h,
          `/accountmanager.assignrole/BR/${mine.id}`,
          { data: { roles: ['ADMIN_WO_USER_MGMT'] } },
          ua,
        ),
        403,
        -3,
      );
      // Nor deletes it (that would unassign it from him); it stays assigned.
      // Named by its unique name beside a null typedId or id (the engine then goes by the name), the same.
      for (const data of [
        { typedId: mine.typedId },
        { typedId: null, uniqueName: mine.uniqueName },
        { id: null, uniqueName: mine.uniqueName },
      ]) {
        expectError(await call(h, '/accountmanager.deletebusinessrole', { data }, ua), 403, -3);
      }
      const [still] = okData(await call(h, '/fetch/BR', { data: { uniqueName: mine.uniqueName } }));
      assert.equal(still.id, mine.id);
      // Nor a group he is in, directly or through a business role he holds (the delete would
      // unassign it from him); another group he deletes.
      const direct = await newNamed(h, 'UG');
      const viaRole = await newNamed(h, 'UG');
      const other = await newNamed(h, 'UG');
      okData(await call(h, `/accountmanager.assigngroup/${ua.id}`, { data: { groups: [direct.id] } }));
      okData(await call(h, `/accountmanager.assigngroup/BR/${mine.id}`, { data: { groups: [viaRole.id] } }));
      for (const g of [direct, viaRole]) {
        for (const data of [{ typedId: g.typedId }, { id: null, uniqueName: g.uniqueName }]) {
          expectError(await call(h, '/accountmanager.deletegroup', { data }, ua), 403, -3);
        }
        assert.equal(okData(await call(h, '/fetch/UG', { data: { uniqueName: g.uniqueName } })).length, 1);
      }
      okData(await call(h, '/accountmanager.deletegroup', { data: { typedId: other.typedId } }, ua));
      // A business role bundling ADMIN is an ADMIN's to hand out.
      const admins = await newNamed(h, 'BR');
      okData(await call(h, `/accountmanager.assignrole/BR/${admins.id}`, { data: { roles: ['ADMIN'] } }));
      expectError(
        await call(
          h,
          `/accountmanager.assignbusinessrole/${target.id}`,
          { data: { businessRoles: [admins.id] } },
          ua,
        ),
        403,
        -3,
      );
      // Copies: not onto himself.
      const strongUser = await newUser(h, ['PRICESHOP_EDIT']);
      expectError(
        await call(
          h,
          '/accountmanager.copyroles',
          { data: { fromUserId: strongUser.id, toUserIds: [ua.id] } },
          ua,
        ),
        403,
        -3,
      );
      okData(
        await call(
          h,
          '/accountmanager.copyroles',
          { data: { fromUserId: strongUser.id, toUserIds: [target.id] } },
          ua,
        ),
      );
      // Nothing of his own changed.
      const [check] = okData(await call(h, '/accountmanager.audit/U/' + ua.id));
      assert.deepEqual(
        check.roles.map((r: any) => r.role),
        ['USERADMIN'],
      );
      assert.deepEqual(
        okData(await call(h, `/accountmanager.fetchroles/${target.id}`))
          .filter((r: any) => r.direct)
          .map((r: any) => r.role)
          .sort(),
        ['ADMIN_WO_USER_MGMT', 'PRICESHOP_EDIT'],
      );
    });

    test("a non-ADMIN user manager cannot revoke an ADMIN's api tokens", async () => {
      const api = okData(await call(h, '/accountmanager.getjsonwebtoken'))[0];
      expectError(
        await call(h, `/accountmanager.revokejsonwebtoken/${api.tokenId}`, undefined, userAdmin),
        403,
        -3,
      );
      okData(await withToken(h, api.token, '/fetch/P', {}));
      const u = await newUser(h);
      const theirs = okData(await call(h, '/accountmanager.getjsonwebtoken', undefined, u))[0];
      okData(await call(h, `/accountmanager.revokejsonwebtoken/${theirs.tokenId}`, undefined, userAdmin));
      expectError(await withToken(h, theirs.token, '/fetch/P', {}), 401, -7);
    });

    test('fetchroles/{userId} needs ROLE_FETCH and tells where each role comes from', async () => {
      const u = await newUser(h, ['PRICESHOP_RO']);
      const br = await newNamed(h, 'BR');
      okData(
        await call(h, `/accountmanager.assignrole/BR/${br.id}`, {
          data: { roles: ['PRICESHOP_RO', 'WF_ADMIN'] },
        }),
      );
      okData(
        await call(h, `/accountmanager.assignbusinessrole/${u.id}`, {
          data: { businessRoles: [br.uniqueName] },
        }),
      );
      const roles = okData(await call(h, `/accountmanager.fetchroles/${u.id}`, undefined, auditor));
      assert.deepEqual(
        roles.map((r: any) => [r.role, r.direct, r.businessRoles]),
        [
          ['PRICESHOP_RO', true, [br.uniqueName]],
          ['WF_ADMIN', false, [br.uniqueName]],
        ],
      );
      assert.deepEqual(roles[1].permissions, ['WORKFLOW_FETCH', 'WORKFLOW_EDIT', 'WORKFLOW_ADMIN']);
      // The fetch body clients send (paging, operationType, an empty data) pages the list, which
      // answers startRow, endRow and totalRows; a filter is refused rather than ignored.
      const paged = await call(
        h,
        `/accountmanager.fetchroles/${u.id}`,
        { operationType: 'fetch', startRow: 1, endRow: 100, data: {}, textMatchStyle: 'exact' },
        auditor,
      );
      assert.deepEqual(
        okData(paged).map((r: any) => r.role),
        ['WF_ADMIN'],
      );
      const { startRow, endRow, totalRows } = paged.body.response;
      assert.deepEqual([startRow, endRow, totalRows], [1, 2, 2]);
      const all = (await call(h, `/accountmanager.fetchroles/${u.id}`, {}, auditor)).body.response;
      assert.deepEqual([all.startRow, all.endRow, all.totalRows], [0, 2, 2]);
      expectError(
        await call(h, `/accountmanager.fetchroles/${u.id}`, { data: { role: 'WF_ADMIN' } }, auditor),
        400,
        -4,
        'data',
      );
      for (const path of [
        `/accountmanager.fetchgroups/${u.id}`,
        `/accountmanager.fetchbusinessroles/${u.id}`,
        `/accountmanager.fetchroles/BR/${br.id}`,
        `/accountmanager.fetchgroups/BR/${br.id}`,
      ]) {
        const r = await call(h, path, { operationType: 'fetch', startRow: 0, endRow: 50 });
        assert.equal(r.body.response.totalRows, okData(r).length, path);
      }
      await refused(h, `/accountmanager.fetchroles/${u.id}`, undefined, plain);
      expectError(await call(h, `/accountmanager.fetchroles/${u.id}`, undefined, u), 403, -3);
      expectError(await call(h, '/accountmanager.fetchroles/nope'), 400, -4, 'userId');
      expectError(await call(h, '/accountmanager.fetchroles/999999999'), 404, -1);
      expectError(await call(other, `/accountmanager.fetchroles/${u.id}`), 404, -1);
    });

    test('copyroles adds the roles of one user to others', async () => {
      const from = await newUser(h, ['PB_PARAMETERS', 'WF_BUILDER']);
      const to1 = await newUser(h, ['SUPPORT']);
      const to2 = await newUser(h);
      const rows = okData(
        await call(h, '/accountmanager.copyroles', {
          data: { fromUserId: from.id, toUserIds: [to1.id, `${to2.id}.U`] },
        }),
      );
      assert.deepEqual(
        rows.map((r: any) => r.roles),
        [
          ['PB_PARAMETERS', 'SUPPORT', 'WF_BUILDER'],
          ['PB_PARAMETERS', 'WF_BUILDER'],
        ],
      );
      expectError(
        await call(h, '/accountmanager.copyroles', { data: { fromUserId: 'x', toUserIds: [to1.id] } }),
        400,
        -4,
        'data.fromUserId',
      );
      expectError(
        await call(h, '/accountmanager.copyroles', { data: { fromUserId: from.id, toUserIds: [] } }),
        400,
        -4,
        'data.toUserIds',
      );
      expectError(
        await call(h, '/accountmanager.copyroles', { data: { fromUserId: from.id } }),
        400,
        -4,
        'data.toUserIds',
      );
      expectError(
        await call(h, '/accountmanager.copyroles', { data: { fromUserId: 999999999, toUserIds: [to1.id] } }),
        404,
        -1,
      );
      await refused(
        h,
        '/accountmanager.copyroles',
        { data: { fromUserId: from.id, toUserIds: [to2.id] } },
        auditor,
      );
      expectError(
        await call(
          h,
          '/accountmanager.copyroles',
          { data: { fromUserId: adminId, toUserIds: [to2.id] } },
          userAdmin,
        ),
        403,
        -3,
      );
      expectError(
        await call(other, '/accountmanager.copyroles', {
          data: { fromUserId: from.id, toUserIds: [to2.id] },
        }),
        404,
        -1,
      );
    });
  });

  describe('user groups', () => {
    test('assigngroup/{userId} by name, id or typedId; record visibility follows on the next request', async () => {
      const u = await newUser(h);
      const g = await newNamed(h, 'UG');
      const g2 = await newNamed(h, 'UG');
      const sku = uniqueName('SECRET');
      okData(await call(h, '/add/P', { data: { sku, userGroupViewDetails: g.uniqueName } }));
      const { token } = await h.login(u.user, u.password);
      assert.equal(okData(await withToken(h, token, '/fetch/P', { data: { sku } })).length, 0);
      const [a] = okData(
        await call(h, `/accountmanager.assigngroup/${u.id}`, {
          data: { groups: [g.uniqueName, g2.id, `${g2.id}.UG`] },
        }),
      );
      assert.deepEqual(a.groups, [g.uniqueName, g2.uniqueName].sort());
      assert.equal(okData(await withToken(h, token, '/fetch/P', { data: { sku } })).length, 1);
      const [b] = okData(
        await call(h, `/accountmanager.assigngroup/${u.id}`, { data: { unassign: [g.typedId] } }),
      );
      assert.deepEqual(b.groups, [g2.uniqueName]);
      assert.equal(okData(await withToken(h, token, '/fetch/P', { data: { sku } })).length, 0);
    });

    test('assigngroup for several users; unknown groups 404, wrong typedIds -4; 403, 401, isolation', async () => {
      const u1 = await newUser(h);
      const u2 = await newUser(h);
      const g = await newNamed(h, 'UG');
      const rows = okData(
        await call(
          h,
          '/accountmanager.assigngroup',
          { data: { userIds: [u1.id, u2.id], groups: [g.uniqueName] } },
          userAdmin,
        ),
      );
      assert.deepEqual(
        rows.map((r: any) => r.groups),
        [[g.uniqueName], [g.uniqueName]],
      );
      const one = `/accountmanager.assigngroup/${u1.id}`;
      expectError(await call(h, one, { data: { groups: ['no-such-group'] } }), 404, -1);
      expectError(await call(h, one, { data: { groups: [999999999] } }), 404, -1);
      expectError(await call(h, one, { data: { groups: [`${g.id}.BR`] } }), 400, -4, 'data.groups.0');
      expectError(await call(h, one, { data: { groups: [''] } }), 400, -4, 'data.groups.0');
      expectError(await call(h, one, { data: { groups: [{}] } }), 400, -4);
      await refused(h, one, { data: { groups: [g.uniqueName] } }, auditor);
      await refused(
        h,
        '/accountmanager.assigngroup',
        { data: { userIds: [u1.id], groups: [g.uniqueName] } },
        auditor,
      );
      // The group of one partition is unknown in the other, even for a user there.
      const otherUser = await newUser(other);
      expectError(
        await call(other, `/accountmanager.assigngroup/${otherUser.id}`, { data: { groups: [g.id] } }),
        404,
        -1,
      );
      expectError(
        await call(other, `/accountmanager.assigngroup/${otherUser.id}`, {
          data: { groups: [g.uniqueName] },
        }),
        404,
        -1,
      );
    });

    test('fetchgroups/{userId}: one’s own freely, another’s with USER_FETCH; direct and through business roles', async () => {
      const u = await newUser(h);
      const direct = await newNamed(h, 'UG');
      const viaRole = await newNamed(h, 'UG');
      const br = await newNamed(h, 'BR');
      okData(
        await call(h, `/accountmanager.assigngroup/BR/${br.id}`, {
          data: { groups: [direct.uniqueName, viaRole.uniqueName] },
        }),
      );
      okData(await call(h, `/accountmanager.assigngroup/${u.id}`, { data: { groups: [direct.uniqueName] } }));
      okData(
        await call(h, `/accountmanager.assignbusinessrole/${u.id}`, {
          data: { businessRoles: [br.typedId] },
        }),
      );
      const mine = okData(await call(h, `/accountmanager.fetchgroups/${u.id}`, undefined, u));
      const byName = new Map(mine.map((g: any) => [g.uniqueName, g]));
      assert.equal(mine.length, 2);
      assert.deepEqual(
        [byName.get(direct.uniqueName).direct, byName.get(direct.uniqueName).businessRoles],
        [true, [br.uniqueName]],
      );
      assert.deepEqual(
        [byName.get(viaRole.uniqueName).direct, byName.get(viaRole.uniqueName).businessRoles],
        [false, [br.uniqueName]],
      );
      assert.equal(
        okData(await call(h, `/accountmanager.fetchgroups/${u.id}`, undefined, auditor)).length,
        2,
      );
      await refused(h, `/accountmanager.fetchgroups/${u.id}`, undefined, plain);
      expectError(await call(h, '/accountmanager.fetchgroups/1.P'), 400, -4, 'userId');
      expectError(await call(h, '/accountmanager.fetchgroups/999999999'), 404, -1);
      expectError(await call(other, `/accountmanager.fetchgroups/${u.id}`), 404, -1);
    });

    test('deletegroup removes memberships in the same transaction; /delete/UG is refused', async () => {
      const u = await newUser(h);
      const g = await newNamed(h, 'UG');
      const br = await newNamed(h, 'BR');
      okData(await call(h, `/accountmanager.assigngroup/${u.id}`, { data: { groups: [g.uniqueName] } }));
      okData(await call(h, `/accountmanager.assigngroup/BR/${br.id}`, { data: { groups: [g.uniqueName] } }));
      const refusedDelete = await call(h, '/delete/UG', { data: { typedId: g.typedId } });
      expectError(refusedDelete, 400, -4, 'typeCode');
      assert.match(refusedDelete.body.response.data, /accountmanager\.deletegroup/);
      expectError(await call(h, '/delete/UG/batch/forcefilter', {}), 400, -4, 'typeCode');
      await refused(h, '/accountmanager.deletegroup', { data: { typedId: g.typedId } }, auditor);
      expectError(
        await call(other, '/accountmanager.deletegroup', { data: { typedId: g.typedId } }),
        404,
        -1,
      );
      const [gone] = okData(await call(h, '/accountmanager.deletegroup', { data: { typedId: g.typedId } }));
      assert.deepEqual(
        [gone.uniqueName, gone.removedMemberships, gone.removedFromBusinessRoles],
        [g.uniqueName, 1, 1],
      );
      assert.equal(okData(await call(h, `/accountmanager.fetchgroups/${u.id}`)).length, 0);
      assert.equal(okData(await call(h, `/accountmanager.fetchgroups/BR/${br.id}`)).length, 0);
      // The user and the business role that lost it have a new version and its history.
      for (const path of [`/fetch/U/${u.id}`, `/fetch/BR/${br.id}`]) {
        const [now] = okData(await call(h, path));
        const [last] = okData(await call(h, `${path}/history`, { sortBy: '-id', endRow: 1 }));
        assert.deepEqual(
          [last.action, last.version, last.changes],
          ['UPDATE', now.version, { groups: { old: [g.uniqueName], new: [] } }],
        );
      }
      expectError(await call(h, `/fetch/UG/${g.id}`), 404, -1);
      const left = await h.db.query(
        'SELECT 1 FROM user_group_members WHERE partition_id = $1 AND group_id = $2',
        [h.partitionId, g.id],
      );
      assert.equal(left.rows.length, 0);
      expectError(await call(h, '/accountmanager.deletegroup', { data: { typedId: g.typedId } }), 404, -1);
      expectError(
        await call(h, '/accountmanager.deletegroup', { data: { typedId: 'x.UG' } }),
        400,
        -4,
        'typedId',
      );
      // By name, too.
      const g2 = await newNamed(h, 'UG');
      okData(
        await call(h, '/accountmanager.deletegroup', { data: { uniqueName: g2.uniqueName } }, userAdmin),
      );
    });

    test('/loaddata/UG creates groups (UG is a bulk-load code)', async () => {
      const name = uniqueName('loaded');
      const r = await call(h, '/loaddata/UG', {
        data: { header: ['uniqueName', 'label'], data: [[name, 'Loaded']] },
      });
      assert.equal(r.status, 200, r.text);
      assert.equal(okData(await call(h, '/fetch/UG', { data: { uniqueName: name } }))[0].label, 'Loaded');
    });
  });

  describe('business roles', () => {
    test('a user with no role gets PRICESHOP_EDIT through a business role, on his next request', async () => {
      const u = await newUser(h);
      const { token } = await h.login(u.user, u.password);
      const br = await newNamed(h, 'BR');
      okData(
        await call(h, `/accountmanager.assignbusinessrole/${u.id}`, {
          data: { businessRoles: [br.uniqueName] },
        }),
      );
      expectError(await withToken(h, token, '/add/P', { data: { sku: uniqueName('P') } }), 403, -3);
      const [withRole] = okData(
        await call(h, `/accountmanager.assignrole/BR/${br.id}`, { data: { roles: ['PRICESHOP_EDIT'] } }),
      );
      assert.deepEqual(withRole.roles, ['PRICESHOP_EDIT']);
      okData(await withToken(h, token, '/add/P', { data: { sku: uniqueName('P') } }));
      const [login] = okData(await withToken(h, token, '/login/extended'));
      assert.ok(login.extendedData.permissions.includes('PRODUCT_EDIT'));
      // Unassigning the business role takes the permission away again.
      const [u2] = okData(
        await call(h, `/accountmanager.assignbusinessrole/${u.id}`, { data: { unassign: [br.uniqueName] } }),
      );
      assert.deepEqual(u2.businessRoles, []);
      expectError(await withToken(h, token, '/add/P', { data: { sku: uniqueName('P') } }), 403, -3);
    });

    test('assignbusinessrole for several users; fetchbusinessroles; bad input, 403, 401, isolation', async () => {
      const u1 = await newUser(h);
      const u2 = await newUser(h);
      const br = await newNamed(h, 'BR');
      const rows = okData(
        await call(h, '/accountmanager.assignbusinessrole', {
          data: { userIds: [u1.id, u2.id], businessRoles: [br.id] },
        }),
      );
      assert.deepEqual(
        rows.map((r: any) => r.businessRoles),
        [[br.uniqueName], [br.uniqueName]],
      );
      const [fetched] = okData(await call(h, `/accountmanager.fetchbusinessroles/${u1.id}`, undefined, u1));
      assert.deepEqual([fetched.typedId, fetched.uniqueName], [br.typedId, br.uniqueName]);
      okData(await call(h, `/accountmanager.fetchbusinessroles/${u1.id}`, undefined, auditor));
      await refused(h, `/accountmanager.fetchbusinessroles/${u1.id}`, undefined, plain);
      const one = `/accountmanager.assignbusinessrole/${u1.id}`;
      expectError(await call(h, one, { data: { businessRoles: ['nope-br'] } }), 404, -1);
      expectError(
        await call(h, one, { data: { businessRoles: [`${br.id}.UG`] } }),
        400,
        -4,
        'data.businessRoles.0',
      );
      expectError(
        await call(h, one, { data: { businessRoles: [br.id], unassign: [br.uniqueName] } }),
        400,
        -4,
        'data.unassign',
      );
      await refused(h, one, { data: { businessRoles: [br.id] } }, auditor);
      await refused(
        h,
        '/accountmanager.assignbusinessrole',
        { data: { userIds: [u1.id], businessRoles: [br.id] } },
        auditor,
      );
      expectError(await call(other, one, { data: { businessRoles: [br.id] } }), 404, -1);
      expectError(await call(other, `/accountmanager.fetchbusinessroles/${u1.id}`), 404, -1);
    });

    test('roles and groups of a business role: assign, fetch, refuse', async () => {
      const br = await newNamed(h, 'BR');
      const g = await newNamed(h, 'UG');
      okData(
        await call(
          h,
          `/accountmanager.assignrole/BR/${br.typedId}`,
          { data: { roles: ['RM_RAT', 'SC_ADMIN'] } },
          roleManager,
        ),
      );
      okData(
        await call(h, `/accountmanager.assigngroup/BR/${br.id}`, { data: { groups: [g.id] } }, roleManager),
      );
      const roles = okData(await call(h, `/accountmanager.fetchroles/BR/${br.id}`, undefined, auditor));
      assert.deepEqual(
        roles.map((r: any) => r.role),
        ['RM_RAT', 'SC_ADMIN'],
      );
      const groups = okData(await call(h, `/accountmanager.fetchgroups/BR/${br.id}`, undefined, auditor));
      assert.deepEqual(
        groups.map((x: any) => x.uniqueName),
        [g.uniqueName],
      );
      const [after] = okData(
        await call(h, `/accountmanager.assignrole/BR/${br.id}`, { data: { unassign: ['RM_RAT'] } }),
      );
      assert.deepEqual(after.roles, ['SC_ADMIN']);
      expectError(
        await call(h, `/accountmanager.assignrole/BR/${br.id}`, { data: { roles: ['BOGUS'] } }),
        400,
        -4,
        'data.roles.0',
      );
      expectError(
        await call(h, `/accountmanager.assigngroup/BR/${br.id}`, { data: { groups: ['no-such-group'] } }),
        404,
        -1,
      );
      expectError(
        await call(h, '/accountmanager.assignrole/BR/3.UG', { data: { roles: ['SC_ADMIN'] } }),
        400,
        -4,
        'businessroleId',
      );
      // By unique name, as in body lists; an unknown name is a 404.
      const [byName] = okData(
        await call(h, `/accountmanager.assignrole/BR/${encodeURIComponent(br.uniqueName)}`, {
          data: { roles: ['RM_RAT'] },
        }),
      );
      assert.deepEqual([byName.id, byName.roles], [br.id, ['RM_RAT', 'SC_ADMIN']]);
      const [groupsByName] = okData(
        await call(h, `/accountmanager.assigngroup/BR/${encodeURIComponent(br.uniqueName)}`, {
          data: { unassign: [g.id] },
        }),
      );
      assert.deepEqual(groupsByName.groups, []);
      okData(await call(h, `/accountmanager.assignrole/BR/${br.id}`, { data: { unassign: ['RM_RAT'] } }));
      expectError(
        await call(h, '/accountmanager.assignrole/BR/no-such-business-role', {
          data: { roles: ['SC_ADMIN'] },
        }),
        404,
        -1,
      );
      expectError(
        await call(h, '/accountmanager.assignrole/BR/999999999', { data: { roles: ['SC_ADMIN'] } }),
        404,
        -1,
      );
      expectError(
        await call(h, `/accountmanager.assignrole/BR/${br.id}`, { data: { roles: ['ADMIN'] } }, userAdmin),
        403,
        -3,
      );
      await refused(h, `/accountmanager.assignrole/BR/${br.id}`, { data: { roles: ['SC_ADMIN'] } }, auditor);
      await refused(h, `/accountmanager.assigngroup/BR/${br.id}`, { data: { groups: [g.id] } }, auditor);
      await refused(h, `/accountmanager.fetchroles/BR/${br.id}`, undefined, plain);
      await refused(h, `/accountmanager.fetchgroups/BR/${br.id}`, undefined, plain);
      for (const path of ['fetchroles', 'fetchgroups']) {
        expectError(await call(other, `/accountmanager.${path}/BR/${br.id}`), 404, -1);
      }
      expectError(
        await call(other, `/accountmanager.assignrole/BR/${br.id}`, { data: { roles: ['SC_ADMIN'] } }),
        404,
        -1,
      );
    });

    test('a business role bundling ADMIN is granted, revoked and deleted by ADMINs only', async () => {
      const br = await newNamed(h, 'BR');
      okData(await call(h, `/accountmanager.assignrole/BR/${br.id}`, { data: { roles: ['ADMIN'] } }));
      const u = await newUser(h);
      expectError(
        await call(
          h,
          `/accountmanager.assignbusinessrole/${u.id}`,
          { data: { businessRoles: [br.id] } },
          userAdmin,
        ),
        403,
        -3,
      );
      expectError(
        await call(h, '/accountmanager.deletebusinessrole', { data: { typedId: br.typedId } }, userAdmin),
        403,
        -3,
      );
      okData(
        await call(h, `/accountmanager.assignbusinessrole/${u.id}`, { data: { businessRoles: [br.id] } }),
      );
      // Now an administrator through the business role: protected like any ADMIN.
      expectError(
        await call(
          h,
          `/accountmanager.changepassword/${u.id}`,
          { data: { newPassword: 'Take-over-123' } },
          userAdmin,
        ),
        403,
        -3,
      );
      const [login] = okData(await call(h, '/login/extended', undefined, u));
      assert.ok(login.roles.includes('ADMIN'));
    });

    test('concurrent assignments to one business role all land (queued, not deadlocked)', async () => {
      const br = await newNamed(h, 'BR');
      const roles = [
        'PRICESHOP_RO',
        'PRICESHOP_EDIT',
        'SUPPORT',
        'PB_CONDITIONRECORDEDITOR',
        'DATAINTEGRATION',
      ];
      const groups = await Promise.all([1, 2, 3].map(() => newNamed(h, 'UG')));
      const answers = await Promise.all([
        ...roles.map((r) => call(h, `/accountmanager.assignrole/BR/${br.id}`, { data: { roles: [r] } })),
        ...groups.map((g) =>
          call(h, `/accountmanager.assigngroup/BR/${br.id}`, { data: { groups: [g.id] } }),
        ),
      ]);
      for (const a of answers) okData(a);
      const [after] = okData(await call(h, '/fetch/BR', { data: { uniqueName: br.uniqueName } }));
      assert.equal(after.version, br.version + roles.length + groups.length);
      const [{ roles: held }] = okData(
        await call(h, `/accountmanager.assignrole/BR/${br.id}`, { data: { roles: [roles[0]] } }),
      );
      assert.deepEqual([...held].sort(), [...roles].sort());
    });

    test('deletebusinessrole unassigns it and drops its content; /delete/BR is refused', async () => {
      const u = await newUser(h);
      const br = await newNamed(h, 'BR');
      const g = await newNamed(h, 'UG');
      okData(
        await call(h, `/accountmanager.assignrole/BR/${br.id}`, { data: { roles: ['PRICESHOP_EDIT'] } }),
      );
      okData(await call(h, `/accountmanager.assigngroup/BR/${br.id}`, { data: { groups: [g.id] } }));
      okData(
        await call(h, `/accountmanager.assignbusinessrole/${u.id}`, { data: { businessRoles: [br.id] } }),
      );
      const refusedDelete = await call(h, '/delete/BR', { data: { typedId: br.typedId } });
      expectError(refusedDelete, 400, -4, 'typeCode');
      assert.match(refusedDelete.body.response.data, /accountmanager\.deletebusinessrole/);
      expectError(await call(h, '/delete/BR/batch', {}), 400, -4, 'typeCode');
      await refused(h, '/accountmanager.deletebusinessrole', { data: { typedId: br.typedId } }, auditor);
      expectError(
        await call(other, '/accountmanager.deletebusinessrole', { data: { typedId: br.typedId } }),
        404,
        -1,
      );
      const [gone] = okData(
        await call(h, '/accountmanager.deletebusinessrole', { data: { typedId: br.typedId } }),
      );
      assert.deepEqual([gone.unassignedUsers, gone.removedRoles, gone.removedGroups], [1, 1, 1]);
      const [last] = okData(await call(h, `/fetch/U/${u.id}/history`, { sortBy: '-id', endRow: 1 }));
      assert.deepEqual(last.changes, { businessRoles: { old: [br.uniqueName], new: [] } });
      assert.equal(last.version, okData(await call(h, `/fetch/U/${u.id}`))[0].version);
      expectError(await call(h, '/add/P', { data: { sku: uniqueName('P') } }, u), 403, -3);
      assert.equal(okData(await call(h, `/accountmanager.fetchbusinessroles/${u.id}`)).length, 0);
      okData(await call(h, `/fetch/UG/${g.id}`));
      expectError(
        await call(h, '/accountmanager.deletebusinessrole', { data: { typedId: br.typedId } }),
        404,
        -1,
      );
      expectError(await call(h, '/accountmanager.deletebusinessrole', { data: {} }), 400, -4, 'typedId');
    });
  });

  describe('accountmanager.copyuser', () => {
    test('copies roles, groups and business roles; never names, e-mail or password', async () => {
      const source = await newUser(h, ['PRICESHOP_RO', 'WF_BUILDER']);
      okData(
        await call(h, '/update/U', {
          data: { typedId: `${source.id}.U`, firstName: 'Grace', lastName: 'Hopper', email: 'g@example.com' },
        }),
      );
      const g = await newNamed(h, 'UG');
      const br = await newNamed(h, 'BR');
      okData(await call(h, `/accountmanager.assigngroup/${source.id}`, { data: { groups: [g.id] } }));
      okData(
        await call(h, `/accountmanager.assignbusinessrole/${source.id}`, {
          data: { businessRoles: [br.id] },
        }),
      );
      const login = uniqueName('copy');
      const r = await call(
        h,
        `/accountmanager.copyuser/${source.id}`,
        { data: { loginName: login } },
        roleManager,
      );
      const [copy] = okData(r);
      assert.equal(copy.loginName, login);
      assert.notEqual(copy.id, source.id);
      assert.deepEqual([copy.firstName, copy.lastName, copy.email], [null, null, null]);
      assert.deepEqual(copy.roles, ['PRICESHOP_RO', 'WF_BUILDER']);
      assert.deepEqual(copy.groups, [g.uniqueName]);
      assert.deepEqual(copy.businessRoles, [br.uniqueName]);
      assert.equal(copy.copiedFrom, `${source.id}.U`);
      assert.ok(!r.text.includes('scrypt'));
      // Record history: the ADD, then the copied assignments as the change that brought them.
      const history = okData(await call(h, `/fetch/U/${copy.id}/history`, { sortBy: 'id' }));
      assert.deepEqual(
        history.map((e: any) => e.action),
        ['ADD', 'UPDATE'],
      );
      assert.deepEqual(history[1].changes, {
        roles: { old: [], new: ['PRICESHOP_RO', 'WF_BUILDER'] },
        groups: { old: [], new: [g.uniqueName] },
        businessRoles: { old: [], new: [br.uniqueName] },
      });
      assert.equal(history[1].version, copy.version);
      expectError(
        await call(h, '/login/extended', undefined, { user: login, password: source.password }),
        401,
        -5,
      );
      const hash = await h.db.query<{ h: string | null }>(
        'SELECT password_hash AS h FROM users WHERE partition_id = $1 AND id = $2',
        [h.partitionId, copy.id],
      );
      assert.equal(hash.rows[0]!.h, null);
    });

    test('the body may give the copy its own name and password; bad input, 403, 401, 404, isolation', async () => {
      const source = await newUser(h, ['SUPPORT']);
      const login = uniqueName('copy');
      const [copy] = okData(
        await call(h, `/accountmanager.copyuser/${source.id}.U`, {
          data: { loginName: login, firstName: 'New', password: 'Own-password-12' },
        }),
      );
      assert.equal(copy.firstName, 'New');
      okData(await call(h, '/login/extended', undefined, { user: login, password: 'Own-password-12' }));
      const path = `/accountmanager.copyuser/${source.id}`;
      expectError(await call(h, path, { data: {} }), 400, -4, 'data.loginName');
      expectError(
        await call(h, path, {
          data: { loginName: uniqueName('c'), email: 'x@y.z', lastName: 'L', roles: [] },
        }),
        400,
        -4,
        'data.roles',
      );
      expectError(await call(h, path, { data: { loginName: login } }), 409, -1);
      expectError(
        await call(h, path, { data: { loginName: 'Weakling', password: 'weakling-1' } }),
        400,
        -4,
        'password',
      );
      expectError(await call(h, path, { data: { loginName: 'bad name' } }), 400, -4, 'loginName');
      expectError(
        await call(h, '/accountmanager.copyuser/999999999', { data: { loginName: uniqueName('c') } }),
        404,
        -1,
      );
      await refused(h, path, { data: { loginName: uniqueName('c') } }, auditor);
      expectError(
        await call(
          h,
          `/accountmanager.copyuser/${adminId}`,
          { data: { loginName: uniqueName('c') } },
          userAdmin,
        ),
        403,
        -3,
      );
      expectError(await call(other, path, { data: { loginName: uniqueName('c') } }), 404, -1);
    });
  });

  describe('accountmanager.audit', () => {
    test('a user: every effective role, group and permission with where it comes from', async () => {
      const u = await newUser(h, ['PRICESHOP_RO']);
      const br = await newNamed(h, 'BR');
      const g = await newNamed(h, 'UG');
      okData(
        await call(h, `/accountmanager.assignrole/BR/${br.id}`, { data: { roles: ['PRICESHOP_EDIT'] } }),
      );
      okData(await call(h, `/accountmanager.assigngroup/BR/${br.id}`, { data: { groups: [g.id] } }));
      okData(
        await call(h, `/accountmanager.assignbusinessrole/${u.id}`, { data: { businessRoles: [br.id] } }),
      );
      const r = await call(h, `/accountmanager.audit/U/${u.id}`, undefined, auditor);
      const [report] = okData(r);
      assert.equal(report.user.loginName, u.user);
      assert.deepEqual(
        report.roles.map((x: any) => [x.role, x.direct, x.businessRoles]),
        [
          ['PRICESHOP_EDIT', false, [br.uniqueName]],
          ['PRICESHOP_RO', true, []],
        ],
      );
      assert.deepEqual(
        report.groups.map((x: any) => [x.uniqueName, x.direct, x.businessRoles]),
        [[g.uniqueName, false, [br.uniqueName]]],
      );
      assert.deepEqual(
        report.businessRoles.map((b: any) => [b.uniqueName, b.roles, b.groups]),
        [[br.uniqueName, ['PRICESHOP_EDIT'], [g.uniqueName]]],
      );
      const perms = new Map(report.permissions.map((p: any) => [p.permission, p.roles]));
      assert.deepEqual(perms.get('PRODUCT_EDIT'), ['PRICESHOP_EDIT']);
      assert.deepEqual(perms.get('SELLER_FETCH'), ['PRICESHOP_EDIT', 'PRICESHOP_RO']);
      assert.ok(!r.text.includes('scrypt'));
    });

    test('a business role: its roles, groups, users and permissions', async () => {
      const u = await newUser(h);
      const br = await newNamed(h, 'BR');
      okData(
        await call(h, `/accountmanager.assignrole/BR/${br.id}`, { data: { roles: ['DATAINTEGRATION'] } }),
      );
      okData(
        await call(h, `/accountmanager.assignbusinessrole/${u.id}`, { data: { businessRoles: [br.id] } }),
      );
      const [report] = okData(await call(h, `/accountmanager.audit/BR/${br.typedId}`));
      assert.equal(report.businessRole.uniqueName, br.uniqueName);
      assert.deepEqual(
        report.roles.map((x: any) => x.role),
        ['DATAINTEGRATION'],
      );
      assert.deepEqual(
        report.users.map((x: any) => x.loginName),
        [u.user],
      );
      assert.ok(report.permissions.some((p: any) => p.permission === 'LOOKUPTABLEVALUES_INTEGRATE'));
    });

    test('other types, unknown ids, permissions, isolation', async () => {
      expectError(await call(h, `/accountmanager.audit/P/1`), 400, -4, 'typeCode');
      expectError(await call(h, `/accountmanager.audit/NOPE/1`), 404, -1);
      expectError(await call(h, `/accountmanager.audit/U/999999999`), 404, -1);
      expectError(await call(h, `/accountmanager.audit/U/x`), 400, -4, 'id');
      await refused(h, `/accountmanager.audit/U/${plain.id}`, undefined, plain);
      expectError(await call(other, `/accountmanager.audit/U/${plain.id}`), 404, -1);
    });
  });

  describe('advanced configuration options (ACO)', () => {
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({
      type: 'spki',
      format: 'pem',
    }) as string;
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({
      type: 'spki',
      format: 'pem',
    }) as string;
    const jwtConfig = (entries: object) => JSON.stringify({ entries });

    test('admins add, fetch, update and delete options; externalJWTConfiguration is checked on write', async () => {
      const good = jwtConfig({
        ERP: { publicKey: rsa, permissions: ['USER_FETCH'] },
        Other1: { publicKey: rsa, permissions: null },
      });
      const [opt] = okData(
        await call(h, '/add/ACO', { data: { uniqueName: 'externalJWTConfiguration', value: good } }),
      );
      assert.equal(opt.typedId, `${opt.id}.ACO`);
      const bad: [string, string][] = [
        ['{not json', 'JSON'],
        [JSON.stringify({ nope: 1 }), 'entries'],
        [jwtConfig({ 'bad-name': { publicKey: rsa, permissions: null } }), 'letters'],
        [jwtConfig({ ERP: { publicKey: ec, permissions: null } }), 'RSA'],
        [jwtConfig({ ERP: { publicKey: 'garbage', permissions: null } }), 'PEM'],
        [jwtConfig({ ERP: { publicKey: rsa, permissions: 'USER_FETCH' } }), 'list'],
        [jwtConfig({ ERP: { publicKey: rsa, permissions: ['NO_SUCH'] } }), 'NO_SUCH'],
      ];
      for (const [value, why] of bad) {
        // By typedId (the option's name comes from the stored row) and by name.
        const byId = await call(h, '/update/ACO', { data: { typedId: opt.typedId, value } });
        expectError(byId, 400, -4, 'value');
        assert.match(byId.body.response.errors.value.errorMessage, new RegExp(why));
        expectError(
          await call(h, '/integrate/ACO', { data: { uniqueName: 'externalJWTConfiguration', value } }),
          400,
          -4,
          'value',
        );
      }
      expectError(
        await call(h, '/integrate/ACO', { data: { typedId: opt.typedId, value: '[]' } }),
        400,
        -4,
        'value',
      );
      const [fetched] = okData(await call(h, `/fetch/ACO/${opt.id}`));
      assert.equal(fetched.value, good);
      const [changed] = okData(
        await call(h, '/update/ACO/returnolddata', { data: { typedId: opt.typedId, value: jwtConfig({}) } }),
      );
      assert.equal(changed.oldValues.value, good);
      // Other options hold any text.
      okData(await call(h, '/add/ACO', { data: { uniqueName: 'someSetting', value: 'anything at all' } }));
      okData(await call(h, '/integrate/ACO', { data: { uniqueName: 'someSetting', value: 'more' } }));
      okData(await call(h, '/delete/ACO', { data: { typedId: opt.typedId } }));
    });

    test('externalJWTConfiguration is written only by an ADMIN on an unrestricted credential', async () => {
      // Whoever writes it can sign in as anyone: an ADMIN_WO_USER_MGMT made himself ADMIN so.
      const woUser = await newUser(h, ['ADMIN_WO_USER_MGMT']);
      const config = jwtConfig({ Mine: { publicKey: rsa, permissions: null } });
      const add = await call(
        h,
        '/add/ACO',
        { data: { uniqueName: 'externalJWTConfiguration', value: config } },
        woUser,
      );
      expectError(add, 403, -3);
      assert.match(add.body.response.data, /only an ADMIN, on a credential without restrictions/);
      expectError(
        await call(
          h,
          '/integrate/ACO',
          { data: { uniqueName: 'externalJWTConfiguration', value: config } },
          woUser,
        ),
        403,
        -3,
      );
      // Other options stay his to write.
      okData(await call(h, '/add/ACO', { data: { uniqueName: uniqueName('free'), value: 'v' } }, woUser));
      const [opt] = okData(
        await call(h, '/add/ACO', { data: { uniqueName: 'externalJWTConfiguration', value: jwtConfig({}) } }),
      );
      expectError(
        await call(h, '/update/ACO', { data: { typedId: opt.typedId, value: config } }, woUser),
        403,
        -3,
      );
      // An ADMIN's api token restricted to ADVANCEDCONFIG_EDIT neither.
      const [t] = okData(
        await call(h, '/accountmanager.getjsonwebtoken', { data: { permissions: ['ADVANCEDCONFIG_EDIT'] } }),
      );
      const restricted = await h.call('/update/ACO', {
        headers: { authorization: `Bearer ${t.token}` },
        body: { data: { typedId: opt.typedId, value: config } },
      });
      expectError(restricted, 403, -3);
      assert.match(restricted.body.response.data, /only an ADMIN, on a credential without restrictions/);
      // Nor deletes it (by any path); the ADMIN does.
      for (const [path, data] of [
        ['/delete/ACO', { typedId: opt.typedId }],
        ['/delete/ACO', { typedId: null, uniqueName: 'externalJWTConfiguration' }],
        ['/delete/ACO/batch/forcefilter', { uniqueName: 'externalJWTConfiguration' }],
      ] as const) {
        const r = await call(h, path, { data }, woUser);
        assert.ok([403, 400].includes(r.status), `${path}: ${r.text}`);
      }
      const [kept] = okData(await call(h, `/fetch/ACO/${opt.id}`));
      assert.equal(kept.value, jwtConfig({}));
      okData(await call(h, '/delete/ACO', { data: { typedId: opt.typedId } }));
    });

    test('ADVANCEDCONFIG_EDIT for reading and writing; isolation', async () => {
      const [opt] = okData(
        await call(h, '/add/ACO', { data: { uniqueName: uniqueName('opt'), value: 'v' } }),
      );
      await refused(h, '/fetch/ACO', {}, userAdmin);
      await refused(h, '/add/ACO', { data: { uniqueName: 'x', value: 'v' } }, userAdmin);
      await refused(h, '/update/ACO', { data: { typedId: opt.typedId, value: 'w' } }, userAdmin);
      await refused(h, '/integrate/ACO', { data: { typedId: opt.typedId, value: 'w' } }, userAdmin);
      expectError(await call(other, '/update/ACO', { data: { typedId: opt.typedId, value: 'w' } }), 404, -1);
      assert.equal(okData(await call(other, '/fetch/ACO', {})).length, 0);
    });
  });

  test('no answer of this suite ever carried a password hash', () => {
    assert.ok(answers.length > 100);
    for (const text of answers) assert.ok(!text.includes('scrypt'), text);
  });
});

describe('docs/permissions.md', () => {
  const doc = readFileSync(new URL('../../docs/permissions.md', import.meta.url), 'utf8');
  const section = (title: string): string => {
    const start = doc.indexOf(`## ${title}`);
    assert.ok(start >= 0, `section ${title}`);
    const end = doc.indexOf('\n## ', start + 1);
    return doc.slice(start, end < 0 ? undefined : end);
  };
  const rows = (text: string) =>
    [...text.matchAll(/^\|\s*`([A-Z_]+)`\s*\|([^|]*)\|/gm)].map((m) => ({ name: m[1]!, cell: m[2]! }));
  const ticked = (cell: string) => [...cell.matchAll(/`([A-Z_]+)`/g)].map((m) => m[1]!);

  test('documents every role with exactly the permissions it grants, and no other role', () => {
    const documented = rows(section('Roles'));
    assert.deepEqual(documented.map((r) => r.name).sort(), [...ROLE_NAMES].sort());
    for (const { name, cell } of documented) {
      const grants = ROLE_CATALOGUE[name as keyof typeof ROLE_CATALOGUE].grants;
      const expected = grants === '*' ? [...PERMISSIONS] : [...grants];
      // "all" lists every permission; "all except `A`, `B`" every permission but those.
      const listed = /^\s*all\b/.test(cell)
        ? PERMISSIONS.filter((p) => !ticked(cell).includes(p))
        : /^\s*none\b/.test(cell)
          ? []
          : ticked(cell);
      assert.deepEqual([...listed].sort(), expected.sort(), `role ${name}`);
    }
  });

  test('documents every permission, and no other', () => {
    assert.deepEqual(
      rows(section('Permissions'))
        .map((r) => r.name)
        .sort(),
      Object.keys(PERMISSION_CATALOGUE).sort(),
    );
  });
});
