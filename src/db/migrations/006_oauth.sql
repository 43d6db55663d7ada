-- OAuth 2.0 (authorization code flow). A grant is an api_tokens row of kind 'oauth': its access and
-- refresh tokens carry its id (`tid`), so revoking the row kills both. Authorization codes are kept
-- only as a sha256, live 10 minutes and are used once; `grant_id` names the grant a code produced,
-- so a replayed code can revoke it (RFC 6749 §4.1.2).

ALTER TABLE api_tokens
  ADD COLUMN kind text NOT NULL DEFAULT 'api',
  ADD COLUMN client_id text,
  ADD COLUMN scope text[];

CREATE TABLE oauth_codes (
  partition_id bigint NOT NULL REFERENCES partitions (id) ON DELETE CASCADE,
  code_hash text NOT NULL,
  client_id text NOT NULL,
  -- The redirect_uri of the authorization request; '' when the request omitted it (the registered
  -- one was used), so the token request need not repeat it (RFC 6749 §4.1.3).
  redirect_uri text NOT NULL,
  user_id bigint NOT NULL,
  scope text[],
  code_challenge text,
  code_challenge_method text,
  expires_at timestamptz NOT NULL,
  used_at timestamptz,
  grant_id bigint,
  PRIMARY KEY (partition_id, code_hash),
  FOREIGN KEY (partition_id, user_id) REFERENCES users (partition_id, id) ON DELETE CASCADE
);
