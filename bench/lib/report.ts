// One markdown report per database: a header (machine, settings, pinning), the table, the notes.

import { mkdirSync, writeFileSync } from 'node:fs';
import type { Line } from './workloads.ts';

export interface ReportHeader {
  readonly title: string;
  readonly facts: readonly string[];
}

function table(lines: readonly Line[]): string {
  const met = (l: Line) =>
    l.ratio === undefined || l.goal === undefined ? '—' : l.ratio >= l.goal ? 'yes' : '**no**';
  const rows = lines.map((l) => [
    l.workload,
    l.api,
    l.peer,
    l.ratio === undefined ? '—' : l.ratio.toFixed(2),
    l.goal === undefined ? '—' : `≥ ${l.goal}`,
    met(l),
  ]);
  return [
    '| workload | API | peer (physical limit) | ratio | goal | met? |',
    '| --- | --- | --- | --- | --- | --- |',
    ...rows.map((r) => `| ${r.join(' | ')} |`),
  ].join('\n');
}

export function renderReport(head: ReportHeader, lines: readonly Line[], notes: readonly string[]): string {
  return [
    `## ${head.title}`,
    '',
    ...head.facts.map((f) => `- ${f}`),
    '',
    table(lines),
    '',
    ...(notes.length > 0 ? ['Notes:', '', ...notes.map((n) => `- ${n}`), ''] : []),
  ].join('\n');
}

/** Writes `bench/results/<yyyy-mm-dd>-<name>.md`; answers its path. */
export function writeReport(name: string, text: string): string {
  const dir = new URL('../results/', import.meta.url);
  mkdirSync(dir, { recursive: true });
  const file = new URL(`${new Date().toISOString().slice(0, 10)}-${name}.md`, dir);
  writeFileSync(file, text);
  return file.pathname;
}
