// Account services of the foundation: the login answer. The full account manager comes later.

import type { Principal } from '../../access/access.ts';
import type { Db } from '../../db/db.ts';
import { notFound } from '../../http/errors.ts';
import { RELEASE } from '../../release.ts';

export async function loginInfo(db: Db, principal: Principal) {
  const r = await db.query<{
    id: number;
    loginName: string;
    firstName: string | null;
    lastName: string | null;
    email: string | null;
    activated: boolean;
  }>(
    `SELECT id, login_name AS "loginName", first_name AS "firstName", last_name AS "lastName", email, activated
       FROM users WHERE partition_id = $1 AND id = $2`,
    [principal.partitionId, principal.userId],
  );
  const user = r.rows[0];
  if (!user) throw notFound('User');
  return {
    ...user,
    typedId: `${user.id}.U`,
    roles: principal.roles,
    extendedData: {
      Release: RELEASE,
      partition: principal.partition,
      permissions: [...principal.permissions].sort(),
    },
  };
}
