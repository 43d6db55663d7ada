-- Every committed change of what authentication reads (partitions, users, their roles, business
-- roles, user groups, api tokens) notifies the channel rc_auth. Server processes on PostgreSQL
-- listen on it and drop the principals they keep in memory (src/auth/account-cache.ts): the
-- connection that commits receives its own notification with the COMMIT's answer, other processes
-- within milliseconds. Statement-level triggers: one notification per statement, not per row.

CREATE FUNCTION rc_notify_auth_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('rc_auth', TG_TABLE_NAME);
  RETURN NULL;
END
$$;

CREATE TRIGGER partitions_auth_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON partitions
  FOR EACH STATEMENT EXECUTE FUNCTION rc_notify_auth_changed();
CREATE TRIGGER users_auth_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON users
  FOR EACH STATEMENT EXECUTE FUNCTION rc_notify_auth_changed();
CREATE TRIGGER user_roles_auth_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON user_roles
  FOR EACH STATEMENT EXECUTE FUNCTION rc_notify_auth_changed();
CREATE TRIGGER user_business_roles_auth_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON user_business_roles
  FOR EACH STATEMENT EXECUTE FUNCTION rc_notify_auth_changed();
CREATE TRIGGER business_role_roles_auth_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON business_role_roles
  FOR EACH STATEMENT EXECUTE FUNCTION rc_notify_auth_changed();
CREATE TRIGGER business_role_groups_auth_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON business_role_groups
  FOR EACH STATEMENT EXECUTE FUNCTION rc_notify_auth_changed();
CREATE TRIGGER user_group_members_auth_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON user_group_members
  FOR EACH STATEMENT EXECUTE FUNCTION rc_notify_auth_changed();
CREATE TRIGGER user_groups_auth_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON user_groups
  FOR EACH STATEMENT EXECUTE FUNCTION rc_notify_auth_changed();
CREATE TRIGGER api_tokens_auth_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON api_tokens
  FOR EACH STATEMENT EXECUTE FUNCTION rc_notify_auth_changed();
