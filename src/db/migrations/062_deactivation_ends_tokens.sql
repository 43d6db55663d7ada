-- Deactivating a user ends every token of his (issue 4): a new token epoch, as a password change
-- gives (migration 048), and his api tokens and OAuth grants marked revoked. Refused while he is
-- deactivated, his tokens came back to life when he was activated again.
-- (Set by this BEFORE trigger, the epoch is no target of the UPDATE, so 048's trigger — UPDATE OF
-- token_epoch — does not fire: the revocation is done here too.)

CREATE FUNCTION rc_deactivation_ends_tokens() RETURNS trigger
  LANGUAGE plpgsql AS $$
BEGIN
  NEW.token_epoch := OLD.token_epoch + 1;
  UPDATE api_tokens SET revoked_at = now(), revoked_by = NEW.last_update_by
   WHERE partition_id = NEW.partition_id AND user_id = NEW.id AND revoked_at IS NULL;
  RETURN NEW;
END $$;

CREATE TRIGGER users_deactivation_ends_tokens BEFORE UPDATE OF activated ON users
  FOR EACH ROW WHEN (OLD.activated AND NOT NEW.activated)
  EXECUTE FUNCTION rc_deactivation_ends_tokens();
