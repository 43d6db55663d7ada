// The password policy of every password a user or an administrator sets (add/U, copyuser,
// changepassword): long enough, bounded (scrypt input), and not a variant of the login name.
// The operator CLI applies the same policy (src/cli.ts); only the start-up bootstrap keeps its own
// 8-character rule.

import { validationError } from '../../http/errors.ts';

export const PASSWORD_MIN_LENGTH = 8;
export const PASSWORD_MAX_LENGTH = 1024;

/** The rule `password` breaks, or undefined. */
export function passwordProblem(password: unknown, loginName: unknown): string | undefined {
  if (typeof password !== 'string') return 'must be a string';
  // Characters, not UTF-16 code units: an emoji is one (two units); a text of more than twice the
  // maximum in units is too long whatever it holds.
  const length = password.length > 2 * PASSWORD_MAX_LENGTH ? password.length : [...password].length;
  if (length < PASSWORD_MIN_LENGTH) return `must have at least ${PASSWORD_MIN_LENGTH} characters`;
  if (length > PASSWORD_MAX_LENGTH) return `must have at most ${PASSWORD_MAX_LENGTH} characters`;
  // scrypt's HMAC pads a key with NUL bytes: `pw` and `pw\u0000` would be one password.
  if (password.includes('\u0000')) return 'must not contain NUL characters';
  if (typeof loginName === 'string' && loginName !== '') {
    if (password.toLowerCase().includes(loginName.toLowerCase())) return 'must not contain the login name';
  }
  return undefined;
}

/** Throws the -4 naming `field` when the password breaks the policy. */
export function checkPassword(password: unknown, loginName: unknown, field: string): string {
  const problem = passwordProblem(password, loginName);
  if (problem !== undefined) throw validationError(field, problem);
  return password as string;
}
