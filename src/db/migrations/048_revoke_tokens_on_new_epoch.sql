-- A new token epoch (a password change) ends every token of the user: sessions by the epoch in
-- their claims, api tokens and OAuth grants by it too — and the token list now says so: their
-- `revoked_at` is set, so `/accountmanager.listjsonwebtokens` no longer shows dead tokens as live.

CREATE FUNCTION rc_revoke_tokens_on_new_epoch() RETURNS trigger
  LANGUAGE plpgsql AS $$
BEGIN
  UPDATE api_tokens SET revoked_at = now(), revoked_by = NEW.last_update_by
   WHERE partition_id = NEW.partition_id AND user_id = NEW.id AND revoked_at IS NULL;
  RETURN NULL;
END $$;

CREATE TRIGGER users_revoke_tokens_on_new_epoch AFTER UPDATE OF token_epoch ON users
  FOR EACH ROW WHEN (NEW.token_epoch IS DISTINCT FROM OLD.token_epoch)
  EXECUTE FUNCTION rc_revoke_tokens_on_new_epoch();
