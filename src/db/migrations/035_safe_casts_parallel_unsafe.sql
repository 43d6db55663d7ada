-- The safe casts of migration 002 catch a failed cast in an exception block, which starts a
-- subtransaction. PostgreSQL before 17 refuses subtransactions anywhere in a parallel operation,
-- in the workers and in the leader alike ("cannot start subtransactions during a parallel
-- operation"): declared PARALLEL SAFE, a filter or index expression using them failed as soon as
-- the planner chose a parallel plan (large tables). PARALLEL RESTRICTED is not enough (measured on
-- PostgreSQL 15: the leader of a parallel plan fails the same way), so they are PARALLEL UNSAFE: a
-- query using them, and an index build on them, runs without parallel workers; every other query
-- may use them again (db/pg.ts no longer turns parallel plans off per connection). The functions'
-- results do not change, so the expression indexes built on them stay valid.

ALTER FUNCTION rc_try_numeric(text) PARALLEL UNSAFE;
ALTER FUNCTION rc_try_date(text) PARALLEL UNSAFE;
ALTER FUNCTION rc_try_timestamptz(text) PARALLEL UNSAFE;
ALTER FUNCTION rc_try_boolean(text) PARALLEL UNSAFE;
