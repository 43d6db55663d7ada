// The account rows of token authentication, kept in memory between requests where the database
// tells us when they change (PostgreSQL: the `rc_auth` feed of migration 022, see db/pg.ts). An
// entry is the answer the auth query gave at a feed generation; any change of partitions, users,
// roles, business roles, groups or api tokens bumps the generation and so retires every entry. A
// read that raced with a change is not stored (the generation moved while it ran). Entries also age
// out after `MAX_AGE_MS`, and nothing is cached while the feed is not live. Rows that depend on the
// clock (api tokens: `expires_at > now()`) are not cached at all; the caller decides.

import type { ChangeFeed } from '../db/db.ts';

const MAX_AGE_MS = 60_000;
const MAX_ENTRIES = 10_000;

interface Entry<R> {
  readonly generation: number;
  readonly at: number;
  readonly row: R;
}

export class AccountCache<R> {
  private readonly entries = new Map<string, Entry<R>>();
  private readonly feed: ChangeFeed | undefined;

  constructor(feed: ChangeFeed | undefined) {
    this.feed = feed;
  }

  /** The cached row, or `load()`'s (stored when nothing changed while it ran). */
  async get(key: string, load: () => Promise<R | undefined>): Promise<R | undefined> {
    const feed = this.feed;
    if (!feed?.live) return load();
    const generation = feed.generation;
    const hit = this.entries.get(key);
    if (hit && hit.generation === generation && Date.now() - hit.at < MAX_AGE_MS) return hit.row;
    const row = await load();
    if (row !== undefined && feed.live && feed.generation === generation) {
      if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
      this.entries.set(key, { generation, at: Date.now(), row });
    }
    return row;
  }
}
