// postgres-date (the parser node-postgres gives timestamp and timestamptz text to) ships no types.
declare module 'postgres-date' {
  /** A Date; Infinity / -Infinity for 'infinity' / '-infinity'; null for text it cannot read. */
  function parseDate(text: string): Date | number | null;
  export = parseDate;
}
