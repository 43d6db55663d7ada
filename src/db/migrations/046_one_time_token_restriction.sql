-- A one-time token keeps the permission restriction of the credential that asked for it (an api
-- token's permission list, an OAuth scope, an external system's list): NULL = none. Without it, a
-- restricted credential could mint a one-time token with all of its user's permissions.
ALTER TABLE one_time_tokens ADD COLUMN permissions text[];
