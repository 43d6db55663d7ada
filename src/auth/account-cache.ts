// The account rows of token authentication, kept in memory between requests where the database
// tells us when they change (PostgreSQL: the `rc_auth` feed of migration 022, see db/pg.ts). An
// entry is the answer the auth query gave at a feed generation; any change of partitions, users,
// roles, business roles, groups or api tokens bumps the generation and so retires every entry. A
// read that raced with a change is not stored (the generation moved while it ran). Entries also age
// out after `MAX_AGE_MS`, and nothing is cached while the feed is not live. A row that the clock
// alone can change (a live api token with an expiry: `expires_at > now()`) is kept no longer than
// the database said it has left, counted from before the read began, so a hit is never served at or
// past the expiry; the next read after that asks the database, which decides.

import type { ChangeFeed } from '../db/db.ts';

const MAX_AGE_MS = 60_000;
const MAX_ENTRIES = 10_000;

interface Entry<R> {
  readonly generation: number;
  /** `performance.now()` past which the entry is not served. */
  readonly until: number;
  readonly row: R;
}

export class AccountCache<R> {
  private readonly entries = new Map<string, Entry<R>>();
  private readonly feed: ChangeFeed | undefined;

  constructor(feed: ChangeFeed | undefined) {
    this.feed = feed;
  }

  /**
   * The cached row, or `load()`'s (stored when nothing changed while it ran). `lifetimeMs(row)`: how
   * long, from the moment the read began, the row stays true without a change in the database
   * (undefined: no limit but `MAX_AGE_MS`).
   */
  async get(
    key: string,
    load: () => Promise<R | undefined>,
    lifetimeMs?: (row: R) => number | undefined,
  ): Promise<R | undefined> {
    const feed = this.feed;
    if (!feed?.live) return load();
    const generation = feed.generation;
    const started = performance.now();
    const hit = this.entries.get(key);
    if (hit && hit.generation === generation && started < hit.until) return hit.row;
    const row = await load();
    if (row !== undefined && feed.live && feed.generation === generation) {
      const life = Math.min(MAX_AGE_MS, lifetimeMs?.(row) ?? MAX_AGE_MS);
      if (life > 0) {
        if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
        this.entries.set(key, { generation, until: started + life, row });
      } else {
        this.entries.delete(key);
      }
    }
    return row;
  }
}
