-- A one-time token dies with the credential that asked for it: it keeps the user's token epoch at
-- issue (a password change ends it, like every other token of the user) and the api_tokens row of
-- the asking api token, OAuth grant or API version 2 pair (its revocation or expiry ends it).
-- Tokens issued before this migration carry no epoch and are refused (they live minutes at most).
ALTER TABLE one_time_tokens ADD COLUMN token_epoch integer, ADD COLUMN api_token_id bigint;
