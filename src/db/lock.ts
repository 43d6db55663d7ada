// The embedded database's exclusive lock: PGlite does not lock its data directory and two processes
// on one directory corrupt it, so we take a lock file holding our pid. A lock left by a process that
// no longer runs (kill -9, power loss) is taken over; a live owner makes us refuse to start.

import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';

export class LockError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'LockError';
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    // EPERM: the process exists but belongs to someone else.
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Takes the lock on `dir` and answers its release function. */
export function acquireDirLock(dir: string): () => void {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'ratecard.lock');
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(file, 'wx', 0o600);
      writeSync(fd, `${process.pid}\n`);
      closeSync(fd);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        rmSync(file, { force: true });
      };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      const owner = Number.parseInt(readFileSync(file, 'utf8').trim(), 10);
      if (Number.isInteger(owner) && owner !== process.pid && isAlive(owner)) {
        throw new LockError(
          `The embedded database in ${dir} is in use by process ${owner}. ` +
            'Stop that process, or set DATA_DIR to another directory, or use DATABASE_URL.',
        );
      }
      // Stale lock (its process is gone): remove it and try once more.
      rmSync(file, { force: true });
    }
  }
  throw new LockError(`Could not lock ${dir}: another process is starting on it at the same time`);
}
