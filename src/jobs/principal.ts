// The principal a job runs as: its creator, with the roles and user groups they hold when the job
// starts (read like auth/authenticate.ts reads them per request), narrowed by the restriction the
// creating request had (a token's permission list or OAuth scope, kept in the job's parameters).

import { permissionsOfRoles, type Principal } from '../access/access.ts';
import type { Queryable } from '../db/db.ts';
import { AppError } from '../http/errors.ts';
import type { JobRow } from './store.ts';

/** The parameter holding the creating request's restriction (null: none). */
export const RESTRICTION_PARAM = 'principalRestriction';

/** What a new job keeps of its creator's request, so it runs with no more rights than the request. */
export function restrictionOf(principal: Principal): string[] | null {
  return principal.restriction === null ? null : [...principal.restriction];
}

export async function principalForJob(q: Queryable, job: JobRow): Promise<Principal> {
  const r = await q.query<{ login: string; partition: string; roles: string[]; groups: string[] }>(
    `SELECT u.login_name AS login, p.name AS partition,
            coalesce((SELECT array_agg(x.role ORDER BY x.role) FROM (
                        SELECT r.role FROM user_roles r WHERE r.partition_id = u.partition_id AND r.user_id = u.id
                        UNION
                        SELECT brr.role FROM user_business_roles ub
                          JOIN business_role_roles brr
                            ON brr.partition_id = ub.partition_id AND brr.business_role_id = ub.business_role_id
                         WHERE ub.partition_id = u.partition_id AND ub.user_id = u.id) x), '{}') AS roles,
            coalesce((SELECT array_agg(g.unique_name ORDER BY g.unique_name) FROM user_groups g
                       WHERE g.partition_id = u.partition_id AND g.id IN (
                         SELECT m.group_id FROM user_group_members m
                          WHERE m.partition_id = u.partition_id AND m.user_id = u.id
                         UNION
                         SELECT brg.group_id FROM user_business_roles ub
                           JOIN business_role_groups brg
                             ON brg.partition_id = ub.partition_id AND brg.business_role_id = ub.business_role_id
                          WHERE ub.partition_id = u.partition_id AND ub.user_id = u.id)), '{}') AS groups
       FROM users u JOIN partitions p ON p.id = u.partition_id
      WHERE u.partition_id = $1 AND u.id = $2 AND u.activated`,
    [job.partition_id, job.created_by],
  );
  const row = r.rows[0];
  if (!row)
    throw new AppError('FORBIDDEN', 'The user who started the job no longer exists or is deactivated');
  const restriction = job.parameters[RESTRICTION_PARAM];
  return {
    partitionId: job.partition_id,
    partition: row.partition,
    userId: job.created_by!,
    loginName: row.login,
    roles: row.roles,
    groups: row.groups,
    admin: row.roles.includes('ADMIN'),
    permissions: permissionsOfRoles(row.roles),
    via: 'header',
    restriction: Array.isArray(restriction) ? new Set(restriction.map(String)) : null,
  };
}
