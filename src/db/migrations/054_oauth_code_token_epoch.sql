-- OAuth authorization codes keep the user's token epoch when they are issued: a password change (or
-- deactivation) between the code and its exchange ends the code too, as it ends the user's tokens.
-- Codes issued before this migration (at most CODE_TTL old) have none and are judged as before.
ALTER TABLE oauth_codes ADD COLUMN token_epoch integer;
